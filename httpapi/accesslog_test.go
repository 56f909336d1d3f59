package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"pluginhost/auth"
	"pluginhost/models"
)

// TestAccessLogLine: one line per request with the route pattern (never the
// path or query), status, user and the request id of the response header; a
// proxy's plain request id is kept, anything else replaced.
func TestAccessLogLine(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /v1/plugin-instances/{instance_id}/storage", func(w http.ResponseWriter, r *http.Request) {
		auth.WithUser(r.Context(), &models.User{ID: "usr_1"})
		w.WriteHeader(http.StatusNoContent)
	})
	tests := []struct {
		name, method, target, inID string
		status                     int
		route, user                string
		keepID                     bool
	}{
		{"routed, authenticated", "DELETE", "/v1/plugin-instances/inst_secret/storage?token=ph_x", "", 204, "DELETE /v1/plugin-instances/{instance_id}/storage", "usr_1", false},
		{"proxy's id kept", "DELETE", "/v1/plugin-instances/i/storage", "abc-123_x.y", 204, "DELETE /v1/plugin-instances/{instance_id}/storage", "usr_1", true},
		{"id too long", "GET", "/nowhere", strings.Repeat("a", 65), 404, "unmatched", "-", false},
		{"id with a space", "GET", "/nowhere", "a b", 404, "unmatched", "-", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := AccessLog(slog.New(slog.NewJSONHandler(&buf, nil)), mux)
			r := httptest.NewRequest(tt.method, tt.target, nil)
			if tt.inID != "" {
				r.Header.Set(RequestIDHeader, tt.inID)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil || strings.Count(buf.String(), "\n") != 1 {
				t.Fatalf("want one JSON line, got %q", buf.String())
			}
			id := w.Header().Get(RequestIDHeader)
			if line["route"] != tt.route || line["status"] != float64(tt.status) || line["user"] != tt.user || line["request_id"] != id || line["method"] != tt.method {
				t.Fatalf("line %v, response id %q", line, id)
			}
			if (id == tt.inID) != tt.keepID || id == "" {
				t.Fatalf("request id %q from %q", id, tt.inID)
			}
			if strings.Contains(buf.String(), "inst_secret") || strings.Contains(buf.String(), "ph_x") {
				t.Fatalf("the line holds the path or query: %s", buf.String())
			}
		})
	}
}

// BenchmarkAccessLog: the cost of the access log around a trivial handler,
// JSON lines to a discarding writer.
func BenchmarkAccessLog(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	h := AccessLog(slog.New(slog.NewJSONHandler(io.Discard, nil)), mux)
	r := httptest.NewRequest("GET", "/healthz", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}
