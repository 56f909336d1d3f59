package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// jsonInputs are values of every form: the usual, the odd and the invalid.
var jsonInputs = []string{
	`{"other":1,"e\\x":2,"é":3,"a-b.c":4,"a b":5,"Comma":6,"omit":7,"Other":8,"Escaped":9,"E\\X":10,"!a":11}`,
	`null`, `true`, `false`, `0`, `-0`, `1`, `-12`, `3.5`, `1e3`, `-1.5E-7`, `1e400`, `9223372036854775807`,
	`9223372036854775808`, `-9223372036854775809`, `18446744073709551616`, `300`, `-1`,
	`""`, `"plain"`, `"é ✓"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u2713"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`,
	"\"bad \xff utf8\"", "\"bad \xc3\"", `"<&>"`, `"\u003c"`,
	`[]`, `[1,2,3]`, `[1, "two", null, true, {"a": [1.5]}]`, `[[],[[]]]`,
	`{}`, `{"text":"hello","done":true}`, `{"Text":"upper","DONE":false}`, `{"text":1}`, `{"text":null,"done":null}`,
	`{"text":"a","text":"b"}`, `{"n":1,"f":2.5,"u":3,"i8":127,"tags":["x","y"],"m":{"a":1,"b":2},"p":{"text":"in"},"any":{"k":[1,"s"]},"raw":{"keep": [1, 2]}}`,
	`{"i8":128}`, `{"u":-1}`, `{"f":"x"}`, `{"tags":"x"}`, `{"tags":[1]}`, `{"m":[]}`, `{"m":{"a":"x"}}`, `{"p":null}`, `{"raw":null}`,
	`{"when":"2026-01-02T03:04:05Z"}`, `{"when":"yesterday"}`, `{"when":null,"pu":null,"v":null}`, `{"pu":{"x":1},"v":[1],"pp":"s"}`, `{"b64":"aGk="}`, `{"num":12.50}`, `{"unknown":{"deep":[{"x":"}"}]},"text":"after"}`,
	` { "text" : "spaced" , "tags" : [ "a" , "b" ] } `, "{\"text\":\"tab\"}\n",
	// invalid
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`,
	`"open`, "\"ctl \x01\"", `"\x"`, `"\u12"`, `"\u12G4"`, `{"a":1} x`, `1 2`, `[` + "\x00" + `]`, `NaN`,
}

type note struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
}

