package webhost

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

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
			ServeScreen(w, r, tc.viewer, hostile, "main", &Preload{Status: 200, Body: json.RawMessage(`{"data":{"note":"` + hostile + `"}}`)})
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
			if !strings.Contains(body, "window.PluginhostHost") || !strings.Contains(body, "storageChanged") || strings.Contains(body, "PREVIEW_NO_FIXTURE") {
				t.Fatal("the page does not carry the live host alone")
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

// The list page names the viewer as text, never as markup.
func TestServeList(t *testing.T) {
	w := httptest.NewRecorder()
	ServeList(w, httptest.NewRequest("GET", "/app", nil), Viewer{Name: "<b>al</b>"})
	if strings.Contains(w.Body.String(), "<b>al</b>") || !strings.Contains(w.Body.String(), "&lt;b&gt;al&lt;/b&gt;") {
		t.Fatal("the user name is not escaped")
	}
	if w.Header().Get("Content-Security-Policy") != CSP {
		t.Fatal("no CSP")
	}
}
