package validator

import (
	"encoding/json"
	"fmt"
	"testing"
)

// networkManifest is a valid manifest with network hosts and two
// connections.
func networkManifest() map[string]any {
	m := baseManifest()
	m["permissions"] = []any{"storage", "network"}
	m["network"] = map[string]any{"hosts": []any{"api.example.com", "*.example.org", "api.example.net:8443"}}
	m["connections"] = []any{
		map[string]any{"id": "github", "label": "GitHub", "kind": "oauth2", "hosts": []any{"api.example.com"},
			"oauth2": map[string]any{"authorization_url": "https://auth.example.com/authorize", "token_url": "https://auth.example.com/token", "scopes": []any{"repo"}}},
		map[string]any{"id": "weather", "label": "Weather", "kind": "api_key", "hosts": []any{"api.example.net:8443", "eu.example.org"},
			"api_key": map[string]any{"header": "Authorization", "format": "Bearer {key}"}},
	}
	return m
}

func hostList(n int) []any {
	var a []any
	for i := range n {
		a = append(a, fmt.Sprintf("h%d.example.com", i))
	}
	return a
}

func conn(m map[string]any, i int) map[string]any {
	return m["connections"].([]any)[i].(map[string]any)
}

func TestCheckNetworkAndConnections(t *testing.T) {
	type want struct{ path, code string }
	network := func(m map[string]any) map[string]any { return m["network"].(map[string]any) }
	tests := []struct {
		name   string
		change func(m map[string]any)
		want   []want
	}{
		{"valid", func(map[string]any) {}, nil},
		{"16 hosts, the limit", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = hostList(16) }, nil},
		{"17 hosts", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = hostList(17) },
			[]want{{"/network/hosts", CodeCount}}},
		{"no host: images only", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = []any{} }, nil},
		{"the permission alone: images only", func(m map[string]any) { delete(m, "connections"); delete(m, "network") }, nil},
		{"connections without network.hosts", func(m map[string]any) { m["network"] = map[string]any{} },
			[]want{{"/connections/0/hosts/0", CodeNetworkHost}, {"/connections/1/hosts/0", CodeNetworkHost}, {"/connections/1/hosts/1", CodeNetworkHost}}},
		{"network without the permission", func(m map[string]any) { m["permissions"] = []any{"storage"} },
			[]want{{"/connections", CodePermissionRequired}, {"/network", CodePermissionRequired}}},
		{"an IPv4 literal", func(m map[string]any) { network(m)["hosts"] = []any{"api.example.com", "127.0.0.1"} },
			[]want{{"/connections/1/hosts/0", CodeNetworkHost}, {"/connections/1/hosts/1", CodeNetworkHost}, {"/network/hosts/1", CodeNetworkHost}}},
		{"an IPv6 literal", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = []any{"[::1]:443"} },
			[]want{{"/network/hosts/0", CodeNetworkHost}}},
		{"a * inside", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = []any{"api.*.example.com"} },
			[]want{{"/network/hosts/0", CodeNetworkHost}}},
		{"a scheme", func(m map[string]any) {
			delete(m, "connections")
			network(m)["hosts"] = []any{"https://api.example.com"}
		},
			[]want{{"/network/hosts/0", CodeNetworkHost}}},
		{"port 0", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = []any{"api.example.com:0"} },
			[]want{{"/network/hosts/0", CodeNetworkHost}}},
		{"upper case", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = []any{"API.example.com"} },
			[]want{{"/network/hosts/0", CodeNetworkHost}}},
		{"twice", func(m map[string]any) {
			delete(m, "connections")
			network(m)["hosts"] = []any{"a.example.com", "a.example.com:443"}
		},
			[]want{{"/network/hosts/1", CodeDuplicate}}},
		{"no hosts member: images only", func(m map[string]any) { delete(m, "connections"); m["network"] = map[string]any{} }, nil},
		{"hosts that are not a list", func(m map[string]any) { delete(m, "connections"); network(m)["hosts"] = "api.example.com" },
			[]want{{"/network/hosts", CodeType}}},
		{"a connection host off the list", func(m map[string]any) { conn(m, 0)["hosts"] = []any{"api.github.com"} },
			[]want{{"/connections/0/hosts/0", CodeNetworkHost}}},
		{"a connection host on another port", func(m map[string]any) { conn(m, 0)["hosts"] = []any{"api.example.com:8443"} },
			[]want{{"/connections/0/hosts/0", CodeNetworkHost}}},
		{"8 connections, the limit", func(m map[string]any) {
			var a []any
			for i := range 8 {
				a = append(a, map[string]any{"id": fmt.Sprint("k", i), "label": "K", "kind": "api_key", "hosts": []any{"api.example.com"}, "api_key": map[string]any{"header": "X-Key"}})
			}
			m["connections"] = a
		}, nil},
		{"9 connections", func(m map[string]any) {
			var a []any
			for i := range 9 {
				a = append(a, map[string]any{"id": fmt.Sprint("k", i), "label": "K", "kind": "api_key", "hosts": []any{"api.example.com"}, "api_key": map[string]any{"header": "X-Key"}})
			}
			m["connections"] = a
		}, []want{{"/connections", CodeCount}}},
		{"a duplicate id", func(m map[string]any) { conn(m, 1)["id"] = "github" },
			[]want{{"/connections/1/id", CodeDuplicate}}},
		{"an unknown kind", func(m map[string]any) { conn(m, 1)["kind"] = "basic" },
			[]want{{"/connections/1/kind", CodeEnum}}},
		{"api_key missing", func(m map[string]any) { delete(conn(m, 1), "api_key") },
			[]want{{"/connections/1/api_key", CodeRequired}}},
		{"a Cookie header", func(m map[string]any) { conn(m, 1)["api_key"] = map[string]any{"header": "Cookie"} },
			[]want{{"/connections/1/api_key/header", CodeFormat}}},
		{"a Host header", func(m map[string]any) { conn(m, 1)["api_key"] = map[string]any{"header": "Host"} },
			[]want{{"/connections/1/api_key/header", CodeFormat}}},
		{"a format without {key}", func(m map[string]any) { conn(m, 1)["api_key"] = map[string]any{"header": "X-Key", "format": "Bearer"} },
			[]want{{"/connections/1/api_key/format", CodeFormat}}},
		{"a format with a line break", func(m map[string]any) {
			conn(m, 1)["api_key"] = map[string]any{"header": "X-Key", "format": "{key}\r\nX-Evil: 1"}
		}, []want{{"/connections/1/api_key/format", CodeFormat}}},
		{"oauth2 over http", func(m map[string]any) {
			conn(m, 0)["oauth2"].(map[string]any)["token_url"] = "http://auth.example.com/token"
		}, []want{{"/connections/0/oauth2/token_url", CodeFormat}}},
		{"oauth2 missing", func(m map[string]any) { delete(conn(m, 0), "oauth2") },
			[]want{{"/connections/0/oauth2", CodeRequired}}},
		{"a scope with a space", func(m map[string]any) { conn(m, 0)["oauth2"].(map[string]any)["scopes"] = []any{"repo user"} },
			[]want{{"/connections/0/oauth2/scopes/0", CodeFormat}}},
		{"an unknown member", func(m map[string]any) { conn(m, 0)["secret"] = "x" },
			[]want{{"/connections/0/secret", CodeUnknownField}}},
		{"the notifications permission", func(m map[string]any) { m["permissions"] = []any{"storage", "network", "notifications"} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := networkManifest()
			tt.change(m)
			raw, _ := json.Marshal(m)
			parsed, r := CheckManifest(raw)
			if tt.want == nil {
				if !r.Valid || parsed == nil {
					t.Fatalf("want valid, got %+v", r.Errors)
				}
				return
			}
			if len(r.Errors) != len(tt.want) {
				t.Fatalf("got %d errors %+v, want %v", len(r.Errors), r.Errors, tt.want)
			}
			for i, w := range tt.want {
				if r.Errors[i].Path != w.path || r.Errors[i].Code != w.code {
					t.Errorf("error %d = %s %s (%s), want %s %s", i, r.Errors[i].Path, r.Errors[i].Code, r.Errors[i].Message, w.path, w.code)
				}
			}
		})
	}
}
