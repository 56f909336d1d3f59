package webhost

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"pluginhost/preview/assets"
)

var scriptTag = regexp.MustCompile(`<script[^>]*>`)

var bundleBlock = regexp.MustCompile(`<script type="application/json" id="ph-bundle">([^<]*)</script>`)

// The page carries the runtime with the live host, never the fixtures host;
// a hostile instance id or extension stays data; the inspector is only for
// an admin who asks; the headers keep the page from being cached, framed or
// sniffed, and let it reach only this origin.
func TestServeScreen(t *testing.T) {
	for _, tc := range []struct {
		name      string
		viewer    Viewer
		query     string
		inspector bool
	}{
		{"user", Viewer{Name: "alice"}, "", false},
		{"user asking for debug", Viewer{Name: "alice"}, "?debug=1", false},
		{"admin", Viewer{Name: "root", Admin: true}, "", false},
		{"admin asking for debug", Viewer{Name: "root", Admin: true}, "?debug=1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/app/x/main"+tc.query, nil)
			w := httptest.NewRecorder()
			hostile := `</script><script>alert(1)</script>`
			ServePage(w, r, tc.viewer, View{Kind: ViewScreen, InstanceID: hostile, Extension: "main", Preload: &Preload{Status: 200, Body: json.RawMessage(`{"data":{"note":"` + hostile + `"}}`)}})
			body := w.Body.String()
			if got := w.Header().Get("Content-Security-Policy"); got != CSP || !strings.Contains(got, "connect-src 'self'") || !strings.Contains(got, "img-src data: blob:") {
				t.Fatalf("CSP %q", got)
			}
			for h, want := range map[string]string{"Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := w.Header().Get(h); got != want {
					t.Fatalf("%s: %q, want %q", h, got, want)
				}
			}
			if strings.Contains(body, hostile) {
				t.Fatal("the instance id closed the script element")
			}
			if !strings.Contains(body, `src="/app/assets/`+assets.StaticName("shell.js")+`"`) || strings.Contains(body, "fixtures") {
				t.Fatal("the page does not link the web host's bundle alone")
			}
			// No inline script: every script element is data or a static file.
			for _, tag := range scriptTag.FindAllString(body, -1) {
				if !strings.Contains(tag, `type="application/json"`) && !strings.Contains(tag, ` src="/app/assets/`) {
					t.Fatalf("an inline script: %s", tag)
				}
			}
			if strings.Contains(CSP, "unsafe-inline") || !strings.Contains(CSP, "script-src 'self';") || !strings.Contains(CSP, "style-src 'self';") {
				t.Fatalf("the policy allows inline scripts or styles: %s", CSP)
			}
			// No style element or attribute: the styles are a static file.
			if strings.Contains(body, "<style") || strings.Contains(body, " style=") || !strings.Contains(body, `<link rel="stylesheet" href="/app/assets/`+assets.StaticName("app.css")+`">`) {
				t.Fatal("the page has styles of its own, not the static app.css")
			}
			if len(body) > 20<<10 {
				t.Fatalf("the page has %d bytes; at most 20 KiB", len(body))
			}
			m := bundleBlock.FindStringSubmatch(body)
			if m == nil {
				t.Fatal("no bundle")
			}
			var b struct {
				Inspector bool `json:"inspector"`
				Live      struct {
					InstanceID string `json:"instance_id"`
					Extension  string `json:"extension"`
				} `json:"live"`
			}
			if err := json.Unmarshal([]byte(m[1]), &b); err != nil {
				t.Fatal(err)
			}
			if b.Live.InstanceID != hostile || b.Live.Extension != "main" || b.Inspector != tc.inspector {
				t.Fatalf("bundle %+v, want inspector %v", b, tc.inspector)
			}
		})
	}
}

// Every view is the same shell: the viewer, and a hostile name, are data
// in the bundle, never markup; the theme a person picked is the page's
// from the first paint; the page holds no markup of the app.
func TestServePage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		view   View
		cookie string
		theme  string
	}{
		{"home", View{Kind: ViewHome}, "", ""},
		{"settings in dark", View{Kind: ViewSettings, InstanceID: "i1"}, "dark", ` data-theme="dark"`},
		{"dashboard in light", View{Kind: ViewDashboard}, "light", ` data-theme="light"`},
		{"a theme that is none", View{Kind: ViewHome}, "<b>", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/app", nil)
			if tc.cookie != "" {
				r.AddCookie(&http.Cookie{Name: ThemeCookie, Value: tc.cookie})
			}
			ServePage(w, r, Viewer{Name: "<b>al</b>"}, tc.view)
			body := w.Body.String()
			if strings.Contains(body, "<b>al</b>") || !strings.Contains(body, `\u003cb\u003eal\u003c/b\u003e`) {
				t.Fatal("the user name is not data in the bundle")
			}
			if !strings.Contains(body, "<html lang=\"en\""+tc.theme+">") {
				t.Fatalf("the html element is not themed %q:\n%s", tc.theme, body[:200])
			}
			if w.Header().Get("Content-Security-Policy") != CSP {
				t.Fatal("no CSP")
			}
			m := bundleBlock.FindStringSubmatch(body)
			var b struct {
				View   string
				Viewer struct {
					Name  string
					Admin bool
				}
			}
			if m == nil || json.Unmarshal([]byte(m[1]), &b) != nil || b.View != tc.view.Kind || b.Viewer.Name != "<b>al</b>" {
				t.Fatalf("bundle %+v", b)
			}
		})
	}
}

// The static files: by hashed name only, cached for good, compressed as
// the client takes it (brotli, else gzip), revalidated by ETag.
func TestAssets(t *testing.T) {
	mux := http.NewServeMux()
	(&Server{}).Mount(mux)
	name := assets.StaticName("shell.js")
	for _, tc := range []struct {
		name, path, accept, encoding string
		status                       int
	}{
		{"brotli", "/app/assets/" + name, "gzip, deflate, br", "br", 200},
		{"gzip", "/app/assets/" + name, "gzip", "gzip", 200},
		{"identity", "/app/assets/" + name, "", "", 200},
		{"the unhashed name", "/app/assets/shell.js", "", "", 404},
		{"another hash", "/app/assets/shell.000000000000.js", "", "", 404},
		{"a module, not a served file", "/app/assets/runtime.js", "", "", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tc.path, nil)
			if tc.accept != "" {
				r.Header.Set("Accept-Encoding", tc.accept)
			}
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			if tc.status != 200 {
				return
			}
			if cc := w.Header().Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Fatalf("Cache-Control %q", cc)
			}
			if got := w.Header().Get("Content-Encoding"); got != tc.encoding {
				t.Fatalf("Content-Encoding %q, want %q", got, tc.encoding)
			}
			compressed := w.Body.Len()
			var rd io.Reader = w.Body
			switch tc.encoding {
			case "br":
				rd = brotli.NewReader(rd)
			case "gzip":
				z, err := gzip.NewReader(rd)
				if err != nil {
					t.Fatal(err)
				}
				rd = z
			}
			body, err := io.ReadAll(rd)
			if err != nil {
				t.Fatal(err)
			}
			if tc.encoding != "" && compressed > len(body)/3 {
				t.Fatalf("compressed to %d of %d bytes", compressed, len(body))
			}
			if !strings.HasSuffix(string(body), assets.Bundle("shell.js")) {
				t.Fatal("not the web host's bundle")
			}
			r.Header.Set("If-None-Match", w.Header().Get("ETag"))
			w = httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			if w.Code != http.StatusNotModified {
				t.Fatalf("revalidation: %d", w.Code)
			}
		})
	}
}
