// Package jsonschema is the host's one engine for the safe subset of JSON
// Schema that capabilities declare (input_schema, output_schema) and that
// response extensions name (a2ui.schema): it reads a schema, refusing every
// keyword outside the subset with the reason, and checks a value against it,
// naming each failure by its JSON Pointer.
//
// The validator uses it to check manifests and configs statically; the
// capability runner and the response UI use it on values at run time. A
// schema has no references, no regular expressions and no combinators, so a
// check is linear in the size of the value.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Problem codes of a schema itself (the safe subset).
const (
	// CodeSchemaKeyword: a keyword outside the subset (combinators,
	// conditionals, unknown keywords, schema-valued additionalProperties, tuple
	// items).
	CodeSchemaKeyword = "schema_keyword"
	// CodeSchemaRef: $ref and its relatives; schemas are self-contained.
	CodeSchemaRef = "schema_ref"
	// CodeSchemaPattern: pattern and patternProperties.
	CodeSchemaPattern = "schema_pattern"
	// CodeSchemaInvalid: a keyword of the subset with a malformed value.
	CodeSchemaInvalid = "schema_invalid"
	// CodeSchemaDepth: subschemas nested deeper than MaxDepth.
	CodeSchemaDepth = "schema_depth"
	// CodeSchemaSize: more than MaxNodes subschemas.
	CodeSchemaSize = "schema_size"
	// CodeSchemaRoot: a schema whose root must be an object schema and is not.
	CodeSchemaRoot = "schema_root"
)

// Bounds of a schema. The specification asks for "a safe subset of JSON
// Schema"; these bounds keep every schema small enough to check quickly.
const (
	// MaxDepth: the root schema is depth 1, a member's schema depth 2.
	MaxDepth = 10
	// MaxNodes: subschemas in one schema, the root included.
	MaxNodes = 256
	// MaxEnum: values in one enum.
	MaxEnum = 64
)

// Types is a set of JSON types. The zero value is every type.
type Types uint8

// The JSON types. Number is a number that may have a fraction; the schema
// type "number" is Number|Integer.
const (
	Null Types = 1 << iota
	Boolean
	Integer
	Number
	String
	Array
	Object

	Any Types = 0
)

var typeNames = []struct {
	name string
	t    Types
}{
	{"null", Null}, {"boolean", Boolean}, {"integer", Integer}, {"number", Number | Integer},
	{"string", String}, {"array", Array}, {"object", Object},
}

// String names the types for messages: "string or null", "any type".
func (t Types) String() string {
	if t == Any {
		return "any type"
	}
	var names []string
	for _, n := range typeNames {
		var in bool
		switch n.name {
		case "integer":
			in = t&Integer != 0 && t&Number == 0
		case "number":
			in = t&Number != 0
		default:
			in = t&n.t != 0
		}
		if in {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " or ")
}

// Accepts reports whether a value of types v may satisfy a schema of types t.
func (t Types) Accepts(v Types) bool { return t == Any || v == Any || t&v != 0 }

// TypeOf is the type of a decoded JSON value: nil, bool, json.Number,
// float64, string, []any, map[string]any or a Members.
func TypeOf(v any) Types {
	switch x := v.(type) {
	case nil:
		return Null
	case bool:
		return Boolean
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return Integer
		}
		return Number
	case float64:
		if x == math.Trunc(x) {
			return Integer
		}
		return Number
	case string:
		return String
	case []any:
		return Array
	case map[string]any, Members:
		return Object
	}
	return Any
}

// Formats are the formats a schema may name; each can be checked.
var Formats = []string{"date-time", "date", "time", "email", "uri", "uuid", "hostname", "ipv4", "ipv6"}

// Schema is a schema of the safe subset, read. A Schema is never modified
// once read, and may be shared.
type Schema struct {
	Types      Types
	Props      map[string]*Schema
	Required   []string
	Additional *bool
	Items      *Schema
	Enum       []any
	Const      any
	HasConst   bool
	Minimum    *float64
	Maximum    *float64
	ExclMin    *float64
	ExclMax    *float64
	MinLength  *int64
	MaxLength  *int64
	MinItems   *int64
	MaxItems   *int64
	MinProps   *int64
	MaxProps   *int64
	Unique     bool
	Format     string
}

