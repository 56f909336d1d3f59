package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"testing"
	"time"
)

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("k-" + string(k)), nil }

type pointerMarshaler struct{ N int }

func (p *pointerMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"pointer":%d}`, p.N)), nil
}

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("no") }

type tagged struct {
	Name     string            `json:"name"`
	Empty    string            `json:"empty,omitempty"`
	Zero     int               `json:"zero,omitempty"`
	NilMap   map[string]int    `json:"nil_map,omitempty"`
	NilSlice []int             `json:"nil_slice"`
	Skip     int               `json:"-"`
	Dash     int               `json:"-,"`
	Untagged float64           ``
	Bad      string            `json:"a\"b"`
	Str      int               `json:"str,string"`
	Zeroed   time.Time         `json:"zeroed,omitzero"`
	Ptr      *tagged           `json:"ptr,omitempty"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Keys     map[textKey]int   `json:"keys,omitempty"`
	PM       pointerMarshaler  `json:"pm"`
	Floats   []float32         `json:"floats,omitempty"`
	Bytes    []byte            `json:"bytes"`
	Arr      [2]int            `json:"arr"`
	Labels   map[label]float64 `json:"labels"`
	hidden   int
}

// tagForms has the forms a tag's json name takes that the kit reads
// itself.
type tagForms struct {
	Other   int `xml:"o" json:"other"`
	Escaped int `json:"e\\x"`
	Accent  int `json:"é"`
	Punct   int `json:"a-b.c"`
	Spaced  int `json:"a b"`
	Comma   int `json:",omitempty"`
	Omit    int `json:"omit,omitempty,"`
	Bang    int `json:"!a"`
}

type plain struct {
	Key   string `json:"key"`
	Words int    `json:"words"`
	Text  string `json:"text"`
	Done  bool   `json:"done,omitempty"`
}

type dup struct {
	A int `json:"x"`
	B int `json:"X"`
}

type withEmbedded struct {
	plain
	More int `json:"more"`
}

type cycle struct {
	Next *cycle `json:"next"`
}

// marshalValues are values of every form marshal meets, and some it hands
// on.
func marshalValues() []any {
	c := &cycle{}
	c.Next = c
	deep := any("bottom")
	for range 100 {
		deep = []any{deep}
	}
	return []any{
		nil, true, false, 0, -12, int8(-128), uint64(math.MaxUint64), 3.5, -0.0, 1e-7, 1e21, 123456789.0, 1e20, 0.000001,
		float32(3.14), float32(1e-7), float32(1e21), math.NaN(), math.Inf(1), 5e-324, math.MaxFloat64,
		"", "plain", "é ✓ 😀", "quote \" and \\", "tab\tnew\nline", "ctl \x01\x7f", "<a href='x'>&</a>", "line\u2028sep\u2029",
		"bad \xff utf8", json.Number("12.50"), json.RawMessage(`{ "a" : [1, 2] }`), json.RawMessage(`{bad`),
		[]any{}, []any{1, "two", nil, map[string]any{"b": 2, "a": []any{1.5}}}, []string(nil), []int{1, 2},
		map[string]any{}, map[string]any(nil), map[string]any{"z": 1, "a": 2, "<": 3, "é": 4, "": 5},
		map[int]string{2: "b", 1: "a"}, map[textKey]int{"x": 1}, map[label]int{"b": 1, "a": 2},
		plain{Key: "k", Words: 3, Text: "some words"}, []plain{{Key: "a"}, {Key: "b", Done: true}}, &plain{Text: "pointer"},
		tagged{Name: "n", NilSlice: nil, Ptr: &tagged{Name: "inner", Any: map[string]any{"x": []any{float32(1.5)}}}, Any: 7, Raw: json.RawMessage(`[1]`),
			Keys: map[textKey]int{"a": 1}, PM: pointerMarshaler{N: 1}, Floats: []float32{0.1, 1e30}, Bytes: []byte("hi"), Labels: map[label]float64{"l": 2}},
		&tagged{PM: pointerMarshaler{N: 2}}, []tagged{{PM: pointerMarshaler{N: 3}}}, map[string]tagged{"m": {PM: pointerMarshaler{N: 4}}},
		tagForms{Other: 1, Escaped: 2, Accent: 3, Punct: 4, Spaced: 5, Comma: 6}, tagForms{Omit: 7, Bang: 8},
		dup{A: 1, B: 2}, withEmbedded{plain: plain{Key: "e"}, More: 1}, time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC),
		failing{}, map[string]any{"f": failing{}}, &failing{}, &pointerMarshaler{N: 5}, (*pointerMarshaler)(nil),
		map[string]any{"pm": pointerMarshaler{N: 6}, "ppm": &pointerMarshaler{N: 7}}, []*pointerMarshaler{{N: 8}, nil},
		struct {
			P *pointerMarshaler
			T *time.Time
			N *time.Time
			S []time.Time
		}{P: &pointerMarshaler{N: 9}, T: new(time.Time), S: []time.Time{{}}}, make(chan int), func() {}, c, deep,
		map[string]any{"count": 10, "words": 145, "longest": []plain{{Key: "note-9", Words: 19, Text: "word9 word9"}}},
		// Structs without a name: one has only the methods of what it
		// embeds, the other none.
		struct {
			pointerMarshaler
			X int
		}{pointerMarshaler{N: 10}, 1},
		&struct{ *pointerMarshaler }{&pointerMarshaler{N: 11}}, struct{ time.Time }{}, struct {
			Text string `json:"text"`
		}{"unnamed"},
	}
}

