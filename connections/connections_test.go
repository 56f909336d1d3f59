package connections_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"pluginhost/access"
	"pluginhost/connections"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

func keyManifest() map[string]any {
	m := fixture.Manifest("com.example.keys", fixture.NS("notes", 1024))
	m["permissions"] = []any{"storage", "network"}
	m["network"] = map[string]any{"hosts": []any{"api.example.com"}}
	m["connections"] = []any{
		map[string]any{"id": "svc", "label": "Service", "kind": "api_key", "hosts": []any{"api.example.com"},
			"api_key": map[string]any{"header": "Authorization", "format": "Token {key}"}},
		map[string]any{"id": "gh", "label": "GitHub", "kind": "oauth2", "hosts": []any{"api.example.com"},
			"oauth2": map[string]any{"authorization_url": "https://example.com/authorize", "token_url": "https://example.com/token"}},
	}
	return m
}

// API keys: the rules of a key, the status users see (never the key), the
// credential a fetch carries, and the security lifecycle: kept but unused
// while the Instance is disabled, deleted on disconnect, with the Instance,
// and on uninstall, on both databases.
func TestAPIKeys(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		env := fixture.New(t, b)
		ctx := context.Background()
		alice, bob := env.User(t, "alice"), env.User(t, "bob")
		installed := env.Install(t, alice, keyManifest())
		inst := env.Instance(t, alice, installed)
		other := env.Instance(t, alice, installed)
		conns := env.Server.Connections
		a := models.Caller{UserID: alice.ID}

		for _, tt := range []struct {
			name, conn, key string
			caller          models.Caller
			code            models.Code
			says            string
		}{
			{"empty", "svc", "  ", a, models.ErrInvalid, "empty"},
			{"a line break", "svc", "abc\r\nX-Evil: 1", a, models.ErrInvalid, "control character"},
			{"past the limit", "svc", strings.Repeat("k", connections.MaxAPIKeyBytes+1), a, models.ErrInvalid, "4097 bytes"},
			{"at the limit", "svc", strings.Repeat("k", connections.MaxAPIKeyBytes), a, "", ""},
			{"an OAuth connection", "gh", "k", a, models.ErrInvalid, "OAuth"},
			{"undeclared", "nope", "k", a, models.ErrInvalid, "declares no connection"},
			{"another user's Instance", "svc", "k", models.Caller{UserID: bob.ID}, models.ErrPermissionDenied, ""},
		} {
			_, err := conns.ConnectAPIKey(ctx, tt.caller, inst.ID, tt.conn, tt.key)
			if models.ErrorCode(err) != tt.code || tt.code != "" && !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s: %v, want %s saying %q", tt.name, err, tt.code, tt.says)
			}
		}
		if _, err := conns.ConnectAPIKey(ctx, a, inst.ID, "svc", "sk-live-42"); err != nil {
			t.Fatal(err)
		}
		list, err := conns.Of(ctx, a, inst.ID)
		if err != nil || len(list) != 2 || !list[0].Connected || list[1].Connected {
			t.Fatalf("status: %+v %v", list, err)
		}
		if others, _ := conns.Of(ctx, a, other.ID); others[0].Connected {
			t.Fatal("a key of one Instance shows on another")
		}
		target, err := env.Server.Gate.Open(ctx, a, inst.ID, access.Use)
		if err != nil {
			t.Fatal(err)
		}
		conn, _ := target.Manifest.Connection("svc")
		if h, v, err := conns.Credential(ctx, target, conn); err != nil || h != "Authorization" || v != "Token sk-live-42" {
			t.Fatalf("credential: %s %s %v", h, v, err)
		}
		otherTarget, _ := env.Server.Gate.Open(ctx, a, other.ID, access.Use)
		if _, _, err := conns.Credential(ctx, otherTarget, conn); !strings.Contains(err.Error(), "not connected") {
			t.Fatalf("the other Instance's credential: %v", err)
		}

		// Disabled: kept, and nothing may use or connect it.
		if _, err := env.Life.SetInstanceEnabled(ctx, alice, inst.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := conns.ConnectAPIKey(ctx, a, inst.ID, "svc", "k2"); models.ErrorCode(err) != models.ErrPermissionDenied {
			t.Fatalf("connect while disabled: %v", err)
		}
		if _, err := env.Server.Gate.Open(ctx, a, inst.ID, access.Use); models.ErrorCode(err) != models.ErrPermissionDenied {
			t.Fatalf("a disabled Instance opened for use: %v", err)
		}
		if n := testenv.Count(t, env.DB.Read, "installation_credentials", "instance_id = ?", inst.ID); n != 1 {
			t.Fatalf("%d credentials while disabled, want it kept", n)
		}
		env.Life.SetInstanceEnabled(ctx, alice, inst.ID, true)

		// Deleting the Instance deletes its credential, not the other's.
		conns.ConnectAPIKey(ctx, a, other.ID, "svc", "sk-other")
		if err := env.Life.DeleteInstance(ctx, alice, inst.ID); err != nil {
			t.Fatal(err)
		}
		if n := testenv.Count(t, env.DB.Read, "installation_credentials", "instance_id = ?", inst.ID); n != 0 {
			t.Fatalf("%d credentials of a deleted Instance", n)
		}
		if n := testenv.Count(t, env.DB.Read, "installation_credentials", "instance_id = ?", other.ID); n != 1 {
			t.Fatalf("the other Instance's credential went too")
		}
		if _, err := conns.Of(ctx, a, inst.ID); models.ErrorCode(err) != models.ErrPermissionDenied {
			t.Fatalf("a deleted Instance: %v", err)
		}
		if err := env.Life.DeleteInstance(ctx, bob, other.ID); models.ErrorCode(err) != models.ErrPermissionDenied {
			t.Fatalf("bob deleted alice's Instance: %v", err)
		}

		// Uninstall deletes the rest, whatever the data policy (retain here).
		if err := env.Life.Uninstall(ctx, alice, installed.ID); err != nil {
			t.Fatal(err)
		}
		if n := testenv.Count(t, env.DB.Read, "installation_credentials", "installation_id = ?", installed.ID); n != 0 {
			t.Fatalf("%d credentials after uninstall", n)
		}
	})
}

