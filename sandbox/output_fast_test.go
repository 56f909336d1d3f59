package sandbox

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// plainCases are outputs plainResult reads, and outputs it leaves to
// encoding/json.
var plainCases = []struct {
	out   string
	plain bool
}{
	{`{"summary":"s","data":{"a":[1,2]},"evidence":[]}`, true},
	{" \n{ \"summary\" : \"s\" , \"data\" : { \"a\" : [ 1 , 2 ] } }\n", true},
	{`{"data":{},"summary":"\"quoted\" \u00e9 \ud83d\ude00"}`, true},
	{"{\"summary\":\"bad \xff byte\",\"data\":{}}", true},
	{`{"summary":"s","data":{"n":-0.5e+10,"t":true,"f":false,"z":null,"e":{},"l":[]}}`, true},
	{`{"summary":"s","data":{},"evidence":[{"type":"plugin_storage","instance_id":"i","namespace":"n","key":"k","revision":3}]}`, true},
	{`{"summary":"s","data":[1]}`, true},
	{`{"summary":"s","data":"text"}`, true},
	{`{"summary":"s"}`, true},
	// Each place white space can take in data, alone.
	{`{"summary":"s","data":{ "a":1}}`, true},
	{`{"summary":"s","data":{"a" :1}}`, true},
	{`{"summary":"s","data":{"a": 1}}`, true},
	{`{"summary":"s","data":{"a":1 }}`, true},
	{`{"summary":"s","data":{"a":1 ,"b":2}}`, true},
	{`{"summary":"s","data":{"a":1, "b":2}}`, true},
	{`{"summary":"s","data":[ 1]}`, true},
	{`{"summary":"s","data":[1 ]}`, true},
	{`{"summary":"s","data":[1 ,2]}`, true},
	{`{"summary":"s","data":[1, 2]}`, true},
	{`{"summary":"s","data":{"a":[{"b":[ ]}]}}`, true},
	{`{"summary":"s","data":{"a":" spaces in a string "}}`, true},
	{`{"Summary":"s","data":{}}`, false},
	{`{"summary":"s","data":{},"extra":1}`, false},
	{`{"summary":"a","summary":"b","data":{}}`, false},
	{`{"summary":null,"data":{}}`, false},
	{`{"summary":1,"data":{}}`, false},
	{`{"data":{}}`, false},
	{`{}`, false},
	{`{"summary":"s","data":{}} {}`, false},
	{`{"summary":"s","data":{}}x`, false},
	{`{"summary":"s","data":{"a":01}}`, false},
	{`{"summary":"s","data":{"a":1,}}`, false},
	{`{"summary":"s","data":{"a" 1}}`, false},
	{`{"summary":"s","data":{"a":"\x"}}`, false},
	{`{"summary":"s","data":{"a":"\u12g4"}}`, false},
	{"{\"summary\":\"s\",\"data\":{\"a\":\"\x01\"}}", false},
	{`{"summary":"s","data":{},"evidence":[{"revision":"x"}]}`, false},
	{`{"summary":"s","data":{},"evidence":{}}`, false},
	{`{"summary":"s","data":` + strings.Repeat("[", maxSkipDepth+2) + strings.Repeat("]", maxSkipDepth+2) + `}`, false},
	{`{"summary":"s","data":{}`, false},
	{``, false},
	{`[]`, false},
}

func TestPlainResultIsEncodingJSON(t *testing.T) {
	for _, tt := range plainCases {
		_, _, _, _, ok := plainResult([]byte(tt.out))
		if ok != tt.plain {
			t.Errorf("%.60q: read without reflection %v, want %v", tt.out, ok, tt.plain)
		}
		samePlainResult(t, tt.out)
	}
}

func FuzzPlainResult(f *testing.F) {
	for _, tt := range plainCases {
		f.Add(tt.out)
	}
	f.Fuzz(samePlainResult)
}

// samePlainResult checks that what plainResult reads, encoding/json reads
// the same way, and that data it calls compact is.
func samePlainResult(t *testing.T, out string) {
	summary, data, evidence, compact, ok := plainResult([]byte(out))
	if !ok {
		return
	}
	wantSummary, wantData, wantEvidence, err := decodeResult([]byte(out))
	if err != nil {
		t.Fatalf("%.60q: read, but encoding/json says %v", out, err)
	}
	if summary != wantSummary || !bytes.Equal(data, wantData) || !reflect.DeepEqual(evidence, wantEvidence) && len(evidence)+len(wantEvidence) > 0 {
		t.Fatalf("%.60q: read %q, %s, %v; encoding/json reads %q, %s, %v", out, summary, data, evidence, wantSummary, wantData, wantEvidence)
	}
	var buf bytes.Buffer
	if compact && (json.Compact(&buf, data) != nil || !bytes.Equal(buf.Bytes(), data)) {
		t.Fatalf("%.60q: data %s called compact", out, data)
	}
}
