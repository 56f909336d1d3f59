package sandbox

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEncodeRequestIsJSONMarshal: the request a module reads is, byte for
// byte, what json.Marshal writes of it, for every part a request has and
// strings and values that need escapes.
func TestEncodeRequestIsJSONMarshal(t *testing.T) {
	query := `who <is> "here" & why`
	items := []Item{
		{Key: "plain", Value: json.RawMessage(`{"text":"hello","n":[1,2.5,true,null]}`), Revision: 3},
		{Key: "é \"quoted\" <b>", Value: json.RawMessage(`"a < b && c > d \u2028 \u2029 é"`), Revision: 1},
		{Key: "ctl\x01\n", Value: json.RawMessage("\"line\u2028sep\""), Revision: 9223372036854775807},
		{Key: "bad \xff utf8", Value: json.RawMessage(`-0.5e-7`), Revision: 0},
		{Key: "", Value: nil, Revision: 2},
	}
	for name, req := range map[string]Request{
		"the least": {},
		"no storage": {Capability: "notes.summary", Kind: "tool", Trigger: TriggerInvoke, Arguments: json.RawMessage(`{ "limit" : 3 }`),
			Instance: Instance{ID: "inst_1", InstallationID: "inl_1", Generation: 2}},
		"storage": {Capability: "c<&>", Kind: "data", Trigger: TriggerAI, Arguments: json.RawMessage(`{}`), Query: &query,
			Instance:      Instance{ID: "inst <1>", InstallationID: "inl\u2028", Generation: -1},
			PluginStorage: &PluginStorage{StorageRevision: 42, Namespaces: map[string][]Item{"zeta": items, "alpha": items[:1], "empty": {}, "nil": nil, "é<": items[1:2]}}},
		"no namespaces": {PluginStorage: &PluginStorage{StorageRevision: 1}},
		"a later round": {Capability: "c", Arguments: json.RawMessage(`{"a":"<x>"}`), Round: 2,
			Fetched: map[string]FetchAnswer{"b": {Status: 200, Headers: map[string]string{"x": "<y>"}, Body: "é"}, "a": {Error: "refused"}},
			Carry:   json.RawMessage(` [ 1, "<two>" ] `)},
	} {
		got, err := encodeRequest(&req)
		want, wantErr := json.Marshal(req)
		if err != nil || wantErr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s (%v)\nwant %s (%v)", name, got, err, want, wantErr)
		}
	}
}

// TestEncodeRequestRefusesBadArguments: arguments or a carry that are not
// JSON fail the request, as json.Marshal fails it.
func TestEncodeRequestRefusesBadArguments(t *testing.T) {
	for name, req := range map[string]Request{
		"arguments": {Arguments: json.RawMessage(`{"a":`)},
		"carry":     {Carry: json.RawMessage(`[1,]`)},
	} {
		if _, err := encodeRequest(&req); err == nil {
			t.Errorf("%s: encoded", name)
		}
		if _, err := json.Marshal(req); err == nil {
			t.Errorf("%s: json.Marshal encoded it", name)
		}
	}
}
