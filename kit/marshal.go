package kit

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// marshal encodes v as json.Marshal does, with the same bytes and the same
// error.
//
// It encodes the usual values itself: nil, booleans, numbers, plain
// strings, maps with string keys, slices, pointers, interfaces and structs
// without embedded fields. Inside a WebAssembly module that takes a
// fraction of encoding/json's time. Any other value (a type with its own
// encoding, a string that needs escapes, a float that is not finite, values
// nested very deeply) is encoded by json.Marshal, in place.
func marshal(v any) ([]byte, error) {
	e := encoder{b: make([]byte, 0, 512)}
	if err := e.value(reflect.ValueOf(v), 0); err != nil {
		return nil, err
	}
	return e.b, nil
}

type encoder struct{ b []byte }

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	anyMapType        = reflect.TypeFor[map[string]any]()
)

// maxEncodeDepth is how deeply marshal nests before it leaves a value to
// json.Marshal, which also finds cycles.
const maxEncodeDepth = 64

// standard appends json.Marshal's encoding of v; an addressable v is
// encoded through its address, as encoding/json does, so that methods on
// the pointer count.
func (e *encoder) standard(v reflect.Value) error {
	var x any
	switch {
	case v.CanAddr():
		x = v.Addr().Interface()
	case v.IsValid():
		x = v.Interface()
	}
	b, err := json.Marshal(x)
	e.b = append(e.b, b...)
	return err
}

func (e *encoder) value(v reflect.Value, depth int) error {
	if !v.IsValid() {
		e.b = append(e.b, "null"...)
		return nil
	}
	t := v.Type()
	info := infoOf(t)
	if depth > maxEncodeDepth || !v.CanInterface() || info.encodes {
		return e.standard(v)
	}
	switch t.Kind() {
	case reflect.Bool:
		e.b = strconv.AppendBool(e.b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.b = strconv.AppendInt(e.b, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.b = strconv.AppendUint(e.b, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return e.float(v)
	case reflect.String:
		if t == numberType {
			return e.standard(v)
		}
		e.string(v.String())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		return e.value(v.Elem(), depth+1)
	case reflect.Map:
		return e.mapValue(v, depth)
	case reflect.Slice:
		if v.IsNil() {
			e.b = append(e.b, "null"...)
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return e.standard(v) // base64
		}
		return e.array(v, depth)
	case reflect.Struct:
		return e.structValue(v, info.fields, depth)
	default:
		return e.standard(v)
	}
	return nil
}

// float writes a finite float as encoding/json does: in decimal, or with
// an exponent (without a leading zero) below 1e-6 and from 1e21.
func (e *encoder) float(v reflect.Value) error {
	f, bits := v.Float(), v.Type().Bits()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return e.standard(v)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, bits)
	if n := len(e.b); format == 'e' && n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
		e.b[n-2] = e.b[n-1]
		e.b = e.b[:n-1]
	}
	return nil
}

// string writes a string; one that needs escapes in encoding/json's output
// (quotes, backslashes, control characters, <, > and &, U+2028 and U+2029,
// bytes that are not UTF-8) is written by json.Marshal.
func (e *encoder) string(s string) {
	for i := plainRun(s); i < len(s); i += plainRun(s[i:]) {
		if s[i] < utf8.RuneSelf {
			e.escaped(s)
			return
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			e.escaped(s)
			return
		}
		i += size
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

func (e *encoder) escaped(s string) {
	b, _ := json.Marshal(s) // a string always encodes
	e.b = append(e.b, b...)
}

func (e *encoder) array(v reflect.Value, depth int) error {
	e.b = append(e.b, '[')
	for i := range v.Len() {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if err := e.value(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.b = append(e.b, ']')
	return nil
}

func (e *encoder) mapValue(v reflect.Value, depth int) error {
	t := v.Type()
	if t.Key().Kind() != reflect.String || infoOf(t.Key()).encodes {
		return e.standard(v)
	}
	if v.IsNil() {
		e.b = append(e.b, "null"...)
		return nil
	}
	if t == anyMapType {
		return e.anyMap(v.Interface().(map[string]any), depth)
	}
	keys := make([]string, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		keys = append(keys, it.Key().String())
	}
	return e.members(keys, func(k string) error {
		key := reflect.ValueOf(k)
		if t.Key() != stringType {
			key = key.Convert(t.Key())
		}
		return e.value(v.MapIndex(key), depth+1)
	})
}

// anyMap writes a map[string]any, the usual map of a result, without
// looking up each value by reflection.
func (e *encoder) anyMap(m map[string]any, depth int) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return e.members(keys, func(k string) error { return e.value(reflect.ValueOf(m[k]), depth+1) })
}

// members writes an object of keys, in order, each value written by value.
func (e *encoder) members(keys []string, value func(k string) error) error {
	slices.Sort(keys)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.string(k)
		e.b = append(e.b, ':')
		if err := value(k); err != nil {
			return err
		}
	}
	e.b = append(e.b, '}')
	return nil
}

func (e *encoder) structValue(v reflect.Value, fields *structFields, depth int) error {
	if fields == nil || !fields.plain {
		return e.standard(v)
	}
	e.b = append(e.b, '{')
	first := true
	for _, f := range fields.list {
		fv := v.Field(f.index)
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		if !first {
			e.b = append(e.b, ',')
		}
		first = false
		e.b = append(e.b, '"')
		e.b = append(e.b, f.name...)
		e.b = append(e.b, '"', ':')
		if err := e.value(fv, depth+1); err != nil {
			return err
		}
	}
	e.b = append(e.b, '}')
	return nil
}

// isEmptyValue is encoding/json's "empty" of omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// plainName reports whether a field name is written as it is, quoted:
// printable ASCII that needs no escape.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
