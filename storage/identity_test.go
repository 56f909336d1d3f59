package storage_test

import (
	"testing"

	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

// TestKeyIdentityIsTheExactString: two keys are the same key only when they
// are the same string. On MariaDB a PAD SPACE collation made "note " the same
// as "note"; each pair below must be two independent items on every backend.
func TestKeyIdentityIsTheExactString(t *testing.T) {
	pairs := []struct {
		name, a, b string
	}{
		{"one trailing space", "note", "note "},
		{"two trailing spaces", "memo", "memo  "},
		{"single letter and a space", "x", "x "},
		{"leading space", "lead", " lead"},
		{"tab is not a space", "tab", "tab\u00a0"},
		{"case", "City", "city"},
		{"upper case", "ABC", "abc"},
		{"NFC and NFD forms", "caf\u00e9", "cafe\u0301"},
		{"sharp s and ss", "stra\u00dfe", "strasse"},
		{"full-width letters", "abc", "\uff41\uff42\uff43"},
	}
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		s := w.env.Store
		for _, p := range pairs {
			t.Run(p.name, func(t *testing.T) {
				ra, err := s.Create(ctx, w.a, w.notes.ID, "list", p.a, js("A"))
				wantCode(t, err, "")
				_, ia := item(t, ra)
				// Creating the other key is not a duplicate.
				rb, err := s.Create(ctx, w.a, w.notes.ID, "list", p.b, js("B"))
				wantCode(t, err, "")
				_, ib := item(t, rb)
				// Each reads back its own value.
				for _, k := range []struct{ key, want string }{{p.a, `"A"`}, {p.b, `"B"`}} {
					res, err := s.Get(ctx, w.a, w.notes.ID, "list", k.key)
					wantCode(t, err, "")
					if _, it := item(t, res); it.Key != k.key || string(it.Value) != k.want {
						t.Fatalf("get %q = key %q value %s, want %s", k.key, it.Key, it.Value, k.want)
					}
				}
				// Updating one leaves the other as it was.
				_, err = s.Update(ctx, w.a, w.notes.ID, "list", p.b, js("B2"), ib.Revision)
				wantCode(t, err, "")
				res, err := s.Get(ctx, w.a, w.notes.ID, "list", p.a)
				wantCode(t, err, "")
				if _, it := item(t, res); string(it.Value) != `"A"` || it.Revision != ia.Revision {
					t.Fatalf("updating %q changed %q: %s rev %d", p.b, p.a, it.Value, it.Revision)
				}
				// Deleting one leaves the other.
				_, err = s.Delete(ctx, w.a, w.notes.ID, "list", p.a, ia.Revision)
				wantCode(t, err, "")
				_, err = s.Get(ctx, w.a, w.notes.ID, "list", p.a)
				wantCode(t, err, models.ErrNotFound)
				res, err = s.Get(ctx, w.a, w.notes.ID, "list", p.b)
				wantCode(t, err, "")
				if _, it := item(t, res); string(it.Value) != `"B2"` {
					t.Fatalf("deleting %q took %q with it: %s", p.a, p.b, it.Value)
				}
				// A key that was never created is not found through the other.
				_, err = s.Delete(ctx, w.a, w.notes.ID, "list", p.a, ia.Revision)
				wantCode(t, err, models.ErrNotFound)
				rb2, _ := s.Get(ctx, w.a, w.notes.ID, "list", p.b)
				_, ib2 := item(t, rb2)
				_, err = s.Delete(ctx, w.a, w.notes.ID, "list", p.b, ib2.Revision)
				wantCode(t, err, "")
			})
		}
		t.Run("ids and namespaces", func(t *testing.T) {
			// An Instance id with a trailing space, or in another case, is
			// another (unknown) Instance, never this one.
			for _, id := range []string{w.notes.ID + " ", w.notes.ID + "  "} {
				_, err := s.List(ctx, w.a, id, storage.ListQuery{Namespace: "notes"})
				wantCode(t, err, models.ErrPermissionDenied)
				_, err = s.Create(ctx, w.a, id, "notes", "k", js(1))
				wantCode(t, err, models.ErrPermissionDenied)
			}
			// A namespace with a trailing space is not the declared one.
			_, err := s.Create(ctx, w.a, w.notes.ID, "notes ", "k", js(1))
			wantCode(t, err, models.ErrPermissionDenied)
		})
	})
}
