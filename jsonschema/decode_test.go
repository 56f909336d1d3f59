package jsonschema

import (
	"reflect"
	"strings"
	"testing"
)

// decodeCases are texts Decode reads in one pass, and texts it leaves to
// encoding/json's tokens.
var decodeCases = []struct {
	text string
	fast bool // read in one pass
}{
	{`{"b": 1, "a": [true, null, "x"]}`, true},
	{" \t\r\n{}\n", true},
	{`[]`, true},
	{`[[], {}, [{}]]`, true},
	{`"plain"`, true},
	{`"héllo, wörld ✓"`, true},
	{`"tab\tand \"quotes\" and \u00e9 and \ud83d\ude00"`, true},
	{`"a lone \ud800 surrogate"`, true},
	{"\"bad \xff byte\"", true},
	{`-0`, true},
	{`-12.5e+3`, true},
	{`0.5E-2`, true},
	{`1e9`, true},
	{`{"a":{"b":{"c":[1,2,3]}}}`, true},
	{strings.Repeat("[", maxDecodeDepth+1) + strings.Repeat("]", maxDecodeDepth+1), true},
	{strings.Repeat("[", maxDecodeDepth+2) + strings.Repeat("]", maxDecodeDepth+2), false},
	{`{"a": 1, "a": 2}`, false},
	{`{} {}`, false},
	{`{}x`, false},
	{`{"a" 1}`, false},
	{`{"a": 1,}`, false},
	{`[1,]`, false},
	{`[1 2]`, false},
	{`01`, false},
	{`1.`, false},
	{`.5`, false},
	{`1e`, false},
	{`-`, false},
	{`+1`, false},
	{`tru`, false},
	{`truex`, false},
	{`nul`, false},
	{"\"control \x01 character\"", false},
	{`"unterminated`, false},
	{`"escape at the end\`, false},
	{`"bad escape \x"`, false},
	{`{"a": 1`, false},
	{`[`, false},
	{``, false},
	{`   `, false},
}

func TestDecodeIsTokens(t *testing.T) {
	for _, tt := range decodeCases {
		p := newParser([]byte(tt.text))
		_, ok := p.value(0)
		if fast := ok && p.end(); fast != tt.fast {
			t.Errorf("%.40q: read in one pass %v, want %v", tt.text, fast, tt.fast)
		}
		sameDecode(t, tt.text)
	}
}

func FuzzDecode(f *testing.F) {
	for _, tt := range decodeCases {
		f.Add(tt.text)
	}
	f.Fuzz(sameDecode)
}

// sameDecode checks that Decode gives what encoding/json's tokens give:
// the same value, or the same error.
func sameDecode(t *testing.T, text string) {
	got, err := Decode([]byte(text))
	want, wantErr := decodeTokens([]byte(text))
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%.60q: error %v, want %v", text, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.60q: decoded %#v, want %#v", text, got, want)
	}
}
