package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealth: the container health check passes only when the server says it
// is ready, asks 127.0.0.1 for a server listening on every interface, and
// fails when nothing answers.
func TestHealth(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			w.Write([]byte(`{"status":"ok"}`))
		case r.URL.Path == "/readyz" && ready:
			w.Write([]byte(`{"status":"ready"}`))
		case r.URL.Path == "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"database unreachable"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name   string
		ready  bool
		args   []string
		env    string
		code   int
		output string
	}{
		{"ready", true, []string{"--addr", "127.0.0.1:" + port}, "", 0, "ready: GET http://127.0.0.1:" + port + "/readyz: 200 OK"},
		{"every interface is asked on loopback", true, []string{"--addr", "0.0.0.0:" + port}, "", 0, "ready: GET http://127.0.0.1:" + port + "/readyz"},
		{"port only", true, []string{"--addr", ":" + port}, "", 0, "http://127.0.0.1:" + port + "/readyz"},
		{"address from the environment", true, nil, ":" + port, 0, "http://127.0.0.1:" + port + "/readyz"},
		{"database unreachable", false, []string{"--addr", "127.0.0.1:" + port}, "", 1, "not ready: GET http://127.0.0.1:" + port + "/readyz: 503 Service Unavailable"},
		{"live while not ready", false, []string{"--addr", "127.0.0.1:" + port, "--check", "live"}, "", 0, "live: GET http://127.0.0.1:" + port + "/healthz: 200 OK"},
		{"nothing listening", true, []string{"--addr", deadAddr}, "", 1, "not ready: GET http://" + deadAddr + "/readyz"},
		{"bad address", true, []string{"--addr", "nonsense"}, "", 2, "--addr \"nonsense\""},
		{"bad check", true, []string{"--check", "deep"}, "", 2, `"deep" is not one of ready, live`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready = tt.ready
			t.Setenv("PLUGINHOST_ADDR", tt.env)
			code, stdout, stderr := sh(t, append([]string{"health"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.output) {
				t.Errorf("exit %d, want %d; output %q lacks %q", code, tt.code, stdout+stderr, tt.output)
			}
		})
	}
}