type wide struct {
	Text    string            `json:"text"`
	N       int               `json:"n"`
	I8      int8              `json:"i8"`
	U       uint              `json:"u"`
	F       float64           `json:"f"`
	Tags    []string          `json:"tags"`
	M       map[string]int    `json:"m"`
	P       *note             `json:"p"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	When    time.Time         `json:"when"`
	B64     []byte            `json:"b64"`
	Num     json.Number       `json:"num"`
	Skipped string            `json:"-"`
	Named   map[label]float32 `json:"named"`
	hidden  int
}

type label string

// pointerUnmarshaler decodes itself by a method of its pointer.
type pointerUnmarshaler struct{ N int }

func (p *pointerUnmarshaler) UnmarshalJSON(b []byte) error {
	p.N = len(b)
	return nil
}

// withPointers holds values that decode themselves, by pointer and in
// place.
type withPointers struct {
	When *time.Time          `json:"when"`
	PU   *pointerUnmarshaler `json:"pu"`
	V    pointerUnmarshaler  `json:"v"`
	PP   **note              `json:"pp"`
}

type withString struct {
	N int `json:"n,string"`
}

type embedded struct {
	note
	Extra int
}

type folded struct {
	Name string
	NAME string `json:"name"`
}

// targets make a new value of each type to decode into; prefilled ones
// hold values before decoding, which decoding merges into or replaces.
var targets = []func() any{
	func() any { return new(any) },
	func() any { return new(string) },
	func() any { return new(int) },
	func() any { return new(int8) },
	func() any { return new(uint16) },
	func() any { return new(float32) },
	func() any { return new(float64) },
	func() any { return new(bool) },
	func() any { return new(*int) },
	func() any { return new([]any) },
	func() any { return new([]int) },
	func() any { return new(map[string]any) },
	func() any { return new(map[string]string) },
	func() any { return new(note) },
	func() any { return new(wide) },
	func() any { return new(withString) },
	func() any { return new(embedded) },
	func() any { return new(folded) },
	func() any { return new(tagForms) },
	func() any { return new(json.RawMessage) },
	func() any { return new(time.Time) },
	func() any { return new(*time.Time) },
	func() any { return new(pointerUnmarshaler) },
	func() any { return new(*pointerUnmarshaler) },
	func() any { return new(withPointers) },
	func() any { return &withPointers{When: new(time.Time), PU: &pointerUnmarshaler{N: 1}} },
	func() any { return &note{Text: "before", Done: true} },
	func() any {
		return &wide{Tags: []string{"old1", "old2", "old3"}, M: map[string]int{"kept": 9}, P: &note{Text: "p before"}}
	},
	func() any { s := []int{7, 8, 9}; return &s[:1:3][0] },
	func() any { s := make([]note, 1, 4); s[0].Done = true; return &s },
	// Structs without a name: one has only the methods of what it embeds,
	// the other none.
	func() any { return new(struct{ pointerUnmarshaler }) },
	func() any { return new(struct{ time.Time }) },
	func() any {
		return new(struct {
			Text string `json:"text"`
		})
	},
}

// TestUnmarshalIsEncodingJSON decodes every input into every target with
// unmarshal and with json.Unmarshal: the values and the errors must be the
// same.
func TestUnmarshalIsEncodingJSON(t *testing.T) {
	for _, input := range jsonInputs {
		for _, target := range targets {
			sameAsEncodingJSON(t, []byte(input), target)
		}
	}
}

// TestCodecConcurrently decodes every input into every target and encodes
// every value from several goroutines at once, each going through the
// types in its own order: each value must still be read and written by its
// own type's record, whichever type another goroutine looked up last.
func TestCodecConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range targets {
				if g%2 == 1 {
					i = len(targets) - 1 - i
				}
				for _, input := range jsonInputs {
					sameAsEncodingJSON(t, []byte(input), targets[i])
				}
			}
			values := marshalValues()
			for i := range values {
				if g%2 == 1 {
					i = len(values) - 1 - i
				}
				sameEncoding(t, values[i])
			}
		})
	}
	wg.Wait()
}

func sameAsEncodingJSON(t *testing.T, data []byte, target func() any) {
	t.Helper()
	got, want := target(), target()
	gotErr, wantErr := unmarshal(data, got), json.Unmarshal(data, want)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("%q into %T: error %v, encoding/json %v", data, got, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q into %T: %#v, encoding/json %#v", data, got, reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, input := range jsonInputs {
		f.Add([]byte(input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, target := range targets {
			sameAsEncodingJSON(t, data, target)
		}
	})
}

func TestValidIsEncodingJSON(t *testing.T) {
	deep := bytes.Repeat([]byte("["), maxDepth) // at the limit
	deep = append(deep, bytes.Repeat([]byte("]"), maxDepth)...)
	tooDeep := append([]byte("["), append(deep, ']')...) // one past it
	for _, input := range append(jsonInputs, string(deep), string(tooDeep)) {
		if got, want := valid([]byte(input)), json.Valid([]byte(input)); got != want {
			t.Errorf("valid(%.40q) = %v, json.Valid %v", input, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, input := range jsonInputs {
		f.Add([]byte(input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := valid(data), json.Valid(data); got != want {
			t.Errorf("valid(%q) = %v, json.Valid %v", data, got, want)
		}
	})
}

// requests are requests as the host writes them, and as it never does.
var requests = []string{
	`{"capability":"notes.summary","kind":"tool","trigger":"invoke","arguments":{"limit":2},"query":null,` +
		`"instance":{"id":"inst_1","installation_id":"inl_1","generation":3},` +
		`"plugin_storage":{"storage_revision":7,"namespaces":{"notes":[{"key":"a","value":{"text":"one \u003c two","n":[1,{"x":"]"}]},"revision":4},` +
		`{"key":"b","value":"four","revision":7}],"empty":[],"none":null}}}`,
	`{"capability":"c","kind":"data","trigger":"invoke","arguments":{},"query":"q \"x\"","instance":{"id":"i","installation_id":"l","generation":1}}`,
	`{"capability":"c","arguments":null,"plugin_storage":null,"round":2,"fetched":{"a":{"status":200,"headers":{"content-type":"text/plain"},"body":"hi"}},"carry":{"ids":[1,2]}}`,
	`{"capability":"c","round":1.5}`, `{"capability":"c","round":-3}`, `{"Capability":"upper","KIND":"k"}`, `{"capability":"c","extra":1}`,
	`{"plugin_storage":{"storage_revision":1},"plugin_storage":{"namespaces":{"a":[]}}}`,
	`{"plugin_storage":{"namespaces":{"a":[{"key":"k","revision":1}]}},"plugin_storage":{"namespaces":{"b":[]}}}`,
	`{"instance":{"id":"x"},"instance":{"generation":2}}`, `{"capability":null}`, `{"capability":"\ud83d"}`,
	`{"capability":"c"} trailing`, `{"capability":"c"}` + "\n", `[]`, `null`, ``, `{"capability":"c",}`,
	`{"plugin_storage":{"namespaces":{"a":[{"key":"k","value":{"x":1},"revision":9223372036854775808}]}}}`,
	`{"plugin_storage":{"namespaces":{"a":{"key":"k"}}}}`, `{"fetched":{"a":{"status":"x"}}}`,
}

// TestDecodeRequestIsEncodingJSON reads every request with decodeRequest
// and with encoding/json's decoder: the requests and errors must be the
// same.
func TestDecodeRequestIsEncodingJSON(t *testing.T) {
	for _, input := range requests {
		sameRequest(t, []byte(input))
	}
}

func sameRequest(t *testing.T, data []byte) {
	t.Helper()
	var got, want Request
	gotErr := decodeRequest(data, &got)
	wantErr := json.NewDecoder(bytes.NewReader(data)).Decode(&want)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("%q: error %v, encoding/json %v", data, gotErr, wantErr)
	}
	// The items the kit's reader read are marked as checked already; an
	// item decodes as encoding/json decodes its value either way.
	if got.PluginStorage != nil {
		for _, items := range got.PluginStorage.Namespaces {
			for i, it := range items {
				var fast, slow any
				fastErr, slowErr := it.Decode(&fast), json.Unmarshal(it.Value, &slow)
				if fmt.Sprint(errors.Unwrap(fastErr)) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
					t.Errorf("%q: item %q decodes to %v (%v), encoding/json %v (%v)", data, it.Key, fast, fastErr, slow, slowErr)
				}
				items[i].checked = nil
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\n got %+v\nwant %+v", data, got, want)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, input := range requests {
		f.Add([]byte(input))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameRequest(t, data) })
}

// TestFastPathTaken checks the inputs the host writes are read by the
// kit's own reader, not handed to encoding/json.
func TestFastPathTaken(t *testing.T) {
	var req Request
	d := reader{b: []byte(requests[0])}
	if !valid(d.b) || !d.request(&req) || !d.end() {
		t.Fatal("the host's request went to encoding/json")
	}
	var w wide
	d = reader{b: []byte(jsonInputs[slicesIndex(jsonInputs, `{"text":"hello","done":true}`)])}
	if !d.into(reflect.ValueOf(&w).Elem()) || w.Text != "hello" {
		t.Fatalf("a plain object went to encoding/json: %+v", w)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	panic(v)
}

// TestItemDecodeChecksOtherValues: only the value the request held is
// decoded without checking it again; a value put in its place, or an item
// made by the handler, is checked as encoding/json checks it.
func TestItemDecodeChecksOtherValues(t *testing.T) {
	var req Request
	if err := decodeRequest([]byte(requests[0]), &req); err != nil {
		t.Fatal(err)
	}
	held := req.Items("notes")[0]
	var v struct{ Text string }
	if err := held.Decode(&v); err != nil || v.Text != "one < two" {
		t.Fatalf("the request's item: %+v, %v", v, err)
	}
	for name, it := range map[string]Item{
		"replaced": {Key: held.Key, Value: json.RawMessage(`{"text":"open`), checked: held.checked},
		"cut":      {Key: held.Key, Value: held.Value[:5], checked: held.checked},
		"made":     {Key: "m", Value: json.RawMessage(`{"text":"ctl ` + "\x01" + `"}`)},
	} {
		var got, want struct{ Text string }
		err, wantErr := it.Decode(&got), json.Unmarshal(it.Value, &want)
		if wantErr == nil || fmt.Sprint(errors.Unwrap(err)) != fmt.Sprint(wantErr) || got != want {
			t.Errorf("%s: %+v, %v; encoding/json %+v, %v", name, got, err, want, wantErr)
		}
	}
}

