package kit

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
	"unsafe"
)

// decodeRequest decodes the request the host wrote into req.
//
// It reads the request as the host writes it (encoding/json's output: the
// fields of Request and no others, numbers that are integers) in one pass
// that also checks it is JSON, keeping the arguments, the items' values and
// the carry as slices of b; a request of any other form
// is decoded by encoding/json, whose answer, result or error, is then the
// one returned. Inside a WebAssembly module, encoding/json spends most of a
// short run reading the snapshot; this reader takes a fraction of that.
//
// b must not change afterwards: the request's strings (its capability, its
// Instance's ids, the namespaces' names, the items' keys) are its bytes, not
// copies, which inside a module saves an allocation each. None of them lies
// in the bytes the handler is given (the arguments, the items' values, the
// carry), nor in any string decoded from those.
func decodeRequest(b []byte, req *Request) error {
	d := reader{b: b, shared: true}
	var fast Request
	if d.request(&fast) && d.end() {
		*req = fast
		return nil
	}
	*req = Request{}
	return json.NewDecoder(bytes.NewReader(b)).Decode(req)
}

// reader reads JSON from b at i; each method reports false on anything it
// does not expect, and the caller gives up.
type reader struct {
	b []byte
	i int
	// shared: b never changes and is not the caller's to change, so a
	// string without escapes may be its bytes instead of a copy of them.
	shared bool
}

func (d *reader) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// end reports whether nothing but space is left.
func (d *reader) end() bool {
	d.space()
	return d.i == len(d.b)
}

// next consumes c, after space.
func (d *reader) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// null consumes a null, after space, and reports whether there was one.
func (d *reader) null() bool {
	d.space()
	return d.word("null")
}

// object reads an object, calling field for each member with the reader at
// its value (and the name as name returns it); a null is an empty object.
func (d *reader) object(field func(name []byte) bool) bool {
	if d.null() {
		return true
	}
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		name, ok := d.name()
		if !ok || !d.next(':') || !field(name) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// stringOf returns b, a slice of d.b, as a string: b's bytes when d.b is
// shared, else a copy.
func (d *reader) stringOf(b []byte) string {
	if d.shared && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// name reads a member's name, after space. A name without escapes is a
// slice of b, not a copy: it is valid until b changes.
func (d *reader) name() ([]byte, bool) {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '"' {
		n, ascii := stringRun(d.b[d.i+1:])
		if end := d.i + 1 + n; end < len(d.b) && d.b[end] == '"' {
			if s := d.b[d.i+1 : end]; ascii || utf8.Valid(s) {
				d.i = end + 1
				return s, true
			}
		}
	}
	s, ok := d.text()
	return []byte(s), ok
}

// str reads a string.
func (d *reader) str() (string, bool) {
	d.space()
	return d.text()
}

// int reads an integer that fits in 64 bits.
func (d *reader) int() (int64, bool) {
	d.space()
	neg := d.i < len(d.b) && d.b[d.i] == '-'
	if neg {
		d.i++
	}
	start := d.i
	var n uint64
	for ; d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9'; d.i++ {
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(d.b[d.i]-'0')
	}
	digits := d.i - start
	switch {
	case digits == 0, digits > 1 && d.b[start] == '0', n > 1<<63, !neg && n == 1<<63:
		return 0, false
	case d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E'):
		return 0, false
	case neg:
		return -int64(n), true
	}
	return int64(n), true
}

// raw reads any value of valid JSON and returns its bytes.
func (d *reader) raw() (json.RawMessage, bool) {
	d.space()
	start := d.i
	if d.i == len(d.b) {
		return nil, false
	}
	switch d.b[d.i] {
	case '"':
		if !d.skipString() {
			return nil, false
		}
	case '{', '[':
		depth := 0
		for {
			if d.i == len(d.b) {
				return nil, false
			}
			switch d.b[d.i] {
			case '"':
				if !d.skipString() {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			d.i++
			if depth == 0 {
				break
			}
		}
	case 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		for d.i < len(d.b) && !isDelimiter(d.b[d.i]) {
			d.i++
		}
	default:
		return nil, false
	}
	return d.b[start:d.i:d.i], true
}

// checkedRaw reads a value of valid JSON inside depth arrays and objects,
// checking it as valid does, and returns its bytes.
func (d *reader) checkedRaw(depth int) (json.RawMessage, bool) {
	d.space()
	start := d.i
	if !d.validValue(depth) {
		return nil, false
	}
	return d.b[start:d.i:d.i], true
}

// skipString moves past the string at i.
func (d *reader) skipString() bool {
	for d.i++; d.i < len(d.b); d.i++ {
		switch d.b[d.i] {
		case '\\':
			d.i++
		case '"':
			d.i++
			return true
		}
	}
	return false
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func (d *reader) request(r *Request) bool {
	return d.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "capability":
			r.Capability, ok = d.str()
		case "kind":
			r.Kind, ok = d.str()
		case "trigger":
			r.Trigger, ok = d.str()
		case "arguments":
			r.Arguments, ok = d.checkedRaw(1)
		case "query":
			if d.null() {
				r.Query, ok = nil, true
				break
			}
			var q string
			q, ok = d.str()
			r.Query = &q
		case "instance":
			ok = d.instance(&r.Instance)
		case "plugin_storage":
			if d.null() {
				r.PluginStorage, ok = nil, true
				break
			}
			if r.PluginStorage == nil {
				r.PluginStorage = &Storage{}
			}
			ok = d.storage(r.PluginStorage)
		case "round":
			var n int64
			n, ok = d.int()
			r.Round = int(n)
			ok = ok && int64(r.Round) == n
		case "fetched":
			// Rounds of fetches are rare and their answers small: the
			// standard decoder reads them.
			var raw json.RawMessage
			if raw, ok = d.checkedRaw(1); ok {
				ok = unmarshal(raw, &r.Fetched) == nil
			}
		case "carry":
			r.Carry, ok = d.checkedRaw(1)
		}
		return ok
	})
}

func (d *reader) instance(in *Instance) bool {
	return d.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "id":
			in.ID, ok = d.str()
		case "installation_id":
			in.InstallationID, ok = d.str()
		case "generation":
			in.Generation, ok = d.int()
		}
		return ok
	})
}

