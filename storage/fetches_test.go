package storage_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

// TestFetchesPage: an Instance's fetch records page newest first; records
// that arrive while a client pages are not read and none is read twice; a
// record is the user's own only.
func TestFetchesPage(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		s := w.env.Store
		record := func(host string) {
			t.Helper()
			err := s.RecordFetches(ctx, []storage.FetchRecord{{UserID: w.alice.ID, InstallationID: w.instlNotes.ID, InstanceID: w.notes.ID,
				Capability: "notes.sync", Host: host, Method: "GET", Status: 200, Outcome: "ok", At: time.Now()}})
			if err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5 {
			record(fmt.Sprintf("h%d.example", i))
		}
		var read []string
		args := models.PageArgs{First: new(2)}
		for i := 0; ; i++ {
			p, err := s.Fetches(ctx, w.a, w.notes.ID, args)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range p.Nodes() {
				read = append(read, f.Host)
			}
			if !p.PageInfo.HasNextPage {
				break
			}
			record(fmt.Sprintf("new%d.example", i))
			args.After = p.PageInfo.EndCursor
		}
		if want := []string{"h4.example", "h3.example", "h2.example", "h1.example", "h0.example"}; !slices.Equal(read, want) {
			t.Fatalf("read %v, want %v", read, want)
		}
		p, err := s.Fetches(ctx, w.a, w.notes.ID, models.PageArgs{First: new(1)})
		if err != nil {
			t.Fatal(err)
		}
		newest := p.Nodes()[0]
		if got, err := s.Fetch(ctx, w.alice.ID, newest.ID); err != nil || got.Host != newest.Host {
			t.Fatalf("Fetch(%d) = %+v %v", newest.ID, got, err)
		}
		_, err = s.Fetch(ctx, w.bob.ID, newest.ID)
		wantCode(t, err, models.ErrPermissionDenied)
		_, err = s.Fetches(ctx, models.Caller{UserID: w.bob.ID}, w.notes.ID, models.PageArgs{})
		wantCode(t, err, models.ErrPermissionDenied)
		_, err = s.Fetches(ctx, w.a, w.notes.ID, models.PageArgs{After: new("x")})
		wantCode(t, err, models.ErrBadUserInput)
	})
}