// TestRequestStringsShareNothingTheHandlerHolds: the request's strings are
// read in place, never from the bytes a handler is given (the arguments,
// the items' values, the carry), so that writing over those changes no
// string of the request.
func TestRequestStringsShareNothingTheHandlerHolds(t *testing.T) {
	stringsOf := func(r *Request) []string {
		s := []string{r.Capability, r.Kind, r.Trigger, r.Instance.ID, r.Instance.InstallationID}
		if r.Query != nil {
			s = append(s, *r.Query)
		}
		if r.PluginStorage != nil {
			for _, ns := range slices.Sorted(maps.Keys(r.PluginStorage.Namespaces)) {
				s = append(s, ns)
				for _, it := range r.PluginStorage.Namespaces[ns] {
					s = append(s, it.Key)
				}
			}
		}
		return s
	}
	for _, input := range requests[:3] {
		var req, want Request
		if err := decodeRequest([]byte(input), &req); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(input), &want); err != nil {
			t.Fatal(err)
		}
		// What the handler decodes from those bytes is its own as well.
		held := [][]byte{req.Arguments, req.Carry}
		var decoded, wantDecoded []any
		if req.PluginStorage != nil {
			for _, ns := range slices.Sorted(maps.Keys(req.PluginStorage.Namespaces)) {
				for _, it := range req.PluginStorage.Namespaces[ns] {
					held = append(held, it.Value)
					var v, w any
					it.Decode(&v)
					json.Unmarshal(it.Value, &w)
					decoded, wantDecoded = append(decoded, v), append(wantDecoded, w)
				}
			}
		}
		var args, wantArgs map[string]any
		req.Args(&args)
		json.Unmarshal(req.Arguments, &wantArgs)
		for _, b := range held {
			for i := range b {
				b[i] = 'x'
			}
		}
		if got, want := stringsOf(&req), stringsOf(&want); !slices.Equal(got, want) {
			t.Errorf("%q: after writing over the handler's bytes: %q, want %q", input, got, want)
		}
		if !reflect.DeepEqual(decoded, wantDecoded) || !reflect.DeepEqual(args, wantArgs) {
			t.Errorf("%q: after writing over the handler's bytes, its values are %v %v, want %v %v", input, decoded, args, wantDecoded, wantArgs)
		}
	}
}