// An OAuth client is bound to the URLs of the newest version installed by
// the key that owns the plugin id, never those of a package another key
// installed before ids had owners, whatever its version.
func TestOAuthClientBindsToTheOwnersPackage(t *testing.T) {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/clients.db"})
	ctx := context.Background()
	alice := env.User(t, "alice")
	env.Install(t, alice, keyManifest())
	raw, _ := json.Marshal(keyManifest())
	foreign := strings.ReplaceAll(string(raw), "https://example.com/token", "https://evil.example/token")
	if err := env.DB.Write.Exec(`INSERT INTO installations (id, user_id, plugin_id, name, version, publisher_key_id, generation, storage_version,
		data_policy, status, manifest, package_sha256, created_at, updated_at) VALUES ('instl_old', 'usr_old', 'com.example.keys', 'K', '9.0.0', 'otherkey', 1, 1,
		'retain', 'installed', ?, '', 1, 1)`, foreign).Error; err != nil {
		t.Fatal(err)
	}
	admin := &models.User{ID: "admin", Admin: true}
	if err := env.Server.Connections.SetOAuthClient(ctx, admin, "com.example.keys", "gh", "id", "secret"); err != nil {
		t.Fatal(err)
	}
	var token string
	env.DB.Read.Raw("SELECT token_url FROM oauth_clients WHERE plugin_id = ?", "com.example.keys").Scan(&token)
	if token != "https://example.com/token" {
		t.Fatalf("the client is bound to %q, want the owner's https://example.com/token", token)
	}
}

// A provider's refusal of a credential (a fetch with it answered 401 or
// 403) shows on the connection, with its status and time, until a success
// or a new key clears it; other statuses, other connections and other
// Instances are not touched; a connection never connected records nothing.
func TestRefusedCredential(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		env := fixture.New(t, b)
		ctx := context.Background()
		alice := env.User(t, "alice")
		installed := env.Install(t, alice, keyManifest())
		inst := env.Instance(t, alice, installed)
		other := env.Instance(t, alice, installed)
		conns := env.Server.Connections
		a := models.Caller{UserID: alice.ID}
		for _, id := range []string{inst.ID, other.ID} {
			if _, err := conns.ConnectAPIKey(ctx, a, id, "svc", "sk-wrong"); err != nil {
				t.Fatal(err)
			}
		}
		status := func(id string) connections.Status {
			t.Helper()
			list, err := conns.Of(ctx, a, id)
			if err != nil {
				t.Fatal(err)
			}
			return list[0]
		}
		for _, step := range []struct {
			name    string
			conn    string
			answer  int
			refused int
		}{
			{"a 404 says nothing of the key", "svc", 404, 0},
			{"a 401 refuses it", "svc", 401, 401},
			{"a 500 leaves the refusal", "svc", 500, 401},
			{"a 403 refuses it again", "svc", 403, 403},
			{"another connection's success leaves it", "gh", 200, 403},
			{"a success clears it", "svc", 204, 0},
			{"a 401 again", "svc", 401, 401},
		} {
			if err := conns.Answered(ctx, inst.ID, step.conn, step.answer); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			st := status(inst.ID)
			if st.RefusedStatus != step.refused || (step.refused != 0) != (st.RefusedAt != nil) || !st.Connected {
				t.Fatalf("%s: %+v, want refused %d", step.name, st, step.refused)
			}
		}
		if st := status(other.ID); st.RefusedStatus != 0 {
			t.Fatalf("another Instance's key shows the refusal: %+v", st)
		}
		// A new key clears the refusal.
		if _, err := conns.ConnectAPIKey(ctx, a, inst.ID, "svc", "sk-right"); err != nil {
			t.Fatal(err)
		}
		if st := status(inst.ID); st.RefusedStatus != 0 || st.RefusedAt != nil {
			t.Fatalf("a new key keeps the refusal: %+v", st)
		}
		// A connection without a credential records nothing.
		if err := conns.Answered(ctx, inst.ID, "gh", 401); err != nil {
			t.Fatal(err)
		}
		if list, _ := conns.Of(ctx, a, inst.ID); list[1].Connected || list[1].RefusedStatus != 0 {
			t.Fatalf("an unconnected connection: %+v", list[1])
		}
	})
}