func (d *reader) storage(s *Storage) bool {
	return d.object(func(name []byte) bool {
		switch string(name) {
		case "storage_revision":
			var ok bool
			s.Revision, ok = d.int()
			return ok
		case "namespaces":
			if d.null() {
				s.Namespaces = nil
				return true
			}
			if s.Namespaces == nil {
				s.Namespaces = map[string][]Item{}
			}
			return d.object(func(ns []byte) bool {
				items, ok := d.items()
				s.Namespaces[d.stringOf(ns)] = items
				return ok
			})
		}
		return false
	})
}

func (d *reader) items() ([]Item, bool) {
	if d.null() {
		return nil, true
	}
	if !d.next('[') {
		return nil, false
	}
	items := []Item{}
	if d.next(']') {
		return items, true
	}
	for {
		var it Item
		ok := d.object(func(name []byte) bool {
			var ok bool
			switch string(name) {
			case "key":
				it.Key, ok = d.str()
			case "value":
				// Inside the request, its storage, the namespaces, the
				// namespace's items and the item.
				it.Value, ok = d.checkedRaw(5)
				it.checked = it.Value
			case "revision":
				it.Revision, ok = d.int()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		items = append(items, it)
		if d.next(',') {
			continue
		}
		return items, d.next(']')
	}
}

// maxDepth is how deeply values may nest, as encoding/json allows.
const maxDepth = 10000

// valid reports whether b is one JSON value (RFC 8259), with nothing but
// space around it, as json.Valid does.
func valid(b []byte) bool {
	d := reader{b: b}
	return d.validValue(0) && d.end()
}

func (d *reader) validValue(depth int) bool {
	d.space()
	if d.i == len(d.b) {
		return false
	}
	switch d.b[d.i] {
	case '{', '[':
		if depth >= maxDepth {
			return false
		}
		close := byte('}')
		if d.b[d.i] == '[' {
			close = ']'
		}
		d.i++
		if d.next(close) {
			return true
		}
		for {
			if close == '}' {
				d.space()
				if !d.validString() || !d.next(':') {
					return false
				}
			}
			if !d.validValue(depth + 1) {
				return false
			}
			if d.next(',') {
				continue
			}
			return d.next(close)
		}
	case '"':
		return d.validString()
	case 't':
		return d.word("true")
	case 'f':
		return d.word("false")
	case 'n':
		return d.word("null")
	}
	return d.validNumber()
}

func (d *reader) word(w string) bool {
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

func (d *reader) validString() bool {
	if d.i == len(d.b) || d.b[d.i] != '"' {
		return false
	}
	for d.i++; ; d.i++ {
		n, _ := stringRun(d.b[d.i:])
		if d.i += n; d.i == len(d.b) {
			return false
		}
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return true
		case c < 0x20:
			return false
		}
		// A backslash.
		if d.i++; d.i == len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if len(d.b)-d.i < 5 {
				return false
			}
			for _, h := range d.b[d.i+1 : d.i+5] {
				if !isHex(h) {
					return false
				}
			}
			d.i += 4
		default:
			return false
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (d *reader) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

func (d *reader) validNumber() bool {
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i == len(d.b):
		return false
	case d.b[d.i] == '0':
		d.i++
	case d.digits() == 0:
		return false
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return false
		}
	}
	return true
}
