package validator

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// Problem codes of capability schemas (the safe JSON Schema subset).
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
	// CodeSchemaDepth: subschemas nested deeper than MaxSchemaDepth.
	CodeSchemaDepth = "schema_depth"
	// CodeSchemaSize: more than MaxSchemaNodes subschemas.
	CodeSchemaSize = "schema_size"
	// CodeSchemaRoot: an input or output schema whose root is not an object.
	CodeSchemaRoot = "schema_root"
)

// Bounds of a capability schema. The specification asks for "a safe subset of
// JSON Schema"; these bounds keep every schema small enough to check quickly.
const (
	// MaxSchemaDepth: the root schema is depth 1, a member's schema depth 2.
	MaxSchemaDepth = 10
	// MaxSchemaNodes: subschemas in one schema, the root included.
	MaxSchemaNodes = 256
	// MaxSchemaEnum: values in one enum.
	MaxSchemaEnum = 64
)

// typeMask is a set of JSON types.
type typeMask uint8

const (
	tNull typeMask = 1 << iota
	tBoolean
	tInteger
	tNumber // a number that may have a fraction
	tString
	tArray
	tObject

	tAny typeMask = 0 // no restriction
)

var typeNames = []struct {
	name string
	mask typeMask
}{
	{"null", tNull}, {"boolean", tBoolean}, {"integer", tInteger}, {"number", tNumber | tInteger},
	{"string", tString}, {"array", tArray}, {"object", tObject},
}

func (m typeMask) String() string {
	if m == tAny {
		return "any type"
	}
	var names []string
	for _, t := range typeNames {
		if m&t.mask == t.mask && !(t.name == "integer" && m&tNumber != 0) {
			names = append(names, t.name)
		}
	}
	return strings.Join(names, " or ")
}

// accepts reports whether a value of type v may satisfy a schema of type m.
func (m typeMask) accepts(v typeMask) bool { return m == tAny || v == tAny || m&v != 0 }

// typeOfValue is the type of a literal JSON value.
func typeOfValue(v any) typeMask {
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBoolean
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return tInteger
		}
		return tNumber
	case string:
		return tString
	case []any:
		return tArray
	case *object:
		return tObject
	}
	return tAny
}

// schemaFormats are the formats a schema may name; each can be checked.
var schemaFormats = []string{"date-time", "date", "time", "email", "uri", "uuid", "hostname", "ipv4", "ipv6"}

