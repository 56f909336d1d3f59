package storage_test

import (
	"encoding/json"
	"testing"

	"pluginhost/access"
	"pluginhost/internal/testenv"
	"pluginhost/storage"
)

// TestRunsReadEveryChange: a run's contents (ContentsOf) are kept between
// runs, and every change of the Instance's items shows in the next run's,
// whichever replica of the fleet made it: here another service on the same
// database, which this one hears nothing from.
func TestRunsReadEveryChange(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		replica := w.replica(t)
		run := func() *storage.Snapshot {
			t.Helper()
			target, err := w.env.Store.Gate.Open(ctx, w.a, w.notes.ID, access.Use)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := w.env.Store.ContentsOf(ctx, w.a, target)
			if err != nil {
				t.Fatal(err)
			}
			return snap
		}
		// read is the Instance's contents read from the database now,
		// without the items' times, as JSON.
		read := func() string {
			t.Helper()
			snap, err := replica.Snapshot(ctx, w.a, w.notes.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range snap.Namespaces {
				for i := range ns.Items {
					ns.Items[i].CreatedAt, ns.Items[i].UpdatedAt = "", ""
				}
			}
			out, _ := json.Marshal(snap)
			return string(out)
		}
		revision := func(ns, key string) int64 {
			t.Helper()
			it, err := replica.Get(ctx, w.a, w.notes.ID, ns, key)
			if err != nil {
				t.Fatal(err)
			}
			_, got := item(t, it)
			return got.Revision
		}
		steps := []struct {
			name   string
			change func() error
		}{
			{"no items", nil},
			{"created", func() error { _, err := replica.Create(ctx, w.a, w.notes.ID, "notes", "a", js("first")); return err }},
			{"another created", func() error { _, err := replica.Create(ctx, w.a, w.notes.ID, "list", "b", js(2)); return err }},
			{"updated", func() error {
				_, err := replica.Update(ctx, w.a, w.notes.ID, "notes", "a", js("second"), revision("notes", "a"))
				return err
			}},
			{"deleted", func() error {
				_, err := replica.Delete(ctx, w.a, w.notes.ID, "list", "b", revision("list", "b"))
				return err
			}},
			{"another Instance changed", func() error { _, err := replica.Create(ctx, w.a, w.notes2.ID, "notes", "c", js(3)); return err }},
			{"reset", func() error { _, err := replica.Reset(ctx, w.a, w.notes.ID); return err }},
		}
		var prev *storage.Snapshot
		for _, step := range steps {
			if step.change != nil {
				if err := step.change(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
			}
			first := run()
			if step.name == "another Instance changed" && first != prev {
				t.Errorf("%s: this Instance's kept contents were read again", step.name)
			}
			prev = first
			got, _ := json.Marshal(first)
			if want := read(); string(got) != want {
				t.Fatalf("%s: a run reads\n%s\nthe database holds\n%s", step.name, got, want)
			}
			if again := run(); again != first {
				t.Errorf("%s: a second run at the same storage revision read the contents again", step.name)
			}
		}
	})
}
