package jsonschema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pluginhost/models"
)

const notes = `{"type": "object", "additionalProperties": false, "required": ["count", "notes"],
  "properties": {
    "count": {"type": "integer", "minimum": 0, "maximum": 100},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "kind": {"enum": ["a", "b"]},
    "fixed": {"const": {"x": 1}},
    "when": {"type": "string", "format": "date"},
    "title": {"type": "string", "minLength": 1, "maxLength": 3},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": true},
    "meta": {"type": "object", "minProperties": 1, "maxProperties": 1},
    "notes": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}
  }}`

func TestValidate(t *testing.T) {
	s, err := Compile([]byte(notes), ObjectRoot)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, value string
		want        []models.Problem // paths and codes
	}{
		{"valid", `{"count": 3, "notes": [{"id": "a"}], "ratio": 0.5, "kind": "a", "fixed": {"x": 1.0}, "when": "2025-03-01", "title": "abc", "tags": ["x", "y"], "meta": {"k": 1}}`, nil},
		{"integer as 3.0", `{"count": 3.0, "notes": []}`, nil},
		{"missing required", `{"notes": []}`, []models.Problem{{Path: "/count", Code: CodeRequired}}},
		{"wrong type", `{"count": "3", "notes": []}`, []models.Problem{{Path: "/count", Code: CodeType}}},
		{"fraction for integer", `{"count": 1.5, "notes": []}`, []models.Problem{{Path: "/count", Code: CodeType}}},
		{"at the maximum", `{"count": 100, "notes": []}`, nil},
		{"one past the maximum", `{"count": 101, "notes": []}`, []models.Problem{{Path: "/count", Code: CodeRange}}},
		{"below the minimum", `{"count": -1, "notes": []}`, []models.Problem{{Path: "/count", Code: CodeRange}}},
		{"out of range number", `{"count": 0, "ratio": 1e400, "notes": []}`, []models.Problem{{Path: "/ratio", Code: CodeRange}}},
		{"exclusive bound", `{"count": 0, "ratio": 1, "notes": []}`, []models.Problem{{Path: "/ratio", Code: CodeRange}}},
		{"enum", `{"count": 0, "kind": "c", "notes": []}`, []models.Problem{{Path: "/kind", Code: CodeEnum}}},
		{"const", `{"count": 0, "fixed": {"x": 2}, "notes": []}`, []models.Problem{{Path: "/fixed", Code: CodeEnum}}},
		{"format", `{"count": 0, "when": "2025-13-01", "notes": []}`, []models.Problem{{Path: "/when", Code: CodeFormat}}},
		{"length at the limit", `{"count": 0, "title": "äöü", "notes": []}`, nil},
		{"length one past", `{"count": 0, "title": "abcd", "notes": []}`, []models.Problem{{Path: "/title", Code: CodeRange}}},
		{"empty string", `{"count": 0, "title": "", "notes": []}`, []models.Problem{{Path: "/title", Code: CodeRange}}},
		{"items one past", `{"count": 0, "tags": ["a", "b", "c"], "notes": []}`, []models.Problem{{Path: "/tags", Code: CodeRange}}},
		{"unique", `{"count": 0, "tags": ["a", "a"], "notes": []}`, []models.Problem{{Path: "/tags/1", Code: CodeEnum}}},
		{"item type", `{"count": 0, "tags": [1], "notes": []}`, []models.Problem{{Path: "/tags/0", Code: CodeType}}},
		{"members", `{"count": 0, "meta": {}, "notes": []}`, []models.Problem{{Path: "/meta", Code: CodeRange}}},
		{"unknown member", `{"count": 0, "notes": [], "a/b~c": 1}`, []models.Problem{{Path: "/a~1b~0c", Code: CodeUnknownField}}},
		{"nested pointer", `{"count": 0, "notes": [{"id": "a"}, {"id": 7}, {}]}`, []models.Problem{{Path: "/notes/1/id", Code: CodeType}, {Path: "/notes/2/id", Code: CodeRequired}}},
		{"root type", `[]`, []models.Problem{{Path: "", Code: CodeType}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode([]byte(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			got := s.Validate(v, "the output_schema")
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i, p := range got {
				if p.Path != tt.want[i].Path || p.Code != tt.want[i].Code {
					t.Errorf("problem %d: got %s %s, want %s %s", i, p.Path, p.Code, tt.want[i].Path, tt.want[i].Code)
				}
				if !strings.Contains(p.Message, "the output_schema") {
					t.Errorf("message %q does not name the schema", p.Message)
				}
			}
		})
	}
}

// Values decoded by encoding/json (float64 and map[string]any) are checked
// the same way.
func TestValidatePlainValues(t *testing.T) {
	s, err := Compile([]byte(notes), ObjectRoot)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"count": 101.0, "notes": []any{map[string]any{"id": 1.0}}}
	got := s.Validate(v, "the schema")
	if len(got) != 2 || got[0].Path != "/count" || got[1].Path != "/notes/0/id" {
		t.Fatalf("got %v", got)
	}
}

