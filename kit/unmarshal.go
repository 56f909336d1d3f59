package kit

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// unmarshal decodes the JSON value data into v as json.Unmarshal does, with
// the same result and the same error.
//
// It decodes the usual values itself, in one pass over the checked JSON:
// structs without embedded fields, maps with string keys, slices, pointers,
// strings, numbers, booleans, json.RawMessage and empty interfaces. Inside
// a WebAssembly module that takes a fraction of encoding/json's time. On
// anything else (invalid JSON, a type with its own decoding, a value of the
// wrong type) it leaves the work to json.Unmarshal, which sets again what
// was set and returns its own answer.
func unmarshal(data []byte, v any) error { return unmarshalChecked(data, v, false) }

// unmarshalChecked is unmarshal of data that is known to be valid JSON when
// checked is true.
func unmarshalChecked(data []byte, v any, checked bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() && (checked || valid(data)) {
		d := reader{b: data}
		if d.into(rv.Elem()) {
			return nil
		}
	}
	return json.Unmarshal(data, v)
}

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	numberType          = reflect.TypeFor[json.Number]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	stringType          = reflect.TypeFor[string]()
)

// typeInfo is what the codec needs to know of a type, found once per type.
type typeInfo struct {
	t       reflect.Type
	decodes bool // it, or a pointer to it, decodes by methods of its own
	encodes bool // it, or a pointer to it, encodes by methods of its own
	// fields are a struct's fields; nil for any other kind, and for a
	// struct the codec leaves to encoding/json (fieldsOf).
	fields *structFields
}

// methodless is the typeInfo of the types that cannot have methods and
// are not structs.
var methodless = &typeInfo{}

// types holds the typeInfo of every type looked up. Its room is made at
// initialization, so that the state every run starts from holds it: the
// kit's own types fill a map made without room, and a run that adds its
// handler's would grow it first, every run.
var (
	typesMu sync.RWMutex
	types   = make(map[reflect.Type]*typeInfo, 64)
	last    atomic.Pointer[typeInfo] // the last one looked up in types
)

// infoOf returns what the codec needs to know of t. A module decodes and
// encodes values of a few types many times over, so the one looked up last
// is kept apart from the rest, where a lookup costs more.
func infoOf(t reflect.Type) *typeInfo {
	// Only a defined type, a pointer or a struct (by its embedded fields)
	// has methods, or has a pointer that has.
	k := t.Kind()
	if k == reflect.Interface || t.PkgPath() == "" && k != reflect.Struct && k != reflect.Pointer {
		return methodless
	}
	if info := last.Load(); info != nil && info.t == t {
		return info
	}
	typesMu.RLock()
	info, ok := types[t]
	typesMu.RUnlock()
	if !ok {
		// Every run of a module finds the types of its handler anew (the
		// state it starts from knows only the kit's): this is on the path
		// of every run, not only the first.
		info = &typeInfo{t: t}
		if k == reflect.Struct {
			info.fields = fieldsOf(t)
		}
		// A struct type without a name has no methods but those of its
		// embedded fields: with none (fields set), neither it nor its
		// pointer has any, and neither need be looked at.
		mayHaveMethods := info.fields == nil || t.Name() != ""
		if mayHaveMethods && (t.NumMethod() > 0 || reflect.PointerTo(t).NumMethod() > 0) {
			info.decodes = implementsAny(t, unmarshalerType, textUnmarshalerType)
			info.encodes = implementsAny(t, marshalerType, textMarshalerType)
		}
		typesMu.Lock()
		if known, ok := types[t]; ok {
			info = known
		} else {
			types[t] = info
		}
		typesMu.Unlock()
	}
	last.Store(info)
	return info
}

// implementsAny reports whether t, or a pointer to it, implements one of
// the interfaces.
func implementsAny(t reflect.Type, interfaces ...reflect.Type) bool {
	p := reflect.PointerTo(t)
	for _, i := range interfaces {
		if t.Implements(i) || p.Implements(i) {
			return true
		}
	}
	return false
}

