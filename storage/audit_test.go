package storage_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

// TestAuditRecordsAreBounded: every recorded field of a refused attempt is
// valid UTF-8 of at most its bound in characters, cut between characters and
// marked with "…" when longer; the refusal is recorded on every backend
// however long or malformed the input.
func TestAuditRecordsAreBounded(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		instl := e.Install(t, alice, capManifest())
		inst := e.Instance(t, alice, instl)
		refused := models.Errorf(models.ErrInvalid, "refused")
		ai := models.Caller{UserID: alice.ID, AI: true, Actor: models.ActorAI, Capability: models.ToolCreate}

		latest := func(t *testing.T) storage.AuditEntry {
			t.Helper()
			trail, err := e.Store.Audit(ctx, alice.ID, storage.AuditQuery{Page: models.PageArgs{First: new(1)}})
			entries := trail.Nodes()
			if err != nil || len(entries) != 1 {
				t.Fatalf("audit: %v %v", entries, err)
			}
			return entries[0]
		}
		n := func(s string, k int) string { return strings.Repeat(s, k) }
		tests := []struct {
			name              string
			instance, ns, key string
			field             func(storage.AuditEntry) string
			want              string
		}{
			{"key at the limit", inst.ID, "notes", n("k", storage.MaxAuditKeyChars), keyOf, n("k", 80)},
			{"key one past the limit", inst.ID, "notes", n("k", storage.MaxAuditKeyChars+1), keyOf, n("k", 79) + "…"},
			{"multi-byte key at the limit", inst.ID, "notes", n("é", 80), keyOf, n("é", 80)},
			{"multi-byte key one past", inst.ID, "notes", n("é", 81), keyOf, n("é", 79) + "…"},
			{"four-byte key one past", inst.ID, "notes", n("😀", 81), keyOf, n("😀", 79) + "…"},
			{"5 MB key", inst.ID, "notes", n("ж", 5<<20/2), keyOf, n("ж", 79) + "…"},
			{"invalid UTF-8 key", inst.ID, "notes", "a\xffb\xc3", keyOf, "a\uFFFDb\uFFFD"},
			{"control and bidi characters", inst.ID, "notes", "a\nb\u202ec\u200bd", keyOf, "a\uFFFDb\uFFFDc\uFFFDd"},
			{"namespace at the limit", inst.ID, n("n", 64), "k", nsOf, n("n", 64)},
			{"namespace one past the limit", inst.ID, n("ñ", 65), "k", nsOf, n("ñ", 63) + "…"},
			{"instance id at the limit", n("i", 40), "", "", instOf, n("i", 40)},
			{"instance id one past the limit", n("i", 41), "", "", instOf, n("i", 39) + "…"},
			{"5 MB instance id", n("ü", 5<<20/2), "", "", instOf, n("ü", 39) + "…"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e.Store.RecordRefusal(ai, tt.instance, tt.ns, tt.key, refused)
				got := latest(t)
				if f := tt.field(got); f != tt.want {
					t.Fatalf("recorded %q (%d characters), want %q", trim(f), utf8.RuneCountInString(f), trim(tt.want))
				}
				if got.Outcome != string(models.ErrInvalid) {
					t.Fatalf("outcome %q", got.Outcome)
				}
			})
		}
		t.Run("refused host actions with a 5 MB instance id", func(t *testing.T) {
			host := models.Caller{UserID: alice.ID, Generation: instl.Generation, Actor: models.ActorHost, Capability: n("c", 1000)}
			_, err := e.Store.ApplyCapabilityResult(ctx, host, n("x", 5<<20), "notes.sync", result(set("notes", "k", 1)))
			wantCode(t, err, models.ErrPermissionDenied)
			got := latest(t)
			if got.InstanceID != n("x", 39)+"…" || got.Capability != n("c", 127)+"…" || got.Outcome != string(models.ErrPermissionDenied) {
				t.Fatalf("recorded instance %q capability %q outcome %s", trim(got.InstanceID), trim(got.Capability), got.Outcome)
			}
		})
	})
}

func keyOf(e storage.AuditEntry) string  { return e.Key }
func nsOf(e storage.AuditEntry) string   { return e.Namespace }
func instOf(e storage.AuditEntry) string { return e.InstanceID }

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