// Schema is a parsed schema of the safe subset.
type Schema struct {
	Types      typeMask
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

// propNames returns the declared member names in sorted order.
func (s *Schema) propNames() []string {
	names := make([]string, 0, len(s.Props))
	for k := range s.Props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// closed reports whether a member outside Props makes a path nonexistent: an
// object schema that lists properties is closed unless it says
// additionalProperties: true.
func (s *Schema) closed() bool {
	return s.Props != nil && (s.Additional == nil || !*s.Additional)
}

// Keywords of the subset and the ones refused, with the reason.
var (
	schemaRefused = map[string]string{
		"$ref": CodeSchemaRef, "$defs": CodeSchemaRef, "definitions": CodeSchemaRef, "$id": CodeSchemaRef,
		"$anchor": CodeSchemaRef, "$dynamicRef": CodeSchemaRef, "$dynamicAnchor": CodeSchemaRef, "$recursiveRef": CodeSchemaRef,
		"$recursiveAnchor": CodeSchemaRef, "$vocabulary": CodeSchemaRef,
		"pattern": CodeSchemaPattern, "patternProperties": CodeSchemaPattern,
	}
)

const schemaSubset = "type, properties, required, additionalProperties (true or false), items (one schema), enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems, uniqueItems, minProperties, maxProperties, format, title, description, default, examples, $comment, deprecated"

// schemaChecker checks one schema and counts its subschemas.
type schemaChecker struct {
	c     *checker
	nodes int
	// reported: the size problem was reported once.
	reported bool
}

// checkSchema checks a schema of the safe subset and returns it parsed (as
// far as it could be read). root is "object" when the root must be an object
// schema, "" when any root is fine.
func (c *checker) checkSchema(path string, v any, root string) *Schema {
	sc := &schemaChecker{c: c}
	s := sc.schema(path, v, 1, true)
	if root == "object" && s != nil && s.Types != tObject {
		c.errorf(c.ptr(path, "type"), CodeSchemaRoot, "the root of this schema must be {\"type\": \"object\", ...}: capability arguments and result data are objects; it has type %s", s.Types)
	}
	return s
}

func (sc *schemaChecker) schema(path string, v any, depth int, atRoot bool) *Schema {
	c := sc.c
	m, ok := v.(*object)
	if !ok {
		c.errorf(path, CodeSchemaInvalid, "a schema is an object, not %s", typeName(v))
		return nil
	}
	if depth > MaxSchemaDepth {
		c.errorf(path, CodeSchemaDepth, "this schema is nested %d deep; schemas nest at most %d deep (the root is 1)", depth, MaxSchemaDepth)
		return nil
	}
	sc.nodes++
	if sc.nodes > MaxSchemaNodes {
		if !sc.reported {
			c.errorf(path, CodeSchemaSize, "the schema has more than %d subschemas", MaxSchemaNodes)
			sc.reported = true
		}
		return nil
	}
	s := &Schema{}
	for _, mb := range m.list() {
		k, kv := mb.key, mb.val
		kp := sc.c.ptr(path, k)
		if code, refused := schemaRefused[k]; refused {
			if code == CodeSchemaRef {
				msg := "references are refused: write the schema inline"
				if str, ok := kv.(string); ok && !strings.HasPrefix(str, "#") {
					msg = "remote references are never fetched: write the schema inline"
				}
				c.errorf(kp, code, "%s is not in the safe subset; %s", k, msg)
			} else {
				c.errorf(kp, code, "%s is not in the safe subset: regular expressions may take exponential time in some renderers; use enum, format or lengths", k)
			}
			continue
		}
		switch k {
		case "type":
			s.Types = sc.types(kp, kv)
		case "properties":
			pm, ok := kv.(*object)
			if !ok {
				c.errorf(kp, CodeSchemaInvalid, "properties is an object of member schemas, not %s", typeName(kv))
				continue
			}
			s.Props = make(map[string]*Schema, pm.len())
			for _, pmb := range pm.list() {
				name := pmb.key
				if sub := sc.schema(sc.c.ptr(kp, name), pmb.val, depth+1, false); sub != nil {
					s.Props[name] = sub
				} else {
					s.Props[name] = &Schema{}
				}
			}
		case "required":
			s.Required = sc.stringList(kp, kv, "required")
		case "additionalProperties":
			b, ok := kv.(bool)
			if !ok {
				c.errorf(kp, CodeSchemaKeyword, "additionalProperties must be true or false in the safe subset, not %s", typeName(kv))
				continue
			}
			s.Additional = &b
		case "items":
			if _, isArray := kv.([]any); isArray {
				c.errorf(kp, CodeSchemaKeyword, "items is one schema in the safe subset; the tuple form (an array of schemas) is refused")
				continue
			}
			s.Items = sc.schema(kp, kv, depth+1, false)
		case "enum":
			a, ok := kv.([]any)
			switch {
			case !ok:
				c.errorf(kp, CodeSchemaInvalid, "enum is an array of values, not %s", typeName(kv))
			case len(a) == 0 || len(a) > MaxSchemaEnum:
				c.errorf(kp, CodeSchemaInvalid, "enum has %d values; 1 to %d are allowed", len(a), MaxSchemaEnum)
			default:
				s.Enum = a
			}
		case "const":
			s.Const, s.HasConst = kv, true
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, ok := kv.(json.Number)
			f, err := n.Float64()
			if !ok || err != nil || math.IsInf(f, 0) {
				c.errorf(kp, CodeSchemaInvalid, "%s is a finite number, not %s", k, typeName(kv))
				continue
			}
			*map[string]**float64{"minimum": &s.Minimum, "maximum": &s.Maximum,
				"exclusiveMinimum": &s.ExclMin, "exclusiveMaximum": &s.ExclMax}[k] = &f
		case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
			n, ok := kv.(json.Number)
			i, err := n.Int64()
			if !ok || err != nil || i < 0 {
				c.errorf(kp, CodeSchemaInvalid, "%s is a non-negative integer, not %s", k, jsonText(kv))
				continue
			}
			*map[string]**int64{"minLength": &s.MinLength, "maxLength": &s.MaxLength, "minItems": &s.MinItems,
				"maxItems": &s.MaxItems, "minProperties": &s.MinProps, "maxProperties": &s.MaxProps}[k] = &i
		case "uniqueItems":
			b, ok := kv.(bool)
			if !ok {
				c.errorf(kp, CodeSchemaInvalid, "uniqueItems is true or false, not %s", typeName(kv))
			}
			s.Unique = b
		case "format":
			f, ok := kv.(string)
			if !ok || !contains(schemaFormats, f) {
				c.errorf(kp, CodeSchemaInvalid, "format %s is not one the host can check; allowed formats: %s", jsonText(kv), strings.Join(schemaFormats, ", "))
				continue
			}
			s.Format = f
		case "$schema":
			if !atRoot {
				c.errorf(kp, CodeSchemaKeyword, "$schema is allowed only at the root of a schema")
			} else if _, ok := kv.(string); !ok {
				c.errorf(kp, CodeSchemaInvalid, "$schema is a URI string, not %s", typeName(kv))
			}
		case "title", "description", "$comment":
			if _, ok := kv.(string); !ok {
				c.errorf(kp, CodeSchemaInvalid, "%s is a string, not %s", k, typeName(kv))
			}
		case "deprecated":
			if _, ok := kv.(bool); !ok {
				c.errorf(kp, CodeSchemaInvalid, "deprecated is true or false, not %s", typeName(kv))
			}
		case "examples":
			if _, ok := kv.([]any); !ok {
				c.errorf(kp, CodeSchemaInvalid, "examples is an array, not %s", typeName(kv))
			}
		case "default":
		default:
			c.errorf(kp, CodeSchemaKeyword, "%s is not in the safe subset of JSON Schema; allowed keywords: %s", k, schemaSubset)
		}
	}
	sc.consistent(path, s)
	return s
}

// consistent checks that bounds are ordered and that required members can be
// present.
func (sc *schemaChecker) consistent(path string, s *Schema) {
	c := sc.c
	lower := func(a, b *float64) bool { return a != nil && b != nil && *a > *b }
	if lower(s.Minimum, s.Maximum) {
		c.errorf(sc.c.ptr(path, "minimum"), CodeSchemaInvalid, "minimum %s is above maximum %s", fmtNum(*s.Minimum), fmtNum(*s.Maximum))
	}
	ilower := func(a, b *int64, an, bn string) {
		if a != nil && b != nil && *a > *b {
			c.errorf(sc.c.ptr(path, an), CodeSchemaInvalid, "%s %d is above %s %d", an, *a, bn, *b)
		}
	}
	ilower(s.MinLength, s.MaxLength, "minLength", "maxLength")
	ilower(s.MinItems, s.MaxItems, "minItems", "maxItems")
	ilower(s.MinProps, s.MaxProps, "minProperties", "maxProperties")
	if s.Additional != nil && !*s.Additional {
		for i, r := range s.Required {
			if _, ok := s.Props[r]; !ok {
				c.errorf(sc.c.ptr(path, "required", i), CodeSchemaInvalid, "required member %q is not in properties and additionalProperties is false, so no value can satisfy the schema", r)
			}
		}
	}
}

func (sc *schemaChecker) types(path string, v any) typeMask {
	one := func(p string, x any) typeMask {
		s, _ := x.(string)
		for _, t := range typeNames {
			if t.name == s {
				return t.mask
			}
		}
		sc.c.errorf(p, CodeSchemaInvalid, "type %s is not a JSON Schema type; allowed: null, boolean, integer, number, string, array, object", jsonText(x))
		return tAny
	}
	if a, ok := v.([]any); ok {
		if len(a) == 0 {
			sc.c.errorf(path, CodeSchemaInvalid, "type is an empty array; name at least one type")
			return tAny
		}
		var m typeMask
		seen := map[string]bool{}
		for i, e := range a {
			if s, ok := e.(string); ok && seen[s] {
				sc.c.errorf(sc.c.ptr(path, i), CodeSchemaInvalid, "type %q is listed twice", s)
			} else if ok {
				seen[s] = true
			}
			t := one(sc.c.ptr(path, i), e)
			if t == tAny {
				return tAny
			}
			m |= t
		}
		return m
	}
	return one(path, v)
}

func (sc *schemaChecker) stringList(path string, v any, what string) []string {
	a, ok := v.([]any)
	if !ok {
		sc.c.errorf(path, CodeSchemaInvalid, "%s is an array of member names, not %s", what, typeName(v))
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			sc.c.errorf(sc.c.ptr(path, i), CodeSchemaInvalid, "%s lists member names (strings), not %s", what, typeName(e))
			continue
		}
		if seen[s] {
			sc.c.errorf(sc.c.ptr(path, i), CodeSchemaInvalid, "%q is listed twice in %s", s, what)
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// parseSchema reads a schema from raw JSON for static checks. It returns nil
// when the schema is absent or breaks a rule of the subset: such a schema was
// reported when the manifest was checked, and is not used to judge configs.
func parseSchema(raw json.RawMessage, root string) *Schema {
	if len(raw) == 0 {
		return nil
	}
	k := schemaKey{string(raw), root}
	schemaCache.Lock()
	s, ok := schemaCache.m[k]
	schemaCache.Unlock()
	if ok {
		return s
	}
	s = parseSchemaText(raw, root)
	schemaCache.Lock()
	if len(schemaCache.m) >= maxCachedSchemas {
		clear(schemaCache.m)
	}
	schemaCache.m[k] = s
	schemaCache.Unlock()
	return s
}

// maxCachedSchemas bounds the cache of parsed capability schemas.
const maxCachedSchemas = 512

type schemaKey struct{ raw, root string }

// schemaCache keeps parsed schemas: a manifest's schemas are read again for
// every config of the plugin and every check. Parsed schemas are never
// modified.
var schemaCache = struct {
	sync.Mutex
	m map[schemaKey]*Schema
}{m: map[schemaKey]*Schema{}}

func parseSchemaText(raw json.RawMessage, root string) *Schema {
	c := &checker{}
	doc, ok := decode(raw, c)
	if doc == nil || !ok || doc.root == nil {
		return nil
	}
	s := c.checkSchema("", doc.root, root)
	if len(c.errs) > 0 {
		return nil
	}
	return s
}

// jsonText writes a decoded value briefly for messages.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("%q", x)
	case json.Number:
		return x.String()
	case bool:
		return fmt.Sprint(x)
	}
	return typeName(v)
}