// into decodes the value at i into v, on input that is valid JSON; false
// means the value is not one it decodes.
func (d *reader) into(v reflect.Value) bool {
	d.space()
	t := v.Type()
	if t == rawMessageType {
		raw, ok := d.raw()
		if ok {
			v.SetBytes(append(v.Bytes()[:0], raw...))
		}
		return ok
	}
	info := infoOf(t)
	if t == numberType || info.decodes {
		return false
	}
	if d.null() {
		switch t.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			v.SetZero()
		}
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.into(v.Elem())
	case reflect.Interface:
		if t.NumMethod() != 0 || !v.IsNil() {
			return false
		}
		x, ok := d.anyValue()
		if ok && x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return ok
	case reflect.Struct:
		return d.structInto(v, info.fields)
	case reflect.Map:
		return d.mapInto(v)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return false // base64
		}
		return d.sliceInto(v)
	case reflect.String:
		s, ok := d.text()
		if ok {
			v.SetString(s)
		}
		return ok
	case reflect.Bool:
		switch {
		case d.word("true"):
			v.SetBool(true)
		case d.word("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(d.number(), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(d.number(), 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
		return true
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(d.number(), t.Bits())
		if err != nil || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
		return true
	}
	return false
}

// number returns the number at i, or "" when there is none.
func (d *reader) number() string {
	start := d.i
	if !d.validNumber() {
		d.i = start
		return ""
	}
	return string(d.b[start:d.i])
}

// text reads a string: false when it is not one of valid JSON.
func (d *reader) text() (string, bool) {
	start := d.i
	if d.i == len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	n, ascii := stringRun(d.b[d.i+1:])
	if end := d.i + 1 + n; end < len(d.b) && d.b[end] == '"' {
		// No escapes: the string is its bytes, when they are UTF-8.
		d.i = end + 1
		if s := d.b[start+1 : end]; ascii || utf8.Valid(s) {
			return d.stringOf(s), true
		}
		return d.unquote(start)
	}
	if !d.validString() {
		return "", false
	}
	s := d.b[start+1 : d.i-1]
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return d.unquote(start)
		}
		if c == '\\' {
			i++
			switch c = s[i]; c {
			case 'u':
				return d.unquote(start)
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			}
		}
		b = append(b, c)
	}
	return string(b), true
}

// unquote decodes the string from start to i, which is valid JSON, as
// encoding/json does: escapes of UTF-16, and bytes that are not UTF-8.
func (d *reader) unquote(start int) (string, bool) {
	var out string
	return out, json.Unmarshal(d.b[start:d.i], &out) == nil
}

// anyValue reads a value as encoding/json decodes it into an empty
// interface.
func (d *reader) anyValue() (any, bool) {
	d.space()
	switch d.b[d.i] {
	case '{':
		m := map[string]any{}
		ok := d.members(func(name []byte) bool {
			x, ok := d.anyValue()
			m[string(name)] = x
			return ok
		})
		return m, ok
	case '[':
		s := []any{}
		d.i++
		if d.next(']') {
			return s, true
		}
		for {
			x, ok := d.anyValue()
			if !ok {
				return nil, false
			}
			s = append(s, x)
			if !d.next(',') {
				return s, d.next(']')
			}
		}
	case '"':
		return d.text()
	case 't':
		return true, d.word("true")
	case 'f':
		return false, d.word("false")
	case 'n':
		return nil, d.word("null")
	}
	f, err := strconv.ParseFloat(d.number(), 64)
	return f, err == nil
}

// members reads an object's members, calling member with each name and the
// reader at its value.
func (d *reader) members(member func(name []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		name, ok := d.name()
		if !ok || !d.next(':') || !member(name) {
			return false
		}
		if !d.next(',') {
			return d.next('}')
		}
	}
}

func (d *reader) structInto(v reflect.Value, fields *structFields) bool {
	if fields == nil {
		return false
	}
	return d.members(func(name []byte) bool {
		if f := fields.lookup(name); f >= 0 {
			return d.into(v.Field(f))
		}
		_, ok := d.raw()
		return ok
	})
}

