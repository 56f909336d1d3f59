package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDrain: before Start every request reaches the server; after it /readyz
// answers 503, websocket upgrades are refused with 503, other requests are
// still served, and every response says "Connection: close".
func TestDrain(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	d := &Drain{}
	h := d.Handler(inner)
	tests := []struct {
		name     string
		draining bool
		path     string
		upgrade  bool
		status   int
	}{
		{"ready before", false, "/readyz", false, http.StatusTeapot},
		{"upgrade before", false, "/graphql", true, http.StatusTeapot},
		{"request before", false, "/graphql", false, http.StatusTeapot},
		{"ready while draining", true, "/readyz", false, http.StatusServiceUnavailable},
		{"upgrade while draining", true, "/graphql", true, http.StatusServiceUnavailable},
		{"request while draining", true, "/graphql", false, http.StatusTeapot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.draining {
				d.Start()
			}
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.upgrade {
				r.Header.Set("Upgrade", "websocket")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("Connection") == "close"; got != tt.draining {
				t.Fatalf("Connection: close is %t, want %t", got, tt.draining)
			}
		})
	}
}
