package validator

import (
	"encoding/json"
	"math"
	"strings"

	"pluginhost/jsonschema"
)

// Problem codes shared by every document.
const (
	CodeRequired     = "required"
	CodeType         = "type"
	CodeUnknownField = "unknown_field"
	CodeEnum         = "enum"
	CodeRange        = "range"
	CodeCount        = "count"
	CodeFormat       = "format"
	CodeDuplicate    = "duplicate"
)

// object checks that v is an object whose members are all in allowed; unknown
// members are reported. It returns the object, or nil when v is not one.
func (c *checker) object(path string, v any, allowed ...string) *object {
	m, ok := v.(*object)
	if !ok {
		c.errorf(path, CodeType, "%s must be an object, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
		return nil
	}
	if len(allowed) > 0 {
		// Problems are put in document order later; the map's order does not
		// matter.
		for _, mb := range m.list() {
			if k := mb.key; !contains(allowed, k) {
				c.errorf(c.ptr(path, k), CodeUnknownField, "unknown field %q; allowed fields: %s", k, strings.Join(allowed, ", "))
			}
		}
	}
	return m
}

// array checks that v is an array.
func (c *checker) array(path string, v any) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		c.errorf(path, CodeType, "%s must be an array, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
	}
	return a, ok
}

// str checks that v is a string.
func (c *checker) str(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		c.errorf(path, CodeType, "%s must be a string, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
	}
	return s, ok
}

// boolean checks that v is a boolean.
func (c *checker) boolean(path string, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		c.errorf(path, CodeType, "%s must be a boolean, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
	}
	return b, ok
}

// number checks that v is a finite number within [lo, hi].
func (c *checker) number(path string, v any, lo, hi float64) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		c.errorf(path, CodeType, "%s must be a number, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		c.errorf(path, CodeRange, "%s must be a finite number from %s to %s", jsonschema.Subject(path), jsonschema.FormatNumber(lo), jsonschema.FormatNumber(hi))
		return 0, false
	}
	if f < lo || f > hi {
		c.errorf(path, CodeRange, "%s is %s; allowed range is %s to %s", jsonschema.Subject(path), n.String(), jsonschema.FormatNumber(lo), jsonschema.FormatNumber(hi))
		return f, false
	}
	return f, true
}

// integer checks that v is an integral number within [lo, hi].
func (c *checker) integer(path string, v any, lo, hi int64) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		c.errorf(path, CodeType, "%s must be an integer, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		c.errorf(path, CodeType, "%s must be an integer, not %s", jsonschema.Subject(path), n.String())
		return 0, false
	}
	if f < float64(lo) || f > float64(hi) {
		c.errorf(path, CodeRange, "%s is %s; allowed range is %d to %d", jsonschema.Subject(path), n.String(), lo, hi)
		return int64(f), false
	}
	return int64(f), true
}

// enum checks that v is one of the allowed strings.
func (c *checker) enum(path string, v any, allowed ...string) (string, bool) {
	s, ok := c.str(path, v)
	if !ok {
		return "", false
	}
	if !contains(allowed, s) {
		c.errorf(path, CodeEnum, "%s is %q; allowed values: %s", jsonschema.Subject(path), s, strings.Join(allowed, ", "))
		return s, false
	}
	return s, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
