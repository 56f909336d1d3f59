package validator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pluginhost/jsonschema"
)

// withCapability is a valid manifest whose one capability has the schemas.
func withCapability(input, output any) map[string]any {
	m := baseManifest()
	m["min_host_version"] = "1.7.12"
	c := map[string]any{"id": "weather.lookup", "kind": "tool", "description": "Weather."}
	if input != nil {
		c["input_schema"] = input
	}
	if output != nil {
		c["output_schema"] = output
	}
	m["capabilities"] = []any{c}
	return m
}

func obj1(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// deepSchema nests object schemas so that the innermost is at the depth (the
// root is 1).
func deepSchema(depth int) map[string]any {
	s := obj1("type", "string")
	for i := 1; i < depth; i++ {
		s = obj1("type", "object", "properties", obj1("x", s))
	}
	return s
}

func wideSchema(members int) map[string]any {
	props := map[string]any{}
	for i := 0; i < members; i++ {
		props[fmt.Sprintf("m%03d", i)] = obj1("type", "string")
	}
	return obj1("type", "object", "properties", props)
}

func enumOf(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = i
	}
	return a
}

func TestCapabilitySchemas(t *testing.T) {
	const in = "/capabilities/0/input_schema"
	o := func(props map[string]any) map[string]any { return obj1("type", "object", "properties", props) }
	tests := []struct {
		name   string
		input  any
		output any
		change func(map[string]any)
		want   [][2]string
	}{
		{"the whole subset", obj1("type", "object", "additionalProperties", false, "required", []any{"a"},
			"title", "In", "description", "d", "$schema", "https://json-schema.org/draft/2020-12/schema", "$comment", "c",
			"minProperties", 1, "maxProperties", 5,
			"properties", obj1(
				"a", obj1("type", "string", "minLength", 1, "maxLength", 10, "format", "email", "default", "x@y.z", "examples", []any{"a@b.c"}),
				"b", obj1("type", []any{"integer", "null"}, "minimum", 0, "maximum", 9, "enum", []any{1, 2, nil}),
				"c", obj1("type", "number", "exclusiveMinimum", 0, "exclusiveMaximum", 1, "deprecated", true),
				"d", obj1("type", "array", "items", obj1("type", "string", "format", "uuid"), "minItems", 0, "maxItems", 3, "uniqueItems", true),
				"e", obj1("const", "fixed"),
				"f", obj1("type", "string", "format", "date-time"),
				"g", obj1("type", "boolean"),
			)), o(obj1("x", obj1())), nil, nil},
		{"$ref is refused", o(obj1("a", obj1("$ref", "#/$defs/a"))), nil, nil, [][2]string{{in + "/properties/a/$ref", CodeSchemaRef}}},
		{"remote $ref is refused", o(obj1("a", obj1("$ref", "https://example.com/a.json"))), nil, nil, [][2]string{{in + "/properties/a/$ref", CodeSchemaRef}}},
		{"$defs is refused", obj1("type", "object", "$defs", obj1()), nil, nil, [][2]string{{in + "/$defs", CodeSchemaRef}}},
		{"pattern is refused", o(obj1("a", obj1("type", "string", "pattern", "^(a+)+$"))), nil, nil, [][2]string{{in + "/properties/a/pattern", CodeSchemaPattern}}},
		{"patternProperties is refused", obj1("type", "object", "patternProperties", obj1()), nil, nil, [][2]string{{in + "/patternProperties", CodeSchemaPattern}}},
		{"anyOf is refused", o(obj1("a", obj1("anyOf", []any{}))), nil, nil, [][2]string{{in + "/properties/a/anyOf", CodeSchemaKeyword}}},
		{"if/then is refused", obj1("type", "object", "if", obj1(), "then", obj1()), nil, nil, [][2]string{{in + "/if", CodeSchemaKeyword}, {in + "/then", CodeSchemaKeyword}}},
		{"unknown keywords are refused", obj1("type", "object", "nullable", true), nil, nil, [][2]string{{in + "/nullable", CodeSchemaKeyword}}},
		{"additionalProperties is true or false", obj1("type", "object", "additionalProperties", obj1("type", "string")), nil, nil, [][2]string{{in + "/additionalProperties", CodeSchemaKeyword}}},
		{"items is one schema", o(obj1("a", obj1("type", "array", "items", []any{obj1()}))), nil, nil, [][2]string{{in + "/properties/a/items", CodeSchemaKeyword}}},
		{"$schema only at the root", o(obj1("a", obj1("$schema", "x"))), nil, nil, [][2]string{{in + "/properties/a/$schema", CodeSchemaKeyword}}},
		{"unknown type", o(obj1("a", obj1("type", "text"))), nil, nil, [][2]string{{in + "/properties/a/type", CodeSchemaInvalid}}},
		{"type listed twice", o(obj1("a", obj1("type", []any{"string", "string"}))), nil, nil, [][2]string{{in + "/properties/a/type/1", CodeSchemaInvalid}}},
		{"required names strings", obj1("type", "object", "required", []any{1}), nil, nil, [][2]string{{in + "/required/0", CodeSchemaInvalid}}},
		{"required cannot be met", obj1("type", "object", "additionalProperties", false, "required", []any{"a"}), nil, nil, [][2]string{{in + "/required/0", CodeSchemaInvalid}}},
		{"enum is not empty", o(obj1("a", obj1("enum", []any{}))), nil, nil, [][2]string{{in + "/properties/a/enum", CodeSchemaInvalid}}},
		{"minimum above maximum", o(obj1("a", obj1("type", "number", "minimum", 5, "maximum", 1))), nil, nil, [][2]string{{in + "/properties/a/minimum", CodeSchemaInvalid}}},
		{"minLength above maxLength", o(obj1("a", obj1("type", "string", "minLength", 5, "maxLength", 1))), nil, nil, [][2]string{{in + "/properties/a/minLength", CodeSchemaInvalid}}},
		{"negative maxItems", o(obj1("a", obj1("type", "array", "maxItems", -1))), nil, nil, [][2]string{{in + "/properties/a/maxItems", CodeSchemaInvalid}}},
		{"format outside the list", o(obj1("a", obj1("type", "string", "format", "regex"))), nil, nil, [][2]string{{in + "/properties/a/format", CodeSchemaInvalid}}},
		{"input root is an object schema", obj1("type", "array"), nil, nil, [][2]string{{in + "/type", CodeSchemaRoot}}},
		{"output root is an object schema", nil, obj1("type", "string"), nil, [][2]string{{"/capabilities/0/output_schema/type", CodeSchemaRoot}}},
		{"root without type", obj1("properties", obj1()), nil, nil, [][2]string{{in + "/type", CodeSchemaRoot}}},
		{"a schema is an object", "string", nil, nil, [][2]string{{in, CodeSchemaInvalid}}},
		{"depth 10 (the limit)", o(obj1("a", deepSchema(9))), nil, nil, nil},
		{"depth 11", o(obj1("a", deepSchema(10))), nil, nil, [][2]string{{in + "/properties/a" + strings.Repeat("/properties/x", 9), CodeSchemaDepth}}},
		{"256 subschemas (the limit)", wideSchema(255), nil, nil, nil},
		{"257 subschemas", wideSchema(256), nil, nil, [][2]string{{in + "/properties/m255", CodeSchemaSize}}},
		{"64 enum values (the limit)", o(obj1("a", obj1("enum", enumOf(64)))), nil, nil, nil},
		{"65 enum values", o(obj1("a", obj1("enum", enumOf(65)))), nil, nil, [][2]string{{in + "/properties/a/enum", CodeSchemaInvalid}}},
		{"schemas need min_host_version", o(obj1()), o(obj1()), func(m map[string]any) { delete(m, "min_host_version") }, [][2]string{{in, CodeMinHostVersion}}},
		{"min_host_version 1.7.11 is too old", nil, o(obj1()), func(m map[string]any) { m["min_host_version"] = "1.7.11" }, [][2]string{{"/capabilities/0/output_schema", CodeMinHostVersion}}},
		{"a pre-release of 1.7.12 is too old", o(obj1()), nil, func(m map[string]any) { m["min_host_version"] = "1.7.12-beta.1" }, [][2]string{{in, CodeMinHostVersion}}},
		{"min_host_version 1.10.0", o(obj1()), nil, func(m map[string]any) { m["min_host_version"] = "1.10.0" }, nil},
		{"min_host_version 2.0.0", o(obj1()), nil, func(m map[string]any) { m["min_host_version"] = "2.0.0" }, nil},
		{"no schemas, no min_host_version", nil, nil, func(m map[string]any) { delete(m, "min_host_version") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := withCapability(tt.input, tt.output)
			if tt.change != nil {
				tt.change(m)
			}
			raw, _ := json.Marshal(m)
			_, r := CheckManifest(raw)
			want := tt.want
			if want == nil {
				want = [][2]string{}
			}
			if got := problemPairs(r.Errors); !samePairs(got, want) {
				t.Fatalf("errors = %v\nwant     %v%s", got, want, messages(r.Errors))
			}
		})
	}
}

