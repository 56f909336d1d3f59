package gqlhttp

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeObject decodes a JSON object as decodeJSON would (objects as
// map[string]any, arrays as []any, numbers as json.Number, the last of
// duplicate keys kept), without encoding/json's reflection: the usual
// GraphQL body, an object of a query string and a few variables, is most of
// what a request decodes. It reports false for anything else, or anything
// it does not decode itself (an invalid body, a string with a \u escape or
// invalid UTF-8), which the caller then decodes with decodeJSON, so that
// every answer to a bad body is decodeJSON's. The caller has bounded the
// nesting (checkDepth).
func decodeObject(b []byte) (map[string]any, bool) {
	d := fastDecoder{b: b}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value()
	if !ok {
		return nil, false
	}
	d.space()
	if d.i != len(d.b) {
		return nil, false
	}
	m, _ := v.(map[string]any)
	return m, true
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the value at d.i, whitespace before it skipped.
func (d *fastDecoder) value() (any, bool) {
	d.space()
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		m := map[string]any{}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m, true
		}
		for {
			d.space()
			k, ok := d.str()
			if !ok {
				return nil, false
			}
			d.space()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return nil, false
			}
			d.i++
			v, ok := d.value()
			if !ok {
				return nil, false
			}
			m[k] = v
			d.space()
			if d.i >= len(d.b) {
				return nil, false
			}
			d.i++
			switch d.b[d.i-1] {
			case ',':
			case '}':
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		d.i++
		a := []any{}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return a, true
		}
		for {
			v, ok := d.value()
			if !ok {
				return nil, false
			}
			a = append(a, v)
			d.space()
			if d.i >= len(d.b) {
				return nil, false
			}
			d.i++
			switch d.b[d.i-1] {
			case ',':
			case ']':
				return a, true
			default:
				return nil, false
			}
		}
	case c == '"':
		s, ok := d.str()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	}
	return nil, false
}

func (d *fastDecoder) word(w string) bool {
	if len(d.b)-d.i < len(w) || string(d.b[d.i:d.i+len(w)]) != w {
		return false
	}
	d.i += len(w)
	return true
}

// str decodes a string at d.i: escapes but \u, and valid UTF-8.
func (d *fastDecoder) str() (string, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	d.i++
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start, ascii)
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped decodes the rest of a string that has an escape at d.i and began
// at start.
func (d *fastDecoder) escaped(start int, ascii bool) (string, bool) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !ascii && !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return "", false
			}
			var r byte
			switch d.b[d.i+1] {
			case '"', '\\', '/':
				r = d.b[d.i+1]
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			default: // \u, or not an escape
				return "", false
			}
			out = append(out, r)
			d.i += 2
			continue
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
		out = append(out, c)
		d.i++
	}
	return "", false
}

// number decodes a number at d.i as json.Number, in JSON's grammar.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.b[d.i] == '-' {
		d.i++
	}
	if d.i < len(d.b) && d.b[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return nil, false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(d.b[start:d.i]), true
}
