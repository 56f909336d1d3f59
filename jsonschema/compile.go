package jsonschema

import (
	"encoding/json"
	"fmt"
	"iter"
	"sync"

	"pluginhost/models"
)

// Error is a schema that breaks rules of the subset.
type Error struct {
	Problems []models.Problem
}

func (e *Error) Error() string {
	p := e.Problems[0]
	at := p.Path
	if at == "" {
		at = "the root"
	}
	msg := fmt.Sprintf("schema: %s at %s: %s", p.Code, at, p.Message)
	if n := len(e.Problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Compile reads a schema from JSON text. The problems of a schema that breaks
// the subset come back as an *Error. Compiled schemas are kept, bounded, as
// the same schemas are read again for every run and every check.
func Compile(raw json.RawMessage, root Root) (*Schema, error) {
	cache.Lock()
	e, ok := cache.m[root][string(raw)] // looked up without a copy of raw
	cache.Unlock()
	if ok {
		return e.s, e.err
	}
	s, err := compile(raw, root)
	cache.Lock()
	if cacheSize() >= maxCached {
		clear(cache.m)
	}
	if cache.m[root] == nil {
		cache.m[root] = map[string]cacheEntry{}
	}
	cache.m[root][string(raw)] = cacheEntry{s, err}
	cache.Unlock()
	return s, err
}

// maxCached bounds the compiled schemas kept; a schema is at most MaxNodes
// subschemas.
const maxCached = 512

type cacheEntry struct {
	s   *Schema
	err error
}

// cache keeps compiled schemas by root and text.
var cache = struct {
	sync.Mutex
	m map[Root]map[string]cacheEntry
}{m: map[Root]map[string]cacheEntry{}}

// cacheSize is the number of schemas cache keeps; cache must be locked.
func cacheSize() int {
	n := 0
	for _, byText := range cache.m {
		n += len(byText)
	}
	return n
}

func compile(raw json.RawMessage, root Root) (*Schema, error) {
	v, err := Decode(raw)
	if err != nil {
		return nil, &Error{[]models.Problem{{Code: CodeSchemaInvalid, Message: err.Error()}}}
	}
	var probs []models.Problem
	s := Read("", v, root, func(path, code, msg string) {
		probs = append(probs, models.Problem{Path: path, Code: code, Message: msg})
	})
	if len(probs) > 0 {
		return nil, &Error{probs}
	}
	return s, nil
}

// Validate checks a decoded value against the schema and returns its
// problems, each at the JSON Pointer of the value that breaks the rule. what
// names the schema in messages.
func (s *Schema) Validate(v any, what string) []models.Problem {
	// Most values are valid: a quiet check, which builds no pointers and no
	// messages, tells; only a value with problems is checked again for them.
	bad := false
	quiet := Checker{Quiet: true, Report: func(string, string, string) { bad = true }}
	if quiet.Check("", v, s); !bad {
		return nil
	}
	var probs []models.Problem
	c := Checker{What: what, Report: func(path, code, msg string) {
		probs = append(probs, models.Problem{Path: path, Code: code, Message: msg})
	}}
	c.Check("", v, s)
	return probs
}

// ordered is a decoded object in document order.
type ordered struct {
	keys []string
	vals []any
	// index finds a member of a large object.
	index map[string]int
}

// smallObject is the member count up to which a scan finds a member.
const smallObject = 8

func (o *ordered) add(k string, v any) {
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	switch n := len(o.keys); {
	case n == smallObject+1:
		o.index = make(map[string]int, 2*n)
		for i, k := range o.keys {
			o.index[k] = i
		}
	case n > smallObject+1:
		o.index[k] = n - 1
	}
}

func (o *ordered) Len() int { return len(o.keys) }

func (o *ordered) Get(k string) (any, bool) {
	if o.index != nil {
		i, ok := o.index[k]
		if !ok {
			return nil, false
		}
		return o.vals[i], true
	}
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

func (o *ordered) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for i, k := range o.keys {
			if !yield(k, o.vals[i]) {
				return
			}
		}
	}
}
