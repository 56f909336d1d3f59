package preview

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"pluginhost/bundle"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

func gallery(t *testing.T) map[string][]byte {
	t.Helper()
	folder, err := bundle.ReadPlugin("../validator/testdata/plugins/gallery")
	if err != nil {
		t.Fatal(err)
	}
	files := folder.Files
	return files
}

func TestRenderRefusesInvalid(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		wantCode string
	}{
		{"config without view", Options{Config: []byte(`{"ui_schema": 2}`)}, "required"},
		{"unknown node type", Options{Config: []byte(`{"ui_schema": 2, "view": {"type": "webview"}}`)}, "unknown_node_type"},
		{"undeclared state key", Options{Config: []byte(`{"ui_schema": 2, "view": {"type": "text", "props": {"text": "{{state.nope}}"}}}`)}, "undeclared_state_key"},
		{"not JSON", Options{Config: []byte(`{"ui_schema": 2,`)}, "json_syntax"},
		{"plugin with a broken config", Options{Files: func() map[string][]byte {
			f := gallery(t)
			f["ui/detail.json"] = []byte(`{"ui_schema": 2, "view": {"type": "text"}}`)
			return f
		}(), Extension: "main"}, "required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			html, report, err := Render(tc.opts)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if html != nil {
				t.Fatal("an invalid config was rendered")
			}
			if report == nil || report.Valid || len(report.Errors) == 0 {
				t.Fatalf("report = %+v, want the validator's errors", report)
			}
			found := false
			for _, p := range report.Errors {
				found = found || p.Code == tc.wantCode
			}
			if !found {
				t.Fatalf("errors %+v lack %s", report.Errors, tc.wantCode)
			}
		})
	}
}

func TestRenderExtension(t *testing.T) {
	if _, _, err := Render(Options{Files: gallery(t)}); err == nil || !strings.Contains(err.Error(), "main, detail") {
		t.Fatalf("no extension: err = %v, want the list of extensions", err)
	}
	if _, _, err := Render(Options{Files: gallery(t), Extension: "nope"}); err == nil || !strings.Contains(err.Error(), `no extension "nope"`) {
		t.Fatalf("unknown extension: err = %v", err)
	}
	html, report, err := Render(Options{Files: gallery(t), Extension: "detail"})
	if err != nil || !report.Valid {
		t.Fatalf("Render: %v %+v", err, report)
	}
	// Every UI extension of the plugin is in the page, for navigation.
	for _, id := range []string{`"id":"main"`, `"id":"detail"`, `"id":"home_card"`, `"id":"weather_answer"`, `"start":"detail"`} {
		if !bytes.Contains(html, []byte(id)) {
			t.Errorf("the page lacks %s", id)
		}
	}
}

// The page is self-contained: a CSP forbids the network, and nothing refers
// to anything outside the file.
func TestRenderSelfContained(t *testing.T) {
	html, _, err := Render(Options{Files: gallery(t), Extension: "main"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(html)
	if !strings.Contains(s, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:;`) {
		t.Error("the page lacks its Content-Security-Policy")
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script[^>]+src=`), regexp.MustCompile(`<link[^>]+href=`), regexp.MustCompile(`@import`),
		regexp.MustCompile(`url\(\s*['"]?(https?:|//)`), regexp.MustCompile(`<img`), regexp.MustCompile(`fetch\(`),
		regexp.MustCompile(`XMLHttpRequest`), regexp.MustCompile(`WebSocket`), regexp.MustCompile(`\beval\(`), regexp.MustCompile(`new Function`),
		regexp.MustCompile(`innerHTML`),
	} {
		if loc := bad.FindStringIndex(s); loc != nil {
			t.Errorf("the page has %q: %q", bad, s[max(0, loc[0]-40):min(len(s), loc[1]+40)])
		}
	}
}

func TestRenderDeterministic(t *testing.T) {
	fixtures, err := os.ReadFile(labDir + "/fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for i := 0; i < 3; i++ {
		opts := labOptions(t, "main")
		opts.Fixtures = fixtures
		html, _, err := Render(opts)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = html
		} else if !bytes.Equal(first, html) {
			t.Fatal("the same input gave different pages")
		}
	}
}

