package storage_test

import (
	"testing"

	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

// TestAuditOfAnotherUsersInstanceIsDenied: storageAudit of one Instance
// answers PLUGIN_STORAGE_PERMISSION_DENIED for another user's Instance and for
// an unknown id, never an empty page.
func TestAuditOfAnotherUsersInstanceIsDenied(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		s := w.env.Store
		tests := []struct {
			name, instance string
			code           models.Code
		}{
			{"own Instance", w.notes.ID, ""},
			{"all own Instances", "", ""},
			{"another user's Instance", w.bobNotes.ID, models.ErrPermissionDenied},
			{"unknown id", "inst_doesnotexist", models.ErrPermissionDenied},
			{"own id with a trailing space", w.notes.ID + " ", models.ErrPermissionDenied},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.Audit(ctx, w.alice.ID, storage.AuditQuery{InstanceID: tt.instance})
				wantCode(t, err, tt.code)
			})
		}
		// Disabling the Instance keeps its trail readable by its owner.
		if _, err := w.env.Life.SetInstanceEnabled(ctx, w.alice, w.notes2.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := s.Audit(ctx, w.alice.ID, storage.AuditQuery{InstanceID: w.notes2.ID})
		wantCode(t, err, "")
	})
}