func TestCompileRefuses(t *testing.T) {
	deep := `{"type": "object"}`
	for range MaxDepth {
		deep = `{"type": "object", "properties": {"a": ` + deep + `}}`
	}
	wide := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type": "object", "properties": {`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d": {}`, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	tests := []struct {
		name, schema string
		root         Root
		code, path   string
	}{
		{"ref", `{"$ref": "#/x"}`, AnyRoot, CodeSchemaRef, "/$ref"},
		{"pattern", `{"type": "string", "pattern": "a+"}`, AnyRoot, CodeSchemaPattern, "/pattern"},
		{"combinator", `{"anyOf": []}`, AnyRoot, CodeSchemaKeyword, "/anyOf"},
		{"root not an object", `{"type": "string"}`, ObjectRoot, CodeSchemaRoot, "/type"},
		{"bad format", `{"type": "string", "format": "regex"}`, AnyRoot, CodeSchemaInvalid, "/format"},
		{"bounds out of order", `{"minLength": 3, "maxLength": 2}`, AnyRoot, CodeSchemaInvalid, "/minLength"},
		{"too deep", deep, AnyRoot, CodeSchemaDepth, strings.Repeat("/properties/a", MaxDepth)},
		{"too many subschemas", wide(MaxNodes), AnyRoot, CodeSchemaSize, fmt.Sprintf("/properties/p%d", MaxNodes-1)},
		{"member named twice", `{"type": "object", "type": "string"}`, AnyRoot, CodeSchemaInvalid, ""},
		{"not JSON", `{`, AnyRoot, CodeSchemaInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.schema), tt.root)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a schema error", err)
			}
			if p := e.Problems[0]; p.Code != tt.code || p.Path != tt.path {
				t.Fatalf("got %s at %q (%s), want %s at %q", p.Code, p.Path, p.Message, tt.code, tt.path)
			}
		})
	}
	// At the limits the schema is read.
	if _, err := Compile([]byte(wide(MaxNodes-1)), AnyRoot); err != nil {
		t.Errorf("%d subschemas: %v", MaxNodes, err)
	}
}

func TestDecode(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 1000 {
		fmt.Fprintf(&b, `"k%d": %d,`, i, i)
	}
	b.WriteString(`"k7": 0}`)
	if _, err := Decode([]byte(b.String())); err == nil || !strings.Contains(err.Error(), `"k7"`) {
		t.Errorf("a member named twice in a large object: %v", err)
	}
	if _, err := Decode([]byte(strings.Repeat("[", maxDecodeDepth+2) + strings.Repeat("]", maxDecodeDepth+2))); err == nil {
		t.Error("nesting past the bound was decoded")
	}
	if _, err := Decode([]byte(`{} {}`)); err == nil {
		t.Error("two values were decoded as one")
	}
	v, err := Decode([]byte(`{"b": 1, "a": [true, null, "x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := v.(Members); m.Len() != 2 || Text(v) != "object" || TypeOf(v) != Object {
		t.Errorf("decoded %v", v)
	}
}

// Compiled schemas are kept by their text and root, within maxCached: the
// same text compiles to the same schema, the same text under another root
// is compiled for that root, and many texts do not grow the cache past its
// bound.
func TestCompileKeeps(t *testing.T) {
	text := []byte(`{"type": "string"}`)
	a, err := Compile(text, AnyRoot)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Compile(bytes.Clone(text), AnyRoot); b != a {
		t.Error("the same text compiled again gave another schema")
	}
	if _, err := Compile(text, ObjectRoot); err == nil {
		t.Error("a string schema was taken as an object root: the root's verdict was kept for another root")
	}
	if _, err := Compile(text, AnyRoot); err != nil {
		t.Errorf("the object root's refusal was kept for any root: %v", err)
	}
	for i := range 2*maxCached + 3 {
		if _, err := Compile(fmt.Appendf(nil, `{"type": "object", "maxProperties": %d}`, i), ObjectRoot); err != nil {
			t.Fatal(err)
		}
		cache.Lock()
		kept := cacheSize()
		cache.Unlock()
		if kept > maxCached {
			t.Fatalf("after %d schemas the cache keeps %d (bound %d)", i+1, kept, maxCached)
		}
	}
}
