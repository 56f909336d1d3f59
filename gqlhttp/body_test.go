package gqlhttp

import (
	"reflect"
	"testing"
)

// decodeObject answers as decodeJSON does for every body it decodes, and
// leaves to it every body it does not.
func TestDecodeObjectAsDecodeJSON(t *testing.T) {
	for _, tc := range []struct {
		body string
		fast bool // decodeObject decodes it itself
	}{
		{`{"query":"mutation($i:ID!){storageUpdate(instanceId:$i){summary}}","variables":{"i":"abc","v":{"count":12},"r":3}}`, true},
		{` {"query" : "{ viewer { id } }\n", "variables" : null, "operationName": "x"} `, true},
		{`{"a":[1,-2.5e3,0.25,true,false,null,"s",[],{}],"b":{"c":{"d":[{"e":"f"}]}}}`, true},
		{`{"esc":"a\"b\\c\/d\be\ff\ng\rh\ti","utf8":"été ✓"}`, true},
		{`{"k":1,"k":2}`, true},
		{`{}`, true},
		{`{"u":"\u00e9"}`, false},
		{`{"bad":"\xff"}`, false},
		{`{"ctl":"a` + "\x01" + `"}`, false},
		{`{"n":01}`, false},
		{`{"n":-}`, false},
		{`{"n":1.}`, false},
		{`{"n":1e}`, false},
		{`{"a":1,}`, false},
		{`{"a":1}x`, false},
		{`{"a":1} {}`, false},
		{`{"a" 1}`, false},
		{`{"a":tru}`, false},
		{`[{"query":"{a}"}]`, false},
		{`"query"`, false},
		{`{"a":[1 2]}`, false},
		{`{"a":"unterminated}`, false},
		{`{"esc":"\x"}`, false},
	} {
		got, fast := decodeObject([]byte(tc.body))
		if fast != tc.fast {
			t.Errorf("%s: decoded itself %t, want %t", tc.body, fast, tc.fast)
		}
		if fast {
			want, rerr := httpTransport{}.decodeJSON([]byte(tc.body), "the body")
			if rerr != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %#v, decodeJSON %#v (%v)", tc.body, got, want, rerr)
			}
		}
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{`{"query":"{a}","variables":{"i":"x","v":{"n":1.5e2},"r":[true,null]}}`, `{"a":"\n\"é"}`, `{"n":-0.0e+1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if depth, _ := jsonShape(b); depth > 64 {
			return
		}
		got, fast := decodeObject(b)
		if !fast {
			return
		}
		want, rerr := httpTransport{}.decodeJSON(b, "the body")
		if rerr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v, decodeJSON %#v (%v)", b, got, want, rerr)
		}
	})
}
