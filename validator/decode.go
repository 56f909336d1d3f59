package validator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"pluginhost/jsonschema"
)

// Problem codes of JSON decoding.
const (
	CodeSyntax       = "json_syntax"
	CodeDuplicateKey = "duplicate_key"
	CodeTooLarge     = "too_large"
	CodeTooDeep      = "too_deep"
)

// maxDecodeDepth bounds nesting so that no input can exhaust the stack.
const maxDecodeDepth = 64

// document is a decoded JSON document: values are *object, []any, string,
// json.Number, bool or nil.
type document struct {
	root any
	data []byte
}

// object is a decoded JSON object: its members in document order. Objects of
// a config are small, and a slice costs a fraction of a map to build.
type object struct {
	members []member
}

type member struct {
	key string
	val any
}

// get returns the member named k.
func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	for i := range o.members {
		if o.members[i].key == k {
			return o.members[i].val, true
		}
	}
	return nil, false
}

// val returns the member named k, or nil.
func (o *object) val(k string) any {
	v, _ := o.get(k)
	return v
}

// has reports whether the object has a member named k.
func (o *object) has(k string) bool {
	_, ok := o.get(k)
	return ok
}

// list returns the members; nil for a nil object.
func (o *object) list() []member {
	if o == nil {
		return nil
	}
	return o.members
}

// len is the number of members.
func (o *object) len() int {
	if o == nil {
		return 0
	}
	return len(o.members)
}

// Len, Get and All make an object jsonschema.Members.
func (o *object) Len() int { return o.len() }

// Get returns the member named k.
func (o *object) Get(k string) (any, bool) { return o.get(k) }

// All yields the members in document order.
func (o *object) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, mb := range o.list() {
			if !yield(mb.key, mb.val) {
				return
			}
		}
	}
}

// order gives each JSON Pointer of the document its position in the text, so
// that problems can be reported in document order. It is computed only when
// there are problems to sort: valid documents never pay for it.
func (d *document) order() map[string]int {
	if d == nil {
		return nil
	}
	p := &parser{data: d.data, order: map[string]int{}, c: &checker{}}
	p.value("", 0)
	return p.order
}

// decode parses JSON strictly: invalid UTF-8, duplicate object members,
// trailing data and nesting deeper than maxDecodeDepth are problems. Every
// problem is added to c. It returns nil when the text is not JSON at all; ok is
// false when the document decoded but had duplicate members.
func decode(data []byte, c *checker) (doc *document, ok bool) {
	p := &parser{data: data, c: c}
	root, err := p.value("", 0)
	if err == nil {
		p.ws()
		if p.i < len(p.data) {
			err = p.fail("unexpected data after the JSON document")
		}
	}
	if err != nil {
		if err == errTooDeep {
			c.errorf("", CodeTooDeep, "the document nests deeper than %d levels", maxDecodeDepth)
		} else {
			c.errorf("", CodeSyntax, "%s", err.Error())
		}
		return nil, false
	}
	return &document{root: root, data: data}, !p.failed
}

// parser is a recursive-descent JSON parser. With order set it records the
// position of every value by JSON Pointer.
type parser struct {
	data   []byte
	i      int
	c      *checker
	failed bool
	order  map[string]int
	n      int
	// stack holds the reference tokens of the value being parsed, to name
	// the place of a duplicate member.
	stack []token
	// scratch holds the members of the objects being parsed.
	scratch []member
}

type token struct {
	key   string
	index int
	isIdx bool
}

// pointer returns the JSON Pointer of the current value's member k.
func (p *parser) pointer(k string) string {
	var b strings.Builder
	for _, t := range p.stack {
		if t.isIdx {
			b.WriteString(jsonschema.Index("", t.index))
		} else {
			b.WriteString(jsonschema.Key("", t.key))
		}
	}
	return jsonschema.Key(b.String(), k)
}

type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return e.msg }

var errTooDeep = &syntaxError{"too deep"}

func (p *parser) fail(what string) error {
	return &syntaxError{fmt.Sprintf("invalid JSON at %s: %s", p.where(p.i), what)}
}

// where turns a byte offset into "line L, column C".
func (p *parser) where(off int) string {
	if off > len(p.data) {
		off = len(p.data)
	}
	before := p.data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(path string, depth int) (any, error) {
	if depth > maxDecodeDepth {
		return nil, errTooDeep
	}
	if p.order != nil {
		p.order[path] = p.n
		p.n++
	}
	p.ws()
	if p.i >= len(p.data) {
		return nil, p.fail("the document ends early")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(path, depth)
	case c == '[':
		return p.array(path, depth)
	case c == '"':
		if v, ok := p.internedString(); ok {
			return v, nil
		}
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.fail(fmt.Sprintf("unexpected %s; expected a value", quoteByte(c)))
	}
}

func quoteByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.Quote(string(c))
}

func (p *parser) literal(word string) error {
	if !bytes.HasPrefix(p.data[p.i:], []byte(word)) {
		return p.fail(fmt.Sprintf("unexpected %s; expected a value", quoteByte(p.data[p.i])))
	}
	p.i += len(word)
	return nil
}

