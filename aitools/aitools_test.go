package aitools_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	"pluginhost/aitools"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

var ctx = context.Background()

func js(v any) models.JSON { b, _ := json.Marshal(v); return b }

func manifest(version string) map[string]any {
	m := fixture.Manifest("com.test.ai",
		map[string]any{"id": "notes", "max_bytes": 65536, "ai_access": "read_write"},
		map[string]any{"id": "prefs", "max_bytes": 4096, "ai_access": "read"},
		map[string]any{"id": "private", "max_bytes": 4096, "ai_access": "none"},
		map[string]any{"id": "hidden", "max_bytes": 4096},
	)
	m["version"] = version
	return m
}

// handle returns the handle of a tool of an Instance from aiTools.
func handle(t *testing.T, e *fixture.Env, u *models.User, instanceID, tool string) string {
	t.Helper()
	tools, err := e.AI.Tools(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.InstanceID == instanceID && tl.Capability == tool {
			return tl.Handle
		}
	}
	t.Fatalf("no %s tool for %s", tool, instanceID)
	return ""
}

func wantCode(t *testing.T, err error, code models.Code) {
	t.Helper()
	if models.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestAIAccess(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice, bob := e.User(t, "alice"), e.User(t, "bob")
		instl, err := e.Life.Install(ctx, alice, e.Package(t, manifest("1.0.0"), nil))
		if err != nil {
			t.Fatal(err)
		}
		a1, a2 := e.Instance(t, alice, instl), e.Instance(t, alice, instl)
		bobInstl, _ := e.Life.Install(ctx, bob, e.Package(t, manifest("1.0.0"), nil))
		b1 := e.Instance(t, bob, bobInstl)

		// Without consent the AI has no tools, and cannot be granted what the
		// manifest does not request.
		if tools, _ := e.AI.Tools(ctx, alice); len(tools) != 0 {
			t.Fatalf("tools before consent: %d", len(tools))
		}
		noAI, _ := e.Life.Install(ctx, alice, e.Package(t, fixture.Manifest("com.test.noai", fixture.NS("n", 10)), nil))
		_, err = e.Life.SetAIConsent(ctx, alice, noAI.ID, true)
		wantCode(t, err, models.ErrForbidden)
		for _, u := range []*models.User{alice, bob} {
			id := instl.ID
			if u == bob {
				id = bobInstl.ID
			}
			if _, err := e.Life.SetAIConsent(ctx, u, id, true); err != nil {
				t.Fatal(err)
			}
		}
		tools, err := e.AI.Tools(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		// Two Instances x five tools; reads see notes and prefs, writes notes only.
		if len(tools) != 10 {
			t.Fatalf("%d tools, want 10", len(tools))
		}
		for _, tl := range tools {
			var ids []string
			for _, n := range tl.Namespaces {
				ids = append(ids, n.ID+":"+n.Access)
			}
			want := "notes:read_write prefs:read"
			if models.IsMutatingTool(tl.Capability) {
				want = "notes:read_write"
			}
			if strings.Join(ids, " ") != want {
				t.Fatalf("%s namespaces = %v, want %s", tl.Capability, ids, want)
			}
		}
		create := handle(t, e, alice, a1.ID, models.ToolCreate)
		if _, err := e.AI.Invoke(ctx, alice, create, js(map[string]any{"namespace": "notes", "key": "k", "value": "v"})); err != nil {
			t.Fatalf("AI create: %v", err)
		}
		e.Store.Create(ctx, models.Caller{UserID: alice.ID}, a1.ID, "prefs", "theme", js("dark"))
		e.Store.Create(ctx, models.Caller{UserID: alice.ID}, a1.ID, "private", "p", js(1))
		get := handle(t, e, alice, a1.ID, models.ToolGet)
		update := handle(t, e, alice, a1.ID, models.ToolUpdate)
		del := handle(t, e, alice, a1.ID, models.ToolDelete)
		bobGet := handle(t, e, bob, b1.ID, models.ToolGet)

		for _, tc := range []struct {
			name   string
			user   *models.User
			handle string
			args   map[string]any
			code   models.Code
		}{
			{"read a read namespace", alice, get, map[string]any{"namespace": "prefs", "key": "theme"}, ""},
			{"write a read namespace", alice, update, map[string]any{"namespace": "prefs", "key": "theme", "value": "x", "revision": 1}, models.ErrPermissionDenied},
			{"delete in a read namespace", alice, del, map[string]any{"namespace": "prefs", "key": "theme", "revision": 1}, models.ErrPermissionDenied},
			{"ai_access none", alice, get, map[string]any{"namespace": "private", "key": "p"}, models.ErrPermissionDenied},
			{"ai_access omitted is none", alice, get, map[string]any{"namespace": "hidden", "key": "p"}, models.ErrPermissionDenied},
			{"undeclared namespace", alice, get, map[string]any{"namespace": "secret_stuff", "key": "p"}, models.ErrPermissionDenied},
			{"forged handle", alice, "aih1_" + strings.Repeat("A", 60), map[string]any{"key": "k"}, models.ErrPermissionDenied},
			{"tampered handle", alice, get[:len(get)-2] + flip(get[len(get)-2:]), map[string]any{"key": "k"}, models.ErrPermissionDenied},
			{"not a handle", alice, a1.ID, map[string]any{"key": "k"}, models.ErrPermissionDenied},
			{"another user's handle", alice, bobGet, map[string]any{"namespace": "notes", "key": "k"}, models.ErrPermissionDenied},
			{"scope smuggled: instance_id", alice, get, map[string]any{"namespace": "notes", "key": "k", "instance_id": b1.ID}, models.ErrInvalid},
			{"scope smuggled: installation_id", alice, get, map[string]any{"key": "k", "installation_id": bobInstl.ID}, models.ErrInvalid},
			{"scope smuggled: user_id", alice, get, map[string]any{"key": "k", "user_id": bob.ID}, models.ErrInvalid},
			{"scope smuggled: instanceId", alice, get, map[string]any{"key": "k", "instanceId": b1.ID}, models.ErrInvalid},
			{"scope smuggled: handle", alice, get, map[string]any{"key": "k", "handle": bobGet}, models.ErrInvalid},
			{"code is not offered", alice, get, map[string]any{"key": "k", "code": "rm -rf /"}, models.ErrInvalid},
			{"sql is not offered", alice, get, map[string]any{"key": "k", "sql": "DROP TABLE users"}, models.ErrInvalid},
			{"file paths are not offered", alice, get, map[string]any{"key": "k", "path": "/etc/passwd"}, models.ErrInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.AI.Invoke(ctx, tc.user, tc.handle, js(tc.args))
				if tc.code == "" {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				wantCode(t, err, tc.code)
			})
		}
		t.Run("credential keys in every spelling family", func(t *testing.T) {
			for _, key := range []string{"password", "db_password", "userPassword", "passwd", "secret", "clientSecret",
				"CLIENT_SECRET", "token", "accessToken", "access-token", "refresh_token", "RefreshToken", "api_key", "apiKey",
				"API-KEY", "x-api-key", "private_key", "privateKey", "credentials", "aws.credentials"} {
				_, err := e.AI.Invoke(ctx, alice, create, js(map[string]any{"namespace": "notes", "key": key, "value": 1}))
				if models.ErrorCode(err) != models.ErrInvalid {
					t.Errorf("key %q: %v", key, err)
				}
			}
			for _, key := range []string{"tokenizer", "secretary", "keyboard"} {
				if _, err := e.AI.Invoke(ctx, alice, create, js(map[string]any{"namespace": "notes", "key": key, "value": 1})); err != nil {
					t.Errorf("ordinary key %q refused: %v", key, err)
				}
			}
		})
		t.Run("a handle is bound to its tool and Instance", func(t *testing.T) {
			// The get handle cannot create: the tool comes from the handle.
			_, err := e.AI.Invoke(ctx, alice, get, js(map[string]any{"namespace": "notes", "key": "k2", "value": 1}))
			wantCode(t, err, models.ErrInvalid)
			// a1's handle never reaches a2's data.
			e.Store.Create(ctx, models.Caller{UserID: alice.ID}, a2.ID, "notes", "only-a2", js(1))
			_, err = e.AI.Invoke(ctx, alice, get, js(map[string]any{"namespace": "notes", "key": "only-a2"}))
			wantCode(t, err, models.ErrNotFound)
			// A handle from another host secret does not open here.
			other := make([]byte, 32)
			rand.Read(other)
			h, _ := aitools.NewHandles(other)
			_, err = e.AI.Invoke(ctx, alice, h.Issue(a1.ID, models.ToolGet, instl.Generation), js(map[string]any{"namespace": "notes", "key": "k"}))
			wantCode(t, err, models.ErrPermissionDenied)
		})
		t.Run("disabled Instance", func(t *testing.T) {
			a2get := handle(t, e, alice, a2.ID, models.ToolGet)
			e.Life.SetInstanceEnabled(ctx, alice, a2.ID, false)
			for _, tl := range must(e.AI.Tools(ctx, alice)) {
				if tl.InstanceID == a2.ID {
					t.Fatal("a disabled Instance is offered to the AI")
				}
			}
			_, err := e.AI.Invoke(ctx, alice, a2get, js(map[string]any{"namespace": "notes", "key": "only-a2"}))
			wantCode(t, err, models.ErrPermissionDenied)
			// A handle minted for the disabled Instance is refused as well.
			minted := e.AI.Handles.Issue(a2.ID, models.ToolCreate, instl.Generation)
			_, err = e.AI.Invoke(ctx, alice, minted, js(map[string]any{"namespace": "notes", "key": "new", "value": 1}))
			wantCode(t, err, models.ErrPermissionDenied)
			e.Life.SetInstanceEnabled(ctx, alice, a2.ID, true)
		})
		t.Run("consent revoked", func(t *testing.T) {
			e.Life.SetAIConsent(ctx, alice, instl.ID, false)
			_, err := e.AI.Invoke(ctx, alice, get, js(map[string]any{"namespace": "notes", "key": "k"}))
			wantCode(t, err, models.ErrPermissionDenied)
			if tools := must(e.AI.Tools(ctx, alice)); len(tools) != 0 {
				t.Fatalf("%d tools after revoking consent", len(tools))
			}
			e.Life.SetAIConsent(ctx, alice, instl.ID, true)
		})
		t.Run("stale generation after an update", func(t *testing.T) {
			if _, err := e.Life.Update(ctx, alice, instl.ID, e.Package(t, manifest("1.1.0"), nil)); err != nil {
				t.Fatal(err)
			}
			_, err := e.AI.Invoke(ctx, alice, get, js(map[string]any{"namespace": "notes", "key": "k"}))
			wantCode(t, err, models.ErrConflict)
			fresh := handle(t, e, alice, a1.ID, models.ToolGet)
			if fresh == get {
				t.Fatal("the handle did not change with the generation")
			}
			if _, err := e.AI.Invoke(ctx, alice, fresh, js(map[string]any{"namespace": "notes", "key": "k"})); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("audit trail", func(t *testing.T) {
			trail, err := e.Store.Audit(ctx, alice.ID, storage.AuditQuery{Page: models.PageArgs{First: new(100)}})
			entries := trail.Nodes()
			if err != nil {
				t.Fatal(err)
			}
			var ok, refused int
			for _, en := range entries {
				if en.Actor != models.ActorAI {
					t.Fatalf("actor %q", en.Actor)
				}
				if en.Outcome == storage.OutcomeOK {
					ok++
				} else {
					refused++
				}
			}
			first := entries[len(entries)-1] // oldest: the first create
			if first.Operation != "create" || first.Key != "k" || first.Namespace != "notes" || first.RevisionAfter != 1 ||
				first.ValueBytes != 3 || first.Outcome != "ok" || first.InstanceID != a1.ID || first.Capability != models.ToolCreate {
				t.Fatalf("first entry = %+v", first)
			}
			if ok != 4 || refused < 25 {
				t.Fatalf("%d changes and %d refusals recorded", ok, refused)
			}
			// Bob sees only his own trail.
			bobTrail, _ := e.Store.Audit(ctx, bob.ID, storage.AuditQuery{})
			bobs := bobTrail.Nodes()
			for _, en := range bobs {
				if en.InstanceID == a1.ID {
					t.Fatal("bob sees alice's audit trail")
				}
			}
			// Values are never recorded: no column can hold one.
			rows, _ := e.DB.Read.Raw("SELECT * FROM storage_audit").Rows()
			cols, _ := rows.Columns()
			rows.Close()
			for _, c := range cols {
				if strings.Contains(c, "value") && c != "value_bytes" {
					t.Fatalf("audit column %s", c)
				}
			}
		})
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// flip changes the last characters of a handle.
func flip(s string) string {
	if s == "AA" {
		return "BB"
	}
	return "AA"
}
