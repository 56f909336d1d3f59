package e2e

import (
	"testing"

	"pluginhost/internal/testenv"
)

// TestImageEndpoint: who may fetch (401, 403 for each missing condition) and
// that the proxy's rules answer once they may. Images need the network
// permission and grant, not network.hosts (the plugin declares none).
func TestImageEndpoint(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice, bob := h.user(t, "alice", false), h.user(t, "bob", false)
	withNet := manifest("com.test.img", ns("n", 100))
	withNet["permissions"] = []any{"storage", "network"}
	withNet["network"] = map[string]any{}
	_, ids := h.install(t, alice, withNet, 2)
	_, noNet := h.install(t, alice, manifest("com.test.nonet", ns("n", 100)), 1)
	grant := `mutation($i:ID!,$g:Boolean!){setInstanceGrant(instanceId:$i,permission:"network",granted:$g){grants}}`
	alice.Fail(t, "FORBIDDEN", grant, map[string]any{"i": noNet[0], "g": true})
	alice.Must(t, grant, map[string]any{"i": ids[0], "g": true}, nil)
	path := func(id string) string { return "/v1/plugin-instances/" + id + "/ui-images:fetch" }
	body := map[string]any{"url": "https://127.0.0.1/x.png"}
	for _, tc := range []struct {
		name   string
		c      *Client
		id     string
		status int
		code   string
	}{
		{"no token", &Client{URL: h.URL}, ids[0], 401, "UNAUTHENTICATED"},
		{"another user's Instance", bob, ids[0], 403, "PLUGIN_STORAGE_PERMISSION_DENIED"},
		{"unknown Instance", alice, "inst_nope", 403, "PLUGIN_STORAGE_PERMISSION_DENIED"},
		{"manifest lacks network", alice, noNet[0], 403, "PERMISSION_DENIED"},
		{"no network grant", alice, ids[1], 403, "PERMISSION_DENIED"},
		{"granted: the proxy's rules apply", alice, ids[0], 422, "UI_IMAGE_REJECTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, resp := tc.c.REST(t, "POST", path(tc.id), body)
			if status != tc.status || errorCode(resp) != tc.code {
				t.Fatalf("%d %v, want %d %s", status, resp, tc.status, tc.code)
			}
			if tc.status == 422 {
				if r := resp["error"].(map[string]any)["reason"]; r != "blocked_address" {
					t.Fatalf("reason %v", r)
				}
			}
		})
	}
	status, resp := alice.REST(t, "POST", path(ids[0]), map[string]any{"url": "http://example.com/x.png"})
	if status != 422 || resp["error"].(map[string]any)["reason"] != "not_https" {
		t.Fatalf("http url: %d %v", status, resp)
	}
	alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){id}}`, map[string]any{"i": ids[0]}, nil)
	if status, resp := alice.REST(t, "POST", path(ids[0]), body); status != 403 || errorCode(resp) != "PLUGIN_STORAGE_PERMISSION_DENIED" {
		t.Fatalf("disabled: %d %v", status, resp)
	}
}