// No string of a config or fixture can close the script element that holds
// the JSON, nor break the JavaScript string it could end up in.
func TestRenderEscapesJSON(t *testing.T) {
	config := []byte(`{"ui_schema": 2, "view": {"type": "text", "props": {"text": "</script><script>alert(1)</script><!-- & \u2028\u2029"}}}`)
	fixtures := []byte(`{"context": {"route": {"x": "</SCRIPT><script>alert(2)</script>"}}}`)
	html, _, err := Render(Options{Config: config, Fixtures: fixtures})
	if err != nil {
		t.Fatal(err)
	}
	s := string(html)
	if strings.Count(s, "<script") != strings.Count(s, "</script>") || strings.Contains(s, "alert(1)</script>") || strings.Contains(strings.ToLower(s), "</script><script>alert(2)") {
		t.Fatal("a config string closed its script element")
	}
	for _, c := range []string{"\u2028", "\u2029", "<!--"} {
		if strings.Contains(s, c) {
			t.Errorf("the page holds %q unescaped", c)
		}
	}
	if !strings.Contains(s, `\u003c/script\u003e\u003cscript\u003ealert(1)`) {
		t.Error("the config's text is not in the page, escaped")
	}
}

// renderAtLimits renders the validator's config at every limit and checks
// that the page stays under 300 KiB plus the config.
func renderAtLimits(t testing.TB) []byte {
	t.Helper()
	config, err := os.ReadFile("../validator/testdata/configs/valid/at-limits.json")
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile("../validator/testdata/configs/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	html, _, err := Render(Options{Config: config, Manifest: manifest, Extension: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if limit := 300*1024 + len(config); len(html) >= limit {
		t.Fatalf("the page has %d bytes, over 300 KiB + the config (%d)", len(html), limit)
	}
	t.Logf("at-limits page: %d bytes (config %d, limit %d)", len(html), len(config), 300*1024+len(config))
	return html
}

func TestRenderSize(t *testing.T) { renderAtLimits(t) }

// The baseline themes have a colour for every role of the catalog, and the
// stylesheet a class for every typography entry: the preview reads the
// catalog's names, it does not keep its own list.
func TestThemesAndTypographyCoverCatalog(t *testing.T) {
	c := uicatalog.Catalog()
	hex := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	for _, mode := range []string{"light", "dark"} {
		if len(baseline[mode]) != len(c.ColorRoles) {
			t.Errorf("%s baseline has %d colours, the catalog %d roles", mode, len(baseline[mode]), len(c.ColorRoles))
		}
		for _, r := range c.ColorRoles {
			if !hex.MatchString(baseline[mode][r]) {
				t.Errorf("%s baseline: role %s is %q", mode, r, baseline[mode][r])
			}
		}
	}
	css := asset("preview.css")
	for _, ty := range c.Typography {
		if !strings.Contains(css, ".ph-t-"+ty+" {") {
			t.Errorf("preview.css has no rule for typography %s", ty)
		}
	}
}

// The context's connections are what bindings read: every connection of
// the manifest as {connected, label, account} (connected unless the
// fixtures say otherwise; true or false short for connected), and
// context.connected whether all are connected.
func TestFixturesConnections(t *testing.T) {
	m := &models.Manifest{Connections: []models.Connection{{ID: "google", Label: "Google"}, {ID: "weather", Label: "Weather key"}}}
	for _, tt := range []struct{ fixtures, want string }{
		{`{}`, `{"connected":true,"connections":{"google":{"account":null,"connected":true,"label":"Google"},"weather":{"account":null,"connected":true,"label":"Weather key"}}}`},
		{`{"context": {"connections": {"weather": false}}}`, `{"connected":false,"connections":{"google":{"account":null,"connected":true,"label":"Google"},"weather":{"account":null,"connected":false,"label":"Weather key"}}}`},
		{`{"context": {"connections": {"google": {"connected": true, "account": "ann@example.com"}}}}`, `{"connected":true,"connections":{"google":{"account":"ann@example.com","connected":true,"label":"Google"},"weather":{"account":null,"connected":true,"label":"Weather key"}}}`},
	} {
		f, err := ParseFixtures([]byte(tt.fixtures), m, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := f["context"].(map[string]any)
		got, _ := json.Marshal(map[string]any{"connections": ctx["connections"], "connected": ctx["connected"]})
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.fixtures, got, tt.want)
		}
	}
}

