package binding

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A context is the JSON value bindings read from: an object with the members
// data, item, state and context, as decoded by encoding/json (numbers may be
// float64 or json.Number; int and int64 are accepted too).

// Resolve reads the path from ctx. It reports false when a member or index on
// the way does not exist, or when a name is applied to a non-object or an index
// to a non-array. A JSON null that is present resolves to (nil, true).
func Resolve(ctx any, p Path) (any, bool) {
	cur := ctx
	for _, s := range p {
		if s.IsIndex {
			a, ok := cur.([]any)
			if !ok || s.Index >= len(a) {
				return nil, false
			}
			cur = a[s.Index]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[s.Name]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Eval evaluates the template against ctx. A whole binding gives the value it
// reads with its JSON type, or nil when it is missing; any other template gives
// a string in which each binding is replaced by Text of its value.
func (t *Template) Eval(ctx any) any {
	if t.Whole() {
		v, _ := Resolve(ctx, t.Parts[0].Path)
		return v
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Path == nil {
			b.WriteString(p.Text)
			continue
		}
		v, _ := Resolve(ctx, p.Path)
		b.WriteString(Text(v))
	}
	return b.String()
}

// Text is how a value reads inside a text template:
//   - a missing value and null: the empty string;
//   - a string: itself;
//   - a boolean: true or false;
//   - a number: as JavaScript's String(number) writes it (1, 1.5, 0.000001,
//     1e-7, 1e+21; -0 is 0);
//   - an array or object: compact JSON with object members sorted by key
//     (Unicode code point order), strings escaped as JSON.stringify does.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	if f, ok := number(v); ok {
		return FormatNumber(f)
	}
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}

// number returns v as a float64 when it is a number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		// Out of range gives ±Inf, as JavaScript's JSON.parse does.
		return f, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// FormatNumber writes f as JavaScript's Number.prototype.toString does: the
// shortest decimal that reads back as f, without exponent from 1e-6 up to
// below 1e21, with an exponent (1e+21, 1.5e-7) outside that range.
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // value = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	out := digits[:1]
	if k > 1 {
		out += "." + digits[1:]
	}
	if n-1 >= 0 {
		return sign + out + "e+" + strconv.Itoa(n-1)
	}
	return sign + out + "e-" + strconv.Itoa(1-n)
}

func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		writeJSONString(b, x)
	case bool:
		b.WriteString(Text(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		if f, ok := number(v); ok {
			if math.IsInf(f, 0) {
				b.WriteString("null") // as JSON.stringify
				return
			}
			b.WriteString(FormatNumber(f))
			return
		}
		b.WriteString("null")
	}
}

const hexDigits = "0123456789abcdef"

// writeJSONString quotes s as JSON.stringify does: `"` and `\` escaped, the
// control characters below U+0020 as \b \t \n \f \r or \u00XX, all else as is.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// Equal reports whether two JSON values are equal: numbers by numeric value
// (1 equals 1.0), strings, booleans and null by value, arrays element by
// element, objects member by member. Values of different JSON types are never
// equal: the number 1 does not equal the string "1".
func Equal(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}
