package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Decode decodes JSON text for Validate: objects keep their members in order
// and a member named twice is an error, numbers are json.Number.
//
// Well-formed text is read in one pass over the bytes; anything else
// (and a string with escapes, whose value encoding/json gives) is read
// by encoding/json's tokens, whose error is returned.
func Decode(data []byte) (any, error) {
	p := newParser(data)
	if v, ok := p.value(0); ok && p.end() {
		return v, nil
	}
	return decodeTokens(data)
}

// maxDecodeDepth bounds the nesting of a decoded value.
const maxDecodeDepth = 128

// parser reads JSON text Decode's way. Its methods report false on
// anything they do not read: bad text, a member named twice, nesting past
// maxDecodeDepth; decodeTokens then says what.
type parser struct {
	b []byte
	s string // b as a string, made once: strings and numbers are cut from it
	i int
}

func newParser(data []byte) *parser { return &parser{b: data, s: string(data)} }

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end reports whether only white space is left.
func (p *parser) end() bool {
	p.space()
	return p.i == len(p.b)
}

func (p *parser) value(depth int) (any, bool) {
	p.space()
	if p.i == len(p.b) || depth > maxDecodeDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, ok := p.string()
		return s, ok
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *parser) literal(word string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return false
	}
	p.i += len(word)
	return true
}

func (p *parser) object(depth int) (any, bool) {
	p.i++ // {
	o := &ordered{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return o, true
	}
	for {
		p.space()
		if p.i == len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		k, ok := p.string()
		if !ok {
			return nil, false
		}
		if _, dup := o.Get(k); dup {
			return nil, false
		}
		p.space()
		if p.i == len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		o.add(k, v)
		if more, ok := p.next('}'); !more {
			return o, ok
		}
	}
}

func (p *parser) array(depth int) (any, bool) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := p.next(']'); !more {
			return a, ok
		}
	}
}

// next reads what follows a member or an element: a comma (more follow)
// or the closing bracket (ok, none follow).
func (p *parser) next(closing byte) (more, ok bool) {
	p.space()
	if p.i == len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return true, true
	case closing:
		p.i++
		return false, true
	}
	return false, false
}

// string reads a string of valid UTF-8 without escapes or control
// characters; a string with escapes is decoded by encoding/json.
func (p *parser) string() (string, bool) {
	start := p.i
	p.i++ // "
	plain := true
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			raw := p.b[start:p.i]
			if plain && utf8.Valid(raw) {
				return p.s[start+1 : p.i-1], true
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			p.i += 2
		case c < 0x20:
			return "", false
		default:
			p.i++
		}
	}
	return "", false
}

// number reads a number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (any, bool) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case !p.digits():
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if !p.digits() {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return nil, false
		}
	}
	return json.Number(p.s[start:p.i]), true
}

// digits reads one digit or more.
func (p *parser) digits() bool {
	start := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// decodeTokens is Decode by encoding/json's tokens.
func decodeTokens(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("JSON text has more than one value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int) (any, error) {
	if depth > maxDecodeDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", maxDecodeDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	switch t {
	case json.Delim('{'):
		o := &ordered{}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("invalid JSON: %v", err)
			}
			k := kt.(string)
			if _, dup := o.Get(k); dup {
				return nil, fmt.Errorf("member %q is named twice", k)
			}
			v, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			o.add(k, v)
		}
		_, err := d.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token()
		return a, err
	}
	return t, nil
}