func (d *reader) mapInto(v reflect.Value) bool {
	t := v.Type()
	if t.Key().Kind() != reflect.String || infoOf(t.Key()).decodes {
		return false
	}
	if d.b[d.i] != '{' {
		return false
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	return d.members(func(name []byte) bool {
		elem := reflect.New(t.Elem()).Elem()
		if !d.into(elem) {
			return false
		}
		key := reflect.ValueOf(string(name))
		if t.Key() != stringType {
			key = key.Convert(t.Key())
		}
		v.SetMapIndex(key, elem)
		return true
	})
}

// sliceInto decodes an array into a slice as encoding/json does: into the
// slice's elements as they are, then past them.
func (d *reader) sliceInto(v reflect.Value) bool {
	if !d.next('[') {
		return false
	}
	i := 0
	if !d.next(']') {
		for ; ; i++ {
			if i >= v.Cap() {
				v.Grow(1)
			}
			if i >= v.Len() {
				v.SetLen(i + 1)
			}
			if !d.into(v.Index(i)) {
				return false
			}
			if !d.next(',') {
				if !d.next(']') {
					return false
				}
				i++
				break
			}
		}
	}
	if i < v.Len() {
		v.SetLen(i)
	}
	if i == 0 {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	return true
}

// structFields are the fields of a struct type as encoding/json names
// them, for both unmarshal and marshal.
type structFields struct {
	list []structField
	// plain is set when every name is written as it is, quoted: printable
	// ASCII that needs no escape.
	plain bool
}

type structField struct {
	name      string
	index     int
	omitEmpty bool
}

// lookup returns the index of the field of a member's name, matched as
// encoding/json matches it (exactly, else without regard to case), or -1.
func (s *structFields) lookup(name []byte) int {
	for _, f := range s.list {
		if f.name == string(name) {
			return f.index
		}
	}
	for _, f := range s.list {
		if strings.EqualFold(f.name, string(name)) {
			return f.index
		}
	}
	return -1
}

// fieldsOf returns the fields of a struct type, or nil when the type is not
// one the kit's codec handles: one with embedded fields, a field with an
// option other than omitempty (such as ",string"), or two fields whose
// names differ only in case. infoOf keeps them.
func fieldsOf(t reflect.Type) *structFields {
	s := &structFields{list: make([]structField, 0, t.NumField()), plain: true}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			s = nil
			break
		}
		if !f.IsExported() {
			continue
		}
		tag := jsonTag(f.Tag)
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		field := structField{index: i}
		for opts != "" {
			var opt string
			opt, opts, _ = strings.Cut(opts, ",")
			switch opt {
			case "":
			case "omitempty":
				field.omitEmpty = true
			default:
				s = nil
			}
		}
		if s == nil {
			break
		}
		if !validTagName(name) {
			name = f.Name
		}
		for _, other := range s.list {
			if strings.EqualFold(other.name, name) {
				s = nil
				break
			}
		}
		if s == nil {
			break
		}
		field.name = name
		s.plain = s.plain && plainName(name)
		s.list = append(s.list, field)
	}
	return s
}

// jsonTag returns the json key's value of a struct tag: read in place when
// the tag begins with it and it is printable ASCII without an escape, as
// tags usually are.
func jsonTag(tag reflect.StructTag) string {
	if v, ok := strings.CutPrefix(string(tag), `json:"`); ok {
		for i := 0; i < len(v) && ' ' <= v[i] && v[i] <= '~' && v[i] != '\\'; i++ {
			if v[i] == '"' {
				return v[:i]
			}
		}
	}
	return tag.Get("json")
}

// tagPunctuation is the punctuation encoding/json takes in a tag's name.
const tagPunctuation = "!#$%&()*+-./:;<=>?@[]^_{|}~ "

// validTagName reports whether encoding/json takes a tag's name as the
// field's: a name of letters, digits and some punctuation.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c < utf8.RuneSelf && strings.IndexByte(tagPunctuation, byte(c)) >= 0:
		case c < utf8.RuneSelf, !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
