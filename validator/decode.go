package validator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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

// document is a decoded JSON document: values are map[string]any, []any,
// string, json.Number, bool or nil. order gives each JSON Pointer its position
// in the text, so problems can be reported in document order.
type document struct {
	root  any
	order map[string]int
}

// decode parses JSON strictly: duplicate object keys, trailing data and nesting
// deeper than maxDecodeDepth are problems. Every problem is added to c.
func decode(data []byte, c *checker) (*document, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	d := &document{order: map[string]int{}}
	p := &parser{dec: dec, doc: d, c: c, data: data}
	root, err := p.value("", 0)
	if err != nil {
		p.syntax(err)
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		c.errorf("", CodeSyntax, "unexpected data after the JSON document at %s", p.where(dec.InputOffset()))
		return nil, false
	}
	d.root = root
	return d, !p.failed
}

type parser struct {
	dec    *json.Decoder
	doc    *document
	c      *checker
	data   []byte
	n      int
	failed bool
}

var errTooDeep = errors.New("too deep")

func (p *parser) value(path string, depth int) (any, error) {
	if depth > maxDecodeDepth {
		return nil, errTooDeep
	}
	p.doc.order[path] = p.n
	p.n++
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				kp := ptr(path, k)
				if _, dup := m[k]; dup {
					p.c.errorf(kp, CodeDuplicateKey, "member %q appears more than once in this object; each member may appear once", k)
					p.failed = true
				}
				v, err := p.value(kp, depth+1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return m, nil
		case '[':
			a := []any{}
			for i := 0; p.dec.More(); i++ {
				v, err := p.value(ptr(path, i), depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %q", t)
	default:
		return t, nil
	}
}

func (p *parser) syntax(err error) {
	if err == errTooDeep {
		p.c.errorf("", CodeTooDeep, "the document nests deeper than %d levels", maxDecodeDepth)
		return
	}
	var se *json.SyntaxError
	off := p.dec.InputOffset()
	msg := err.Error()
	if errors.As(err, &se) {
		off = se.Offset
		msg = se.Error()
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		msg = "the document ends early"
		off = int64(len(p.data))
	}
	p.c.errorf("", CodeSyntax, "invalid JSON at %s: %s", p.where(off), msg)
}

// where turns a byte offset into "line L, column C".
func (p *parser) where(off int64) string {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	before := p.data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - strings.LastIndexByte(string(before), '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}
