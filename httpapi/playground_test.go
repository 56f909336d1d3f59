package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// The embedded playground assets are the vendored files recorded in
// SHA256SUMS, byte for byte, and every one of them has its licence.
func TestPlaygroundAssetsMatchSums(t *testing.T) {
	sums, err := os.ReadFile("assets/playground/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 4 {
		t.Fatalf("SHA256SUMS lists %d files, want 4", len(lines))
	}
	for _, line := range lines {
		want, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("bad line in SHA256SUMS: %q", line)
		}
		b, err := playgroundAssets.ReadFile("assets/playground/" + name)
		if err != nil {
			t.Fatalf("%s is not embedded: %v", name, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s differs from the vendored file recorded in SHA256SUMS", name)
		}
	}
	for _, lic := range []string{"LICENSE.graphiql", "LICENSE.react", "LICENSE.react-dom"} {
		if b, err := playgroundAssets.ReadFile("assets/playground/" + lic); err != nil || !strings.Contains(string(b), "MIT License") {
			t.Errorf("licence %s missing or not MIT: %v", lic, err)
		}
	}
}

func TestPlaygroundAssetRoute(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /playground/assets/{file}", playgroundAsset)
	for _, tc := range []struct {
		path        string
		status      int
		contentType string
	}{
		{"/playground/assets/graphiql.min.js", 200, "text/javascript; charset=utf-8"},
		{"/playground/assets/graphiql.min.css", 200, "text/css; charset=utf-8"},
		{"/playground/assets/react.production.min.js", 200, "text/javascript; charset=utf-8"},
		{"/playground/assets/react-dom.production.min.js", 200, "text/javascript; charset=utf-8"},
		{"/playground/assets/LICENSE.graphiql", 200, "text/plain; charset=utf-8"},
		{"/playground/assets/SHA256SUMS", 404, ""},
		{"/playground/assets/update.sh", 404, ""},
		{"/playground/assets/..%2Fdashboard.html", 404, ""},
		{"/playground/assets/graphiql.min.js.map", 404, ""},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d", tc.path, rec.Code, tc.status)
			continue
		}
		if tc.contentType != "" {
			if got := rec.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("%s: Content-Type %q, want %q", tc.path, got, tc.contentType)
			}
			if rec.Header().Get("ETag") == "" || rec.Body.Len() == 0 {
				t.Errorf("%s: no ETag or an empty body", tc.path)
			}
		}
	}
	// A second request with the ETag is answered 304.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/playground/assets/graphiql.min.js", nil))
	req := httptest.NewRequest("GET", "/playground/assets/graphiql.min.js", nil)
	req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
	rec2 := httptest.NewRecorder()
	mux.ServeHTTP(rec2, req)
	if rec2.Code != http.StatusNotModified {
		t.Errorf("conditional request: %d, want 304", rec2.Code)
	}
}
