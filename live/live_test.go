package live_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/live"
	"pluginhost/models"
)

// TestCloseRacesSubscribe: the hub closing while subscriptions start and end
// leaves none open and none half-ended (run with -race).
func TestCloseRacesSubscribe(t *testing.T) {
	e := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	alice := e.User(t, "alice")
	inst := e.Instance(t, alice, e.Install(t, alice, fixture.Manifest("com.test.live", fixture.NS("n", 100))))
	hub := &live.Hub{Bus: e.Bus, Storage: e.Store, MaxPerUser: 1000}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, err := hub.Subscribe(ctx, alice, inst.ID, nil, func(*models.Error) {})
			if err != nil {
				return // refused after Close: fine
			}
			if i%2 == 0 {
				cancel()
			}
			for range ch {
			}
		}()
	}
	e.Store.Create(context.Background(), models.Caller{UserID: alice.ID}, inst.ID, "n", "k", models.JSON("1"))
	hub.Close()
	wg.Wait()
	if n := hub.Open(); n != 0 {
		t.Fatalf("%d subscriptions open after Close", n)
	}
	if n := e.Bus.Subscribers(); n != 0 {
		t.Fatalf("%d bus watchers left", n)
	}
}

// A development notice (pluginhost dev's report of a change that was not
// installed) reaches the Installation's subscribers with its message,
// between storage changes, without moving the revision they have; another
// user cannot send one, and an empty or oversized message is refused.
func TestDevelopmentNotice(t *testing.T) {
	e := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	ctx := context.Background()
	alice, bob := e.User(t, "alice"), e.User(t, "bob")
	instl := e.Install(t, alice, fixture.Manifest("com.test.dev", fixture.NS("n", 100)))
	inst := e.Instance(t, alice, instl)
	hub := &live.Hub{Bus: e.Bus, Storage: e.Store, MaxPerUser: 10}
	defer hub.Close()
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := hub.Subscribe(sub, alice, inst.ID, nil, func(*models.Error) {})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := <-ch
	if n, err := e.Life.ReportDevelopment(ctx, alice, instl.ID, " ui/main.json /view: unknown node type \"colum\" "); err != nil || n != 1 {
		t.Fatalf("told %d Instances: %v", n, err)
	}
	got := <-ch
	if got.Operation != models.OpDevelopment || got.Message == nil || *got.Message != `ui/main.json /view: unknown node type "colum"` ||
		got.StorageRevision != snapshot.StorageRevision || got.Generation != snapshot.Generation {
		t.Fatalf("delivered %+v (message %v), want the notice at revision %d", got, got.Message, snapshot.StorageRevision)
	}
	// The storage changes that follow are still delivered in order.
	if _, err := e.Store.Create(ctx, models.Caller{UserID: alice.ID}, inst.ID, "n", "k", models.JSON("1")); err != nil {
		t.Fatal(err)
	}
	if c := <-ch; c.Operation != models.OpCreate || c.StorageRevision != snapshot.StorageRevision+1 {
		t.Fatalf("then %+v", c)
	}
	for _, tt := range []struct {
		user    *models.User
		message string
		code    models.Code
	}{
		{bob, "broken", models.ErrPermissionDenied},
		{alice, " ", models.ErrBadUserInput},
		{alice, strings.Repeat("x", models.MaxDevelopmentMessage+1), models.ErrBadUserInput},
	} {
		if _, err := e.Life.ReportDevelopment(ctx, tt.user, instl.ID, tt.message); models.ErrorCode(err) != tt.code {
			t.Errorf("%s, %d bytes: %v, want %s", tt.user.Name, len(tt.message), err, tt.code)
		}
	}
	if n, err := e.Life.ReportDevelopment(ctx, alice, instl.ID, strings.Repeat("x", models.MaxDevelopmentMessage)); err != nil || n != 1 {
		t.Fatalf("a message at the limit: %d %v", n, err)
	}
}