func TestExtensionConfigPath(t *testing.T) {
	tests := []struct {
		config string
		code   string
		warn   bool
	}{
		{"ui/main.json", "", false},
		{"ui/screens/main.json", CodeConfigPath, true},
		{"main.json", CodeFormat, false},
		{"ui/../manifest.json", CodeFormat, false},
		{"ui//main.json", CodeFormat, false},
		{"ui/main.yaml", CodeFormat, false},
		{"ui\\main.json", CodeFormat, false},
	}
	for _, tt := range tests {
		m := baseManifest()
		m["extensions"] = []any{map[string]any{"id": "main", "point": "screen", "config": tt.config}}
		raw, _ := json.Marshal(m)
		_, r := CheckManifest(raw)
		list := r.Errors
		if tt.warn {
			list = r.Warnings
		}
		switch {
		case tt.code == "" && (len(r.Errors) > 0 || len(r.Warnings) > 0):
			t.Errorf("%q: unexpected problems %+v %+v", tt.config, r.Errors, r.Warnings)
		case tt.code != "" && (len(list) != 1 || list[0].Code != tt.code || list[0].Path != "/extensions/0/config"):
			t.Errorf("%q: got %+v, want %s at /extensions/0/config", tt.config, list, tt.code)
		}
	}
}

func TestBuiltInStorageSchemas(t *testing.T) {
	for id, c := range storageTools {
		if c.input == nil || c.output == nil || c.input.Types != jsonschema.Object {
			t.Errorf("%s: schemas missing", id)
		}
	}
	list := storageTools["host.storage.list"].output
	item := list.Props["items"].Items
	if item == nil || item.Props["value"] == nil || item.Props["revision"].Types != jsonschema.Integer {
		t.Fatal("host.storage.list output does not describe items[].value and revision")
	}
	if got := storageTools["host.storage.update"].input.Required; strings.Join(got, ",") != "key,value,revision" {
		t.Fatalf("update requires %v", got)
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"1.7.12", true}, {"1.7.13", true}, {"1.8.0", true}, {"1.10.0", true}, {"2.0.0", true},
		{"1.7.11", false}, {"1.6.99", false}, {"0.9.0", false}, {"1.7.12-rc.1", false}, {"", false}, {"1.7", false},
	}
	for _, tt := range tests {
		if got := versionAtLeast(tt.v, "1.7.12"); got != tt.want {
			t.Errorf("versionAtLeast(%q) = %v", tt.v, got)
		}
	}
}