// PropNames returns the declared member names in sorted order.
func (s *Schema) PropNames() []string {
	names := make([]string, 0, len(s.Props))
	for k := range s.Props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Closed reports whether a member outside Props makes a path nonexistent: an
// object schema that lists properties is closed unless it says
// additionalProperties: true.
func (s *Schema) Closed() bool {
	return s.Props != nil && (s.Additional == nil || !*s.Additional)
}

// Keywords refused, with the reason.
var refused = map[string]string{
	"$ref": CodeSchemaRef, "$defs": CodeSchemaRef, "definitions": CodeSchemaRef, "$id": CodeSchemaRef,
	"$anchor": CodeSchemaRef, "$dynamicRef": CodeSchemaRef, "$dynamicAnchor": CodeSchemaRef, "$recursiveRef": CodeSchemaRef,
	"$recursiveAnchor": CodeSchemaRef, "$vocabulary": CodeSchemaRef,
	"pattern": CodeSchemaPattern, "patternProperties": CodeSchemaPattern,
}

const subset = "type, properties, required, additionalProperties (true or false), items (one schema), enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems, uniqueItems, minProperties, maxProperties, format, title, description, default, examples, $comment, deprecated"

// ReportFunc receives one problem: the JSON Pointer it is at, its code and a
// message. The pointer is empty in a quiet check.
type ReportFunc func(path, code, message string)

// Root says what the root of a schema must be.
type Root int

const (
	// AnyRoot: the root may be any schema.
	AnyRoot Root = iota
	// ObjectRoot: the root must be {"type": "object", ...}, as capability
	// arguments and result data are objects.
	ObjectRoot
)

// Read reads a decoded schema v found at path, reporting each broken rule of
// the subset, and returns it as far as it could be read (nil when v is not a
// schema at all). Objects of v are map[string]any or Members.
func Read(path string, v any, root Root, report ReportFunc) *Schema {
	r := &reader{report: report}
	s := r.schema(path, v, 1, true)
	if root == ObjectRoot && s != nil && s.Types != Object {
		r.errorf(Pointer(path, "type"), CodeSchemaRoot, "the root of this schema must be {\"type\": \"object\", ...}: capability arguments and result data are objects; it has type %s", s.Types)
	}
	return s
}

// reader reads one schema and counts its subschemas.
type reader struct {
	report ReportFunc
	nodes  int
	// sized: the size problem was reported once.
	sized bool
}

func (r *reader) errorf(path, code, format string, args ...any) {
	r.report(path, code, fmt.Sprintf(format, args...))
}

func (r *reader) schema(path string, v any, depth int, atRoot bool) *Schema {
	m, ok := membersOf(v)
	if !ok {
		r.errorf(path, CodeSchemaInvalid, "a schema is an object, not %s", TypeName(v))
		return nil
	}
	if depth > MaxDepth {
		r.errorf(path, CodeSchemaDepth, "this schema is nested %d deep; schemas nest at most %d deep (the root is 1)", depth, MaxDepth)
		return nil
	}
	r.nodes++
	if r.nodes > MaxNodes {
		if !r.sized {
			r.errorf(path, CodeSchemaSize, "the schema has more than %d subschemas", MaxNodes)
			r.sized = true
		}
		return nil
	}
	s := &Schema{}
	for k, kv := range m.All() {
		kp := Pointer(path, k)
		if code, ok := refused[k]; ok {
			if code == CodeSchemaRef {
				msg := "references are refused: write the schema inline"
				if str, ok := kv.(string); ok && !strings.HasPrefix(str, "#") {
					msg = "remote references are never fetched: write the schema inline"
				}
				r.errorf(kp, code, "%s is not in the safe subset; %s", k, msg)
			} else {
				r.errorf(kp, code, "%s is not in the safe subset: regular expressions may take exponential time in some renderers; use enum, format or lengths", k)
			}
			continue
		}
		switch k {
		case "type":
			s.Types = r.types(kp, kv)
		case "properties":
			pm, ok := membersOf(kv)
			if !ok {
				r.errorf(kp, CodeSchemaInvalid, "properties is an object of member schemas, not %s", TypeName(kv))
				continue
			}
			s.Props = make(map[string]*Schema, pm.Len())
			for name, pv := range pm.All() {
				if sub := r.schema(Pointer(kp, name), pv, depth+1, false); sub != nil {
					s.Props[name] = sub
				} else {
					s.Props[name] = &Schema{}
				}
			}
		case "required":
			s.Required = r.stringList(kp, kv, "required")
		case "additionalProperties":
			b, ok := kv.(bool)
			if !ok {
				r.errorf(kp, CodeSchemaKeyword, "additionalProperties must be true or false in the safe subset, not %s", TypeName(kv))
				continue
			}
			s.Additional = &b
		case "items":
			if _, isArray := kv.([]any); isArray {
				r.errorf(kp, CodeSchemaKeyword, "items is one schema in the safe subset; the tuple form (an array of schemas) is refused")
				continue
			}
			s.Items = r.schema(kp, kv, depth+1, false)
		case "enum":
			a, ok := kv.([]any)
			switch {
			case !ok:
				r.errorf(kp, CodeSchemaInvalid, "enum is an array of values, not %s", TypeName(kv))
			case len(a) == 0 || len(a) > MaxEnum:
				r.errorf(kp, CodeSchemaInvalid, "enum has %d values; 1 to %d are allowed", len(a), MaxEnum)
			default:
				s.Enum = a
			}
		case "const":
			s.Const, s.HasConst = kv, true
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			f, ok := numberOf(kv)
			if !ok {
				r.errorf(kp, CodeSchemaInvalid, "%s is a finite number, not %s", k, TypeName(kv))
				continue
			}
			*map[string]**float64{"minimum": &s.Minimum, "maximum": &s.Maximum,
				"exclusiveMinimum": &s.ExclMin, "exclusiveMaximum": &s.ExclMax}[k] = &f
		case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
			f, ok := numberOf(kv)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt64/2 {
				r.errorf(kp, CodeSchemaInvalid, "%s is a non-negative integer, not %s", k, Text(kv))
				continue
			}
			i := int64(f)
			*map[string]**int64{"minLength": &s.MinLength, "maxLength": &s.MaxLength, "minItems": &s.MinItems,
				"maxItems": &s.MaxItems, "minProperties": &s.MinProps, "maxProperties": &s.MaxProps}[k] = &i
		case "uniqueItems":
			b, ok := kv.(bool)
			if !ok {
				r.errorf(kp, CodeSchemaInvalid, "uniqueItems is true or false, not %s", TypeName(kv))
			}
			s.Unique = b
		case "format":
			f, ok := kv.(string)
			if !ok || !slices.Contains(Formats, f) {
				r.errorf(kp, CodeSchemaInvalid, "format %s is not one the host can check; allowed formats: %s", Text(kv), strings.Join(Formats, ", "))
				continue
			}
			s.Format = f
		case "$schema":
			if !atRoot {
				r.errorf(kp, CodeSchemaKeyword, "$schema is allowed only at the root of a schema")
			} else if _, ok := kv.(string); !ok {
				r.errorf(kp, CodeSchemaInvalid, "$schema is a URI string, not %s", TypeName(kv))
			}
		case "title", "description", "$comment":
			if _, ok := kv.(string); !ok {
				r.errorf(kp, CodeSchemaInvalid, "%s is a string, not %s", k, TypeName(kv))
			}
		case "deprecated":
			if _, ok := kv.(bool); !ok {
				r.errorf(kp, CodeSchemaInvalid, "deprecated is true or false, not %s", TypeName(kv))
			}
		case "examples":
			if _, ok := kv.([]any); !ok {
				r.errorf(kp, CodeSchemaInvalid, "examples is an array, not %s", TypeName(kv))
			}
		case "default":
		default:
			r.errorf(kp, CodeSchemaKeyword, "%s is not in the safe subset of JSON Schema; allowed keywords: %s", k, subset)
		}
	}
	r.consistent(path, s)
	return s
}

// consistent checks that bounds are ordered and that required members can be
// present.
func (r *reader) consistent(path string, s *Schema) {
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		r.errorf(Pointer(path, "minimum"), CodeSchemaInvalid, "minimum %s is above maximum %s", FormatNumber(*s.Minimum), FormatNumber(*s.Maximum))
	}
	ordered := func(a, b *int64, an, bn string) {
		if a != nil && b != nil && *a > *b {
			r.errorf(Pointer(path, an), CodeSchemaInvalid, "%s %d is above %s %d", an, *a, bn, *b)
		}
	}
	ordered(s.MinLength, s.MaxLength, "minLength", "maxLength")
	ordered(s.MinItems, s.MaxItems, "minItems", "maxItems")
	ordered(s.MinProps, s.MaxProps, "minProperties", "maxProperties")
	if s.Additional != nil && !*s.Additional {
		for i, name := range s.Required {
			if _, ok := s.Props[name]; !ok {
				r.errorf(Pointer(path, "required", i), CodeSchemaInvalid, "required member %q is not in properties and additionalProperties is false, so no value can satisfy the schema", name)
			}
		}
	}
}

