package jsonschema

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"pluginhost/binding"
)

// Members is a decoded JSON object that keeps its members in document order,
// such as the validator's. A map[string]any is read in the order of its sorted
// keys.
type Members interface {
	Len() int
	Get(key string) (any, bool)
	All() iter.Seq2[string, any]
}

// mapMembers reads a map[string]any as Members.
type mapMembers map[string]any

func (m mapMembers) Len() int { return len(m) }

func (m mapMembers) Get(k string) (any, bool) {
	v, ok := m[k]
	return v, ok
}

func (m mapMembers) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// membersOf returns v as Members when it is an object.
func membersOf(v any) (Members, bool) {
	switch x := v.(type) {
	case map[string]any:
		return mapMembers(x), true
	case Members:
		return x, true
	}
	return nil, false
}

// numberOf reads a finite number.
func numberOf(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	case float64:
		f = x
	default:
		return 0, false
	}
	return f, !math.IsInf(f, 0) && !math.IsNaN(f)
}

// Plain converts a decoded value to the form encoding/json gives: Members
// become map[string]any, deeply.
func Plain(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	case map[string]any:
		return x
	case Members:
		m := make(map[string]any, x.Len())
		for k, e := range x.All() {
			m[k] = Plain(e)
		}
		return m
	}
	return v
}

// Equal compares decoded values as JSON values, as binding.Equal does: 1
// equals 1.0, objects member by member, values of different types never.
func Equal(a, b any) bool {
	return binding.Equal(Plain(a), Plain(b))
}

// TypeName names the JSON type of a decoded value for messages.
func TypeName(v any) string {
	switch t := TypeOf(v); t {
	case Any:
		return fmt.Sprintf("%T", v)
	case Integer:
		return "number"
	default:
		return t.String()
	}
}

// Text writes a decoded value briefly for messages: strings quoted and cut
// at 40 bytes, numbers and booleans as written, containers by type.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			cut := 40
			for cut > 0 && !isRuneStart(x[cut]) {
				cut--
			}
			x = x[:cut] + "…"
		}
		return strconv.Quote(x)
	case json.Number:
		return x.String()
	case float64:
		return FormatNumber(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return TypeName(v)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// FormatNumber writes a number for messages: integers without a fraction.
func FormatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Pointer appends reference tokens (member names and array indexes) to a
// JSON Pointer, escaping ~ and /.
func Pointer(base string, tokens ...any) string {
	if len(tokens) == 1 {
		switch v := tokens[0].(type) {
		case string:
			return Key(base, v)
		case int:
			return Index(base, v)
		}
	}
	var b strings.Builder
	b.WriteString(base)
	for _, t := range tokens {
		b.WriteByte('/')
		switch v := t.(type) {
		case int:
			b.WriteString(strconv.Itoa(v))
		case string:
			b.WriteString(escapeToken(v))
		default:
			b.WriteString(escapeToken(fmt.Sprint(v)))
		}
	}
	return b.String()
}

// Key appends one member name to a JSON Pointer.
func Key(base, k string) string { return base + "/" + escapeToken(k) }

// escapeToken escapes ~ and / in a reference token.
func escapeToken(k string) string {
	if strings.ContainsAny(k, "~/") {
		k = strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
	}
	return k
}

// Index appends one array index to a JSON Pointer.
func Index(base string, i int) string { return base + "/" + strconv.Itoa(i) }

// Subject names the value at a JSON Pointer for a message: its member name,
// "entry N" for an array entry, "the document" for the root.
func Subject(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "the document"
	}
	tok := strings.ReplaceAll(strings.ReplaceAll(path[i+1:], "~1", "/"), "~0", "~")
	if tok != "" && strings.Trim(tok, "0123456789") == "" {
		return "entry " + tok
	}
	return tok
}
