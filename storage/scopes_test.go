package storage_test

import (
	"testing"

	"pluginhost/database"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// TestWritesSeeOtherChanges: the SQLite writer keeps the Instances it read
// from one write to the next. Whatever else changes an Instance or its
// Installation between two writes, through the host's own services (on the
// same write connection) or through another connection (another process),
// the next write is decided on the change.
func TestWritesSeeOtherChanges(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		other, err := database.Open(b.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		manifest := fixture.Manifest("com.test.seen", map[string]any{"id": "n", "max_bytes": 65536, "ai_access": "read_write"})
		exec := func(t *testing.T, query string, args ...any) {
			if err := other.Write.Exec(query, args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		for i, tc := range []struct {
			name   string
			ai     bool // the caller is the AI (the consent is granted first)
			change func(t *testing.T, u *models.User, instl *models.Installation, inst *models.Instance)
			want   models.Code
		}{
			{name: "disabled by the host", want: models.ErrPermissionDenied,
				change: func(t *testing.T, u *models.User, _ *models.Installation, inst *models.Instance) {
					if _, err := e.Life.SetInstanceEnabled(ctx, u, inst.ID, false); err != nil {
						t.Fatal(err)
					}
				}},
			{name: "uninstalled by the host", want: models.ErrPermissionDenied,
				change: func(t *testing.T, u *models.User, instl *models.Installation, _ *models.Instance) {
					if err := e.Life.Uninstall(ctx, u, instl.ID); err != nil {
						t.Fatal(err)
					}
				}},
			{name: "AI consent withdrawn by the host", ai: true, want: models.ErrPermissionDenied,
				change: func(t *testing.T, u *models.User, instl *models.Installation, _ *models.Instance) {
					if _, err := e.Life.SetAIConsent(ctx, u, instl.ID, false); err != nil {
						t.Fatal(err)
					}
				}},
			{name: "disabled by another connection", want: models.ErrPermissionDenied,
				change: func(t *testing.T, _ *models.User, _ *models.Installation, inst *models.Instance) {
					exec(t, "UPDATE instances SET enabled = ? WHERE id = ?", false, inst.ID)
				}},
			{name: "Installation filled by another connection", want: models.ErrQuotaExceeded,
				change: func(t *testing.T, _ *models.User, instl *models.Installation, _ *models.Instance) {
					exec(t, "UPDATE installations SET used_bytes = ? WHERE id = ?", models.MaxInstallationBytes-4, instl.ID)
				}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				u := e.User(t, "user"+string(rune('a'+i)))
				instl := e.Install(t, u, manifest)
				inst := e.Instance(t, u, instl)
				c := models.Caller{UserID: u.ID, AI: tc.ai}
				if tc.ai {
					if _, err := e.Life.SetAIConsent(ctx, u, instl.ID, true); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := e.Store.Create(ctx, c, inst.ID, "n", "k", js(1)); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Store.Update(ctx, c, inst.ID, "n", "k", js(2), 1); err != nil {
					t.Fatal(err)
				}
				tc.change(t, u, instl, inst)
				_, err := e.Store.Update(ctx, c, inst.ID, "n", "k", js("a longer value than before"), 2)
				wantCode(t, err, tc.want)
			})
		}

		// The writer keeps the items it wrote too: an item changed since,
		// by anything else, is decided on as it is now.
		for i, tc := range []struct {
			name   string
			change func(t *testing.T, c models.Caller, inst *models.Instance)
			want   models.Code
		}{
			{name: "item moved on by another connection", want: models.ErrConflict,
				change: func(t *testing.T, _ models.Caller, inst *models.Instance) {
					exec(t, "UPDATE storage_items SET revision = revision + 5 WHERE instance_id = ?", inst.ID)
				}},
			{name: "item deleted by another connection", want: models.ErrNotFound,
				change: func(t *testing.T, _ models.Caller, inst *models.Instance) {
					exec(t, "DELETE FROM storage_items WHERE instance_id = ?", inst.ID)
				}},
			{name: "items reset by the host", want: models.ErrNotFound,
				change: func(t *testing.T, c models.Caller, inst *models.Instance) {
					if _, err := e.Store.Reset(ctx, c, inst.ID); err != nil {
						t.Fatal(err)
					}
				}},
			{name: "item deleted and created again by the host", want: models.ErrConflict,
				change: func(t *testing.T, c models.Caller, inst *models.Instance) {
					if _, err := e.Store.Delete(ctx, c, inst.ID, "n", "k", 2); err != nil {
						t.Fatal(err)
					}
					if _, err := e.Store.Create(ctx, c, inst.ID, "n", "k", js(3)); err != nil {
						t.Fatal(err)
					}
				}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				u := e.User(t, "items"+string(rune('a'+i)))
				inst := e.Instance(t, u, e.Install(t, u, manifest))
				c := models.Caller{UserID: u.ID}
				if _, err := e.Store.Create(ctx, c, inst.ID, "n", "k", js(1)); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Store.Update(ctx, c, inst.ID, "n", "k", js(2), 1); err != nil {
					t.Fatal(err)
				}
				tc.change(t, c, inst)
				_, err := e.Store.Update(ctx, c, inst.ID, "n", "k", js(4), 2)
				wantCode(t, err, tc.want)
			})
		}

		t.Run("storage revision moved by another connection", func(t *testing.T) {
			u := e.User(t, "revisions")
			inst := e.Instance(t, u, e.Install(t, u, manifest))
			c := models.Caller{UserID: u.ID}
			if _, err := e.Store.Create(ctx, c, inst.ID, "n", "k", js(1)); err != nil {
				t.Fatal(err)
			}
			sub := e.Changes(t, u, inst.ID)
			exec(t, "UPDATE instances SET storage_revision = storage_revision + 10 WHERE id = ?", inst.ID)
			if _, err := e.Store.Update(ctx, c, inst.ID, "n", "k", js(2), 1); err != nil {
				t.Fatal(err)
			}
			ch, ok := sub.Next(ctx)
			if !ok {
				t.Fatal("no change published")
			}
			var stored int64
			if err := e.DB.Read.Raw("SELECT storage_revision FROM instances WHERE id = ?", inst.ID).Row().Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if ch.StorageRevision != 12 || stored != 12 {
				t.Fatalf("the update was published at storage revision %d and stored at %d, want 12 (1 + 10 + 1)", ch.StorageRevision, stored)
			}
		})
	})
}
