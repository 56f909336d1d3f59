package validator

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"pluginhost/uicatalog"
)

// collectTypes gathers every "type" string of nodes and actions in a config.
func collectTypes(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := x["type"].(string); ok {
			into[t] = true
		}
		for _, e := range x {
			collectTypes(e, into)
		}
	case []any:
		for _, e := range x {
			collectTypes(e, into)
		}
	}
}

func TestCorpusCoversEveryNodeAndActionType(t *testing.T) {
	for _, group := range [][]string{
		{"testdata/configs/valid/all-nodes.json", "testdata/configs/valid/all-actions.json"},
		{"testdata/plugins/gallery/ui/main.json", "testdata/plugins/gallery/ui/detail.json"},
	} {
		seen := map[string]bool{}
		for _, f := range group {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			json.Unmarshal(raw, &v)
			collectTypes(v, seen)
		}
		var missing []string
		for _, n := range uicatalog.Catalog().Nodes {
			if !seen[n.Type] {
				missing = append(missing, "node "+n.Type)
			}
		}
		for _, a := range uicatalog.Catalog().Actions {
			if !seen[a.Type] {
				missing = append(missing, "action "+a.Type)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%v do not use: %s", group, strings.Join(missing, ", "))
		}
	}
}

func TestCheckUIConfigWithoutManifest(t *testing.T) {
	cfg := `{"ui_schema": 2,
	  "data_sources": [{"id": "w", "capability": "weather.lookup"}, {"id": "n", "capability": "host.storage.list", "arguments": {"limit": 500}}],
	  "view": {"type": "column", "children": [
	    {"type": "image", "props": {"url": "{{data.w.data.icon}}"}},
	    {"type": "image", "props": {"url": "{{data.w.data.icon2}}"}},
	    {"type": "button", "props": {"label": "x", "action": {"type": "flow", "actions": [{"type": "navigate", "target": "detail"}]}}},
	    {"type": "text", "props": {"text": "x", "visible_when": {"not": {"path": "data.w.completed", "equals": true}}}}
	  ]}}`
	r := CheckUIConfig([]byte(cfg), nil, "")
	// What needs the manifest is a warning, once per kind; what does not
	// (the built-in storage schemas) is still an error.
	wantErrors := [][2]string{{"/data_sources/1/arguments/limit", CodeSchemaRange}}
	wantWarnings := [][2]string{
		{"/data_sources/0/capability", CodeNeedsManifest},
		{"/data_sources/1/id", CodeUnusedSource},
		{"/view/children/0/props/url", CodeNeedsManifest},
		{"/view/children/2/props/action", CodeNeedsManifest},
		{"/view/children/2/props/action/actions/0/target", CodeNeedsManifest},
		{"/view/children/3/props/visible_when", CodeNeedsManifest},
	}
	if got := problemPairs(r.Errors); !samePairs(got, wantErrors) {
		t.Errorf("errors = %v, want %v%s", got, wantErrors, messages(r.Errors))
	}
	if got := problemPairs(r.Warnings); !samePairs(got, wantWarnings) {
		t.Errorf("warnings = %v, want %v%s", got, wantWarnings, messages(r.Warnings))
	}
}

func TestExtensionPoint(t *testing.T) {
	m := loadManifest(t, "manifest.json")
	withA2UI := []byte(`{"ui_schema": 2, "a2ui": {"version": "1", "description": "d", "schema": {}}, "view": {"type": "text", "props": {"text": "x"}}}`)
	plain := []byte(`{"ui_schema": 2, "view": {"type": "text", "props": {"text": "x"}}}`)
	tests := []struct {
		name   string
		config []byte
		m      bool
		ext    string
		errs   [][2]string
		warns  [][2]string
	}{
		{"a2ui, no extension: inferred response", withA2UI, true, "", nil, nil},
		{"a2ui, no manifest: inferred response", withA2UI, false, "", nil, nil},
		{"a2ui on a screen extension", withA2UI, true, "main", [][2]string{{"/a2ui", CodeA2UINotAllowed}}, nil},
		{"a2ui on the response extension", withA2UI, true, "answer", nil, nil},
		{"plain config on the response extension", plain, true, "answer", [][2]string{{"/a2ui", CodeRequired}}, nil},
		{"unknown extension: inferred", plain, true, "nope", nil, [][2]string{{"", CodeUnknownExtension}}},
		{"extension id without manifest: inferred", withA2UI, false, "main", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mm := m
			if !tt.m {
				mm = nil
			}
			r := CheckUIConfig(tt.config, mm, tt.ext)
			if got := problemPairs(r.Errors); !samePairs(got, orEmpty(tt.errs)) {
				t.Errorf("errors = %v, want %v", got, tt.errs)
			}
			if got := problemPairs(r.Warnings); !samePairs(got, orEmpty(tt.warns)) {
				t.Errorf("warnings = %v, want %v", got, tt.warns)
			}
		})
	}
}