func TestFixturesProblems(t *testing.T) {
	folder, err := bundle.ReadPlugin(labDir)
	if err != nil {
		t.Fatal(err)
	}
	files := folder.Files
	delete(files, "fixtures.json")
	tests := []struct {
		name     string
		fixtures string
		want     [][2]string // path, code
	}{
		{"not JSON", `{`, [][2]string{{"", "json_syntax"}}},
		{"not an object", `[]`, [][2]string{{"", "type"}}},
		{"unknown member", `{"capability": {}}`, [][2]string{{"/capability", "unknown_field"}}},
		{"undeclared capability", `{"capabilities": {"weather.now": [{"result": {"summary": "", "data": {}}}]}}`, [][2]string{{"/capabilities/weather.now", "unknown_capability"}}},
		{"storage tool", `{"capabilities": {"host.storage.list": [{"result": {"summary": "", "data": {}}}]}}`, [][2]string{{"/capabilities/host.storage.list", "storage_tool"}}},
		{"no responses", `{"capabilities": {"greet.say": []}}`, [][2]string{{"/capabilities/greet.say", "range"}}},
		{"result and error", `{"capabilities": {"greet.say": [{"result": {"summary": "", "data": {}}, "error": {"code": "X"}}]}}`, [][2]string{{"/capabilities/greet.say/0", "exclusive"}}},
		{"neither result nor error", `{"capabilities": {"greet.say": [{"delay_ms": 5}]}}`, [][2]string{{"/capabilities/greet.say/0/result", "required"}}},
		{"result without data", `{"capabilities": {"greet.say": [{"result": {"summary": "s"}}]}}`, [][2]string{{"/capabilities/greet.say/0/result/data", "required"}}},
		{"error without code", `{"capabilities": {"greet.say": [{"error": {"message": "m"}}]}}`, [][2]string{{"/capabilities/greet.say/0/error/code", "required"}}},
		{"delay out of range", `{"capabilities": {"greet.say": [{"result": {"summary": "", "data": {}}, "delay_ms": 60001}]}}`, [][2]string{{"/capabilities/greet.say/0/delay_ms", "range"}}},
		{"times zero", `{"capabilities": {"greet.say": [{"result": {"summary": "", "data": {}}, "times": 0}]}}`, [][2]string{{"/capabilities/greet.say/0/times", "range"}}},
		{"match not an object", `{"capabilities": {"greet.say": [{"match": "A", "result": {"summary": "", "data": {}}}]}}`, [][2]string{{"/capabilities/greet.say/0/match", "type"}}},
		{"undeclared namespace", `{"storage": {"cache": []}}`, [][2]string{{"/storage/cache", "unknown_namespace"}}},
		{"credential key", `{"storage": {"notes": [{"key": "refresh_token", "value": "x"}]}}`, [][2]string{{"/storage/notes/0/key", "invalid_key"}}},
		{"duplicate key", `{"storage": {"notes": [{"key": "a", "value": 1}, {"key": "a", "value": 2}]}}`, [][2]string{{"/storage/notes/1/key", "duplicate"}}},
		{"item without value", `{"storage": {"notes": [{"key": "a"}]}}`, [][2]string{{"/storage/notes/0/value", "required"}}},
		{"namespace over max_bytes", `{"storage": {"settings": [{"key": "big", "value": "` + strings.Repeat("x", 4100) + `"}]}}`, [][2]string{{"/storage/settings", "quota"}}},
		{"revision zero", `{"storage": {"notes": [{"key": "a", "value": 1, "revision": 0}]}}`, [][2]string{{"/storage/notes/0/revision", "range"}}},
		{"platform", `{"context": {"platform": "symbian"}}`, [][2]string{{"/context/platform", "enum"}}},
		{"connection with a secret", `{"context": {"connections": {"google": "ya29.token"}}}`, [][2]string{{"/context/connections/google", "type"}}},
		{"undeclared connection", `{"context": {"connections": {"gitlab": true}}}`, [][2]string{{"/context/connections/gitlab", "unknown_connection"}}},
		{"connection object", `{"context": {"connections": {"google": {"label": 1, "account": 2, "token": "x"}}}}`, [][2]string{
			{"/context/connections/google/token", "unknown_field"}, {"/context/connections/google/connected", "required"},
			{"/context/connections/google/label", "type"}, {"/context/connections/google/account", "type"}}},
		{"connected set by hand", `{"context": {"connected": false}}`, [][2]string{{"/context/connected", "connected_derived"}}},
		{"unknown permission", `{"context": {"permissions": {"camera": true}}}`, [][2]string{{"/context/permissions/camera", "unknown_permission"}}},
		{"undeclared state", `{"state": {"tab": "flows", "colour": "red"}}`, [][2]string{{"/state/colour", "undeclared_state_key"}}},
		{"several at once", `{"context": {"screen": "tiny", "theme": "sepia"}, "state": {"x": 1}}`, [][2]string{{"/context/screen", "enum"}, {"/context/theme", "enum"}, {"/state/x", "undeclared_state_key"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Render(Options{Files: files, Extension: "main", Fixtures: []byte(tc.fixtures)})
			var fe *FixturesError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a FixturesError", err)
			}
			if len(fe.Problems) != len(tc.want) {
				t.Fatalf("problems %+v, want %v", fe.Problems, tc.want)
			}
			for i, w := range tc.want {
				p := fe.Problems[i]
				if p.Path != w[0] || p.Code != w[1] || p.Message == "" {
					t.Errorf("problem %d = %+v, want %s at %q", i, p, w[1], w[0])
				}
			}
		})
	}
	// The lab's own fixtures are valid.
	if _, _, err := Render(labOptions(t, "main")); err != nil {
		t.Fatalf("lab fixtures: %v", err)
	}
}