func (r *reader) types(path string, v any) Types {
	one := func(p string, x any) Types {
		s, _ := x.(string)
		for _, n := range typeNames {
			if n.name == s {
				return n.t
			}
		}
		r.errorf(p, CodeSchemaInvalid, "type %s is not a JSON Schema type; allowed: null, boolean, integer, number, string, array, object", Text(x))
		return Any
	}
	a, ok := v.([]any)
	if !ok {
		return one(path, v)
	}
	if len(a) == 0 {
		r.errorf(path, CodeSchemaInvalid, "type is an empty array; name at least one type")
		return Any
	}
	var t Types
	seen := map[string]bool{}
	for i, e := range a {
		if s, ok := e.(string); ok && seen[s] {
			r.errorf(Pointer(path, i), CodeSchemaInvalid, "type %q is listed twice", s)
		} else if ok {
			seen[s] = true
		}
		one := one(Pointer(path, i), e)
		if one == Any {
			return Any
		}
		t |= one
	}
	return t
}

func (r *reader) stringList(path string, v any, what string) []string {
	a, ok := v.([]any)
	if !ok {
		r.errorf(path, CodeSchemaInvalid, "%s is an array of member names, not %s", what, TypeName(v))
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			r.errorf(Pointer(path, i), CodeSchemaInvalid, "%s lists member names (strings), not %s", what, TypeName(e))
			continue
		}
		if seen[s] {
			r.errorf(Pointer(path, i), CodeSchemaInvalid, "%q is listed twice in %s", s, what)
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}
