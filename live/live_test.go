package live_test

import (
	"context"
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
