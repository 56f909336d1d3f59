package preview

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pluginhost/validator"
)

// docExample is one UI example of a document: a whole config, or a node or
// a condition of one, made into a config.
type docExample struct {
	file, text string
	config     []byte
}

// docExamples reads the JSON code blocks of a document and returns its UI
// examples, and the plugin its manifest example declares (nil when it has
// none), with every connection its blocks declare.
func docExamples(t *testing.T, file string) ([]docExample, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var examples []docExample
	var manifest map[string]any
	var connections []any
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)\n```").FindAllStringSubmatch(string(b), -1) {
		text := m[1]
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			// A fragment of a manifest ("connections": [...]) or a sketch
			// with "..." in it; a UI example must be whole JSON.
			if json.Unmarshal([]byte("{"+text+"}"), &v) != nil {
				if strings.Contains(text, "ui_schema") || strings.Contains(text, "visible_when") {
					t.Errorf("%s: a UI example that is not JSON:\n%s", file, text)
				}
				continue
			}
		}
		var config any
		switch {
		case v["ui_schema"] != nil:
			config = v
		case v["type"] != nil && v["props"] != nil:
			config = map[string]any{"ui_schema": 2, "view": v}
		case v["path"] != nil:
			config = map[string]any{"ui_schema": 2, "view": map[string]any{"type": "text", "props": map[string]any{"text": "shown", "visible_when": v}}}
		case v["schema_version"] != nil && manifest == nil:
			manifest = v
		}
		if c, ok := v["connections"].([]any); ok && v["schema_version"] == nil {
			connections = append(connections, c...)
		}
		if config != nil {
			raw, _ := json.Marshal(config)
			examples = append(examples, docExample{file: file, text: text, config: raw})
		}
	}
	if manifest != nil && len(connections) > 0 {
		manifest["connections"] = connections
		perms, _ := manifest["permissions"].([]any)
		if !slices.Contains(perms, any("network")) {
			manifest["permissions"] = append(perms, "network")
		}
		var hosts []any
		for _, c := range connections {
			for _, h := range c.(map[string]any)["hosts"].([]any) {
				if !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
				}
			}
		}
		manifest["network"] = map[string]any{"hosts": hosts}
	}
	return examples, manifest
}

// connectionIDs are the connections a config reads.
func connectionIDs(config []byte) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`context\.connections\.([a-z][a-z0-9_]*)`).FindAllStringSubmatch(string(config), -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// Every UI example of the documents (the JSON blocks of README.md and
// docs/*.md that are a config, a node or a condition) is valid against its
// document's manifest example and renders with no runtime warning; one that
// reads context.connections shows another page when its connections are
// connected than when they are not, as the documents say it does.
func TestBrowserDocumentedExamples(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	seen := 0
	for _, file := range files {
		examples, manifest := docExamples(t, file)
		for i, ex := range examples {
			seen++
			ids := connectionIDs(ex.config)
			render := func(connected bool) *page {
				t.Helper()
				opts := Options{Config: ex.config}
				if manifest != nil {
					m := maps.Clone(manifest)
					m["extensions"] = []any{map[string]any{"id": "main", "point": "screen", "config": "ui/main.json"}}
					// The modules are not the example's: a screen renders without them.
					var caps []any
					for _, c := range manifest["capabilities"].([]any) {
						c := maps.Clone(c.(map[string]any))
						delete(c, "module")
						delete(c, "source")
						caps = append(caps, c)
					}
					m["capabilities"] = caps
					raw, _ := json.Marshal(m)
					files := map[string][]byte{validator.ManifestFile: raw, "ui/main.json": ex.config}
					if _, report := validator.CheckPlugin(files); !report.Valid {
						t.Fatalf("%s, example %d is not valid: %+v\n%s", file, i+1, report.Errors, ex.text)
					}
					opts = Options{Files: files, Extension: "main"}
				} else if r := validator.CheckUIConfig(ex.config, nil, ""); !r.Valid {
					t.Fatalf("%s, example %d is not valid: %+v\n%s", file, i+1, r.Errors, ex.text)
				}
				if len(ids) > 0 {
					conns := map[string]any{}
					for _, id := range ids {
						conns[id] = map[string]any{"connected": connected, "label": "Account " + id, "account": nil}
						if connected {
							conns[id].(map[string]any)["account"] = "ann"
						}
					}
					opts.Fixtures, _ = json.Marshal(map[string]any{"context": map[string]any{"connections": conns}})
				}
				p := open(t, renderFile(t, opts))
				p.idle()
				if w := p.EvalString(`JSON.stringify(window.pluginhostPreview.events().filter(function (e) { return /warn|missing|error/.test(e.type); }))`); w != "[]" {
					t.Errorf("%s, example %d: %s\n%s", file, i+1, w, ex.text)
				}
				return p
			}
			off := render(false)
			if len(ids) == 0 {
				continue
			}
			on := render(true)
			if off.text() == on.text() {
				t.Errorf("%s, example %d reads %v but shows the same whether connected or not: %q\n%s", file, i+1, ids, off.text(), ex.text)
			}
			for _, id := range ids {
				if strings.Contains(ex.text, "{{context.connections."+id+".label}}") && !strings.Contains(off.text(), "Account "+id) {
					t.Errorf("%s, example %d: the label of %s is not shown while it is not connected: %q", file, i+1, id, off.text())
				}
			}
		}
	}
	if seen < 3 {
		t.Fatalf("only %d UI examples in the documents", seen)
	}
}