func (p *parser) object(path string, depth int) (any, error) {
	p.i++ // {
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return &object{}, nil
	}
	// Members collect on p.scratch above base, and are copied out at the end.
	base := len(p.scratch)
	var index map[string]bool // for duplicate detection in large objects
	for {
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.fail("the document ends early")
		}
		if p.data[p.i] != '"' {
			return nil, p.fail(fmt.Sprintf("unexpected %s; expected a member name in double quotes", quoteByte(p.data[p.i])))
		}
		var k string
		var err error
		if v, ok := p.internedString(); ok {
			k = v.(string)
		} else if k, err = p.string(); err != nil {
			return nil, err
		}
		p.ws()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, p.fail("expected ':' after the member name")
		}
		p.i++
		var kp string
		if p.order != nil {
			kp = jsonschema.Key(path, k)
		}
		p.stack = append(p.stack, token{key: k})
		v, err := p.value(kp, depth+1)
		p.stack = p.stack[:len(p.stack)-1]
		if err != nil {
			return nil, err
		}
		members := p.scratch[base:]
		dup := -1
		if index == nil && len(members) >= 16 {
			index = make(map[string]bool, 2*len(members))
			for _, mb := range members {
				index[mb.key] = true
			}
		}
		if index != nil {
			if index[k] {
				for i := range members {
					if members[i].key == k {
						dup = i
					}
				}
			}
			index[k] = true
		} else {
			for i := range members {
				if members[i].key == k {
					dup = i
				}
			}
		}
		if dup >= 0 {
			// The last one wins, as in encoding/json, and the document is
			// refused.
			members[dup].val = v
			if p.order == nil {
				p.c.errorf(p.pointer(k), CodeDuplicateKey, "member %q appears more than once in this object; each member may appear once", k)
				p.failed = true
			}
		} else {
			p.scratch = append(p.scratch, member{k, v})
		}
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.fail("the document ends early")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			o := &object{members: make([]member, len(p.scratch)-base)}
			copy(o.members, p.scratch[base:])
			clear(p.scratch[base:])
			p.scratch = p.scratch[:base]
			return o, nil
		default:
			return nil, p.fail(fmt.Sprintf("unexpected %s; expected ',' or '}'", quoteByte(p.data[p.i])))
		}
	}
}

func (p *parser) array(path string, depth int) (any, error) {
	p.i++ // [
	a := []any{}
	p.ws()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return a, nil
	}
	for n := 0; ; n++ {
		var ep string
		if p.order != nil {
			ep = path + "/" + strconv.Itoa(n)
		}
		p.stack = append(p.stack, token{index: n, isIdx: true})
		v, err := p.value(ep, depth+1)
		p.stack = p.stack[:len(p.stack)-1]
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.ws()
		if p.i >= len(p.data) {
			return nil, p.fail("the document ends early")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.fail(fmt.Sprintf("unexpected %s; expected ',' or ']'", quoteByte(p.data[p.i])))
		}
	}
}

func (p *parser) string() (string, error) {
	p.i++ // "
	start := p.i
	// Fast path: no escapes, printable ASCII or valid UTF-8.
	for p.i < len(p.data) {
		c := p.data[p.i]
		if c == '"' {
			s := string(p.data[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("a control character in a string; write it escaped, such as \\n")
		}
		if c < utf8.RuneSelf {
			p.i++
			continue
		}
		r, size := utf8.DecodeRune(p.data[p.i:])
		if r == utf8.RuneError && size == 1 {
			return "", p.fail("invalid UTF-8 in a string; the document must be UTF-8")
		}
		p.i += size
	}
	var b strings.Builder
	b.Write(p.data[start:p.i])
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.data) {
				return "", p.fail("the document ends early")
			}
			e := p.data[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("\\u needs four hex digits")
				}
				if utf16.IsSurrogate(r) {
					r = p.lowSurrogate(r)
				}
				b.WriteRune(r)
			default:
				return "", p.fail(fmt.Sprintf("invalid escape \\%s in a string", string(e)))
			}
		case c < 0x20:
			return "", p.fail("a control character in a string; write it escaped, such as \\n")
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.data[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail("invalid UTF-8 in a string; the document must be UTF-8")
			}
			b.Write(p.data[p.i : p.i+size])
			p.i += size
		}
	}
	return "", p.fail("the document ends early")
}

// lowSurrogate completes a high surrogate with the \uXXXX low surrogate that
// follows it; a lone surrogate reads as U+FFFD, as encoding/json reads it.
func (p *parser) lowSurrogate(hi rune) rune {
	if p.i+6 <= len(p.data) && p.data[p.i] == '\\' && p.data[p.i+1] == 'u' {
		save := p.i
		p.i += 2
		if lo, ok := p.hex4(); ok {
			if r := utf16.DecodeRune(hi, lo); r != utf8.RuneError {
				return r
			}
		}
		p.i = save
	}
	return utf8.RuneError
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.i : p.i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	p.i += 4
	return r, true
}

// internedString reads a string without escapes that is one of the interned
// names, without allocating: the names of the catalog and the config are most
// of the strings of a config.
func (p *parser) internedString() (any, bool) {
	end := bytes.IndexByte(p.data[p.i+1:], '"')
	if end < 0 || end > maxInterned {
		return nil, false
	}
	b := p.data[p.i+1 : p.i+1+end]
	v, ok := interned()[string(b)]
	if ok {
		p.i += end + 2
	}
	return v, ok
}

// number reads a number with the JSON grammar: -? int frac? exp?
func (p *parser) number() (any, error) {
	start := p.i
	if p.data[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.fail("a number needs digits")
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("a number needs digits after the decimal point")
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("a number needs digits in its exponent")
		}
	}
	if b := p.data[start:p.i]; len(b) <= 2 {
		if n, ok := smallNumbers[string(b)]; ok {
			return n, nil
		}
	}
	return json.Number(p.data[start:p.i]), nil
}

// smallNumbers are the numbers 0 to 99 as decoded values, allocated once.
var smallNumbers = func() map[string]any {
	m := make(map[string]any, 100)
	for i := 0; i < 100; i++ {
		s := strconv.Itoa(i)
		m[s] = json.Number(s)
	}
	return m
}()