func TestFormats(t *testing.T) {
	tests := []struct {
		format, value string
		ok            bool
	}{
		{"date-time", "2026-01-02T03:04:05Z", true}, {"date-time", "2026-01-02T03:04:05.123+02:00", true},
		{"date-time", "2026-01-02 03:04:05", false}, {"date-time", "2026-01-02", false},
		{"date", "2026-02-28", true}, {"date", "2026-02-30", false}, {"date", "26-2-1", false},
		{"time", "03:04:05Z", true}, {"time", "03:04:05.5+01:00", true}, {"time", "3:04", false},
		{"email", "ada@example.com", true}, {"email", "Ada <ada@example.com>", false}, {"email", "ada", false},
		{"uri", "https://example.com/a?b=c", true}, {"uri", "mailto:ada@example.com", true}, {"uri", "/relative", false}, {"uri", "example.com", false},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", true}, {"uuid", "123e4567e89b12d3a456426614174000", false}, {"uuid", "123e4567-e89b-12d3-a456-42661417400g", false},
		{"hostname", "api.example.com", true}, {"hostname", "-bad.example.com", false}, {"hostname", "a..b", false}, {"hostname", "under_score.com", false},
		{"ipv4", "192.0.2.1", true}, {"ipv4", "2001:db8::1", false}, {"ipv4", "256.0.0.1", false},
		{"ipv6", "2001:db8::1", true}, {"ipv6", "192.0.2.1", false}, {"ipv6", "fe80::1%eth0", false},
	}
	for _, tt := range tests {
		if got := jsonschema.FormatOK(tt.format, tt.value); got != tt.ok {
			t.Errorf("jsonschema.FormatOK(%s, %q) = %v, want %v", tt.format, tt.value, got, tt.ok)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	for _, s := range []string{"weather", "weather_now", "weather-now", "_private", "w2"} {
		if !isIdentifier(s) {
			t.Errorf("isIdentifier(%q) = false", s)
		}
	}
	for _, s := range []string{"", "2w", "my source", "a.b", "-a", strings.Repeat("a", 65)} {
		if isIdentifier(s) {
			t.Errorf("isIdentifier(%q) = true", s)
		}
	}
}