func orEmpty(p [][2]string) [][2]string {
	if p == nil {
		return [][2]string{}
	}
	return p
}

func TestDecoding(t *testing.T) {
	tests := []struct {
		name, doc  string
		path, code string
	}{
		{"invalid UTF-8", "{\"ui_schema\": 2, \"view\": {\"type\": \"text\", \"props\": {\"text\": \"a\xffb\"}}}", "", CodeSyntax},
		{"control character in a string", "{\"ui_schema\": 2, \"description\": \"a\tb\", \"view\": {}}", "", CodeSyntax},
		{"leading zero", `{"ui_schema": 02}`, "", CodeSyntax},
		{"bad escape", `{"ui_schema": 2, "description": "\x"}`, "", CodeSyntax},
		{"truncated", `{"ui_schema": 2, "view": {"type": "te`, "", CodeSyntax},
		{"single quotes", `{'ui_schema': 2}`, "", CodeSyntax},
		{"trailing comma", `{"ui_schema": 2,}`, "", CodeSyntax},
		{"comment", `{"ui_schema": 2 /* v2 */}`, "", CodeSyntax},
		{"NaN", `{"ui_schema": NaN}`, "", CodeSyntax},
		{"duplicate member deep inside", `{"ui_schema": 2, "view": {"type": "text", "props": {"text": "a", "text": "b"}}}`, "/view/props/text", CodeDuplicateKey},
		{"empty input", ``, "", CodeSyntax},
	}
	for _, tt := range tests {
		r := CheckUIConfig([]byte(tt.doc), nil, "")
		if r.Valid || len(r.Errors) == 0 || r.Errors[0].Path != tt.path || r.Errors[0].Code != tt.code {
			t.Errorf("%s: got %+v, want %s at %q", tt.name, r.Errors, tt.code, tt.path)
		}
	}
	// Escapes and surrogate pairs decode like encoding/json.
	c := &checker{}
	doc, ok := decode([]byte(`{"a": "\u00e9\ud83c\udf1e\ud800x\/\"\\\b\f\n\r\t"}`), c)
	if doc == nil || !ok {
		t.Fatalf("decode failed: %+v", c.errs)
	}
	var want map[string]any
	json.Unmarshal([]byte(`{"a": "\u00e9\ud83c\udf1e\ud800x\/\"\\\b\f\n\r\t"}`), &want)
	if doc.root.(*object).val("a") != want["a"] {
		t.Fatalf("decoded %q, encoding/json %q", doc.root.(*object).val("a"), want["a"])
	}
}

func TestMessagesNameTheRule(t *testing.T) {
	// Every problem of the corpus has a message that says more than the code.
	m := loadManifest(t, "manifest.json")
	raw, _ := os.ReadFile("testdata/configs/invalid/top-several-problems-in-order.json")
	var c corpusCase
	json.Unmarshal(raw, &c)
	r := CheckUIConfig(c.Config, m, "")
	for _, p := range r.Errors {
		if len(p.Message) < 20 || strings.Contains(p.Message, "invalid config") {
			t.Errorf("message %q does not state the rule", p.Message)
		}
	}
	if !strings.Contains(r.Errors[1].Message, "auto, navigation, menu, hidden") || !strings.Contains(r.Errors[1].Message, `"x"`) {
		t.Errorf("an enum message names the actual and the allowed values: %q", r.Errors[1].Message)
	}
}

func TestReportIsDeterministic(t *testing.T) {
	m := loadManifest(t, "manifest.json")
	var cfg strings.Builder
	cfg.WriteString(`{"ui_schema": 3, "initial_state": {"1": 1, "2": 2, "3": 3, "x-y": 4}, "view": {"type": "column", "props": {"a": 1, "b": 2, "c": 3, "spacing": -1}, "children": [`)
	for i := 0; i < 20; i++ {
		if i > 0 {
			cfg.WriteString(",")
		}
		cfg.WriteString(`{"type": "text", "props": {"text": "{{state.k` + strings.Repeat("x", i) + `}}", "q": 1, "r": 2}}`)
	}
	cfg.WriteString(`]}}`)
	first := CheckUIConfig([]byte(cfg.String()), m, "")
	if len(first.Errors) < 20 {
		t.Fatalf("expected many errors, got %d", len(first.Errors))
	}
	for i := 0; i < 30; i++ {
		r := CheckUIConfig([]byte(cfg.String()), m, "")
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(first)
		if string(a) != string(b) {
			t.Fatal("two checks of the same config gave different reports")
		}
	}
	// Document order: the paths of the errors never go backwards.
	order := (&document{data: []byte(cfg.String())}).order()
	positions := make([]int, len(first.Errors))
	for i, p := range first.Errors {
		positions[i] = position(p.Path, order)
	}
	if !sort.IntsAreSorted(positions) {
		t.Fatalf("errors are not in document order: %v", problemPairs(first.Errors))
	}
}
