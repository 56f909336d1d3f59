package httpapi

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// Drain is the server's shutdown state as HTTP clients see it. Once Start is
// called, GET /readyz answers 503 {"status": "draining"} so that a load
// balancer stops sending new clients, every response carries
// "Connection: close" so that clients stop reusing their connections to this
// replica, and websocket upgrades are refused with 503, while requests
// already under way are served to the end.
type Drain struct {
	draining atomic.Bool
}

// Start begins draining; it cannot be undone.
func (d *Drain) Start() { d.draining.Store(true) }

// Handler applies the drain to next.
func (d *Drain) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.draining.Load() {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		switch {
		case r.URL.Path == "/readyz":
			r.Pattern = "GET /readyz" // for the access log: the mux is not reached
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		case strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
			r.Pattern = "/graphql"
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining: connect to another replica"})
		default:
			next.ServeHTTP(w, r)
		}
	})
}