// TestMarshalIsEncodingJSON encodes every value with marshal and with
// json.Marshal: the bytes and the errors must be the same.
func TestMarshalIsEncodingJSON(t *testing.T) {
	for _, v := range marshalValues() {
		sameEncoding(t, v)
	}
}

func sameEncoding(t *testing.T, v any) {
	t.Helper()
	got, gotErr := marshal(v)
	want, wantErr := json.Marshal(v)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || string(got) != string(want) {
		t.Errorf("%#.60v:\n got %s (%v)\nwant %s (%v)", v, got, gotErr, want, wantErr)
	}
}

// FuzzMarshal encodes what JSON decodes to, in an interface and into the
// kit's own types.
func FuzzMarshal(f *testing.F) {
	for _, input := range jsonInputs {
		f.Add([]byte(input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var x any
		if json.Unmarshal(data, &x) == nil {
			sameEncoding(t, x)
			sameEncoding(t, map[string]any{"data": x, "list": []any{x, x}})
		}
		var w wide
		if json.Unmarshal(data, &w) == nil {
			sameEncoding(t, w)
		}
		var p plain
		if json.Unmarshal(data, &p) == nil {
			sameEncoding(t, []plain{p, p})
		}
	})
}

// TestResultEncodesAsBefore holds the kit's results to encoding/json's
// encoding of the same values.
func TestResultEncodesAsBefore(t *testing.T) {
	full := Reply("3 notes, <b>12</b> words", map[string]any{"count": 3, "longest": []plain{{Key: "a", Words: 2, Text: "x & y"}}})
	full.Do(Create("notes", "k", map[string]any{"text": "v"}), Update("notes", Item{Key: "k", Revision: 2}, 1.5), Delete("notes", Item{Key: "d", Revision: 1}))
	full.Cite(Evidence{Type: "plugin_storage", InstanceID: "i", Namespace: "notes", Key: "a", Revision: 4})
	full.Notify(Notification{ID: "n", Title: "Archived", Severity: "info", Actions: []ActionButton{{ID: "undo", Label: "Undo", Action: Apply(Delete("archive", Item{Key: "a", Revision: 1}))}}})
	for name, r := range map[string]*Result{
		"every part":     full,
		"data alone":     Reply("é \u2028", map[string]any{"n": 1.5, "list": []any{nil, "<", map[string]any{"z": 1, "a": true}}}),
		"no data":        Reply("", nil),
		"evidence alone": Reply("s", nil).Cite(Evidence{Key: "k"}),
		"a notification": Reply("s", map[string]any{}).Notify(Notification{ID: "n"}),
	} {
		got, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		// The data as the kit wrote it before: its own members, and each
		// builder's list that is not empty.
		data := map[string]any{}
		maps.Copy(data, r.Data)
		for name, list := range map[string]any{"host_actions": r.HostActions, "notifications": r.Notifications} {
			if reflect.ValueOf(list).Len() > 0 {
				data[name] = list
			}
		}
		evidence := r.Evidence
		if evidence == nil {
			evidence = []Evidence{}
		}
		want, _ := json.Marshal(struct {
			Summary  string         `json:"summary"`
			Data     map[string]any `json:"data"`
			Evidence []Evidence     `json:"evidence"`
		}{r.Summary, data, evidence})
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}
