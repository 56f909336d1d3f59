package models

import (
	"reflect"
	"strings"
	"testing"
)

func TestNodeID(t *testing.T) {
	instl, other := NewID(PrefixInstallation), NewID(PrefixInstallation)
	inst := NewID(PrefixInstance)
	tests := []struct {
		name  string
		typ   NodeType
		scope []string
	}{
		{"a user keeps its id", NodeUser, []string{NewID(PrefixUser)}},
		{"an Installation keeps its id", NodeInstallation, []string{instl}},
		{"an Instance keeps its id", NodeInstance, []string{inst}},
		{"a token keeps its id", NodeAccessToken, []string{NewID(PrefixToken)}},
		{"a notification keeps its id", NodeNotification, []string{NewID(PrefixNotification)}},
		{"an extension of one Installation", NodeExtension, []string{instl, "main"}},
		{"the same extension id of another", NodeExtension, []string{other, "main"}},
		{"a capability of the same name", NodeCapability, []string{instl, "main"}},
		{"a namespace", NodeNamespace, []string{instl, "main"}},
		{"the AI's view of it", NodeAiNamespace, []string{instl, "main"}},
		{"a connection of an Instance", NodeConnection, []string{inst, "main"}},
		{"a UI config of an Instance", NodeUiConfig, []string{inst, "main"}},
		{"a notification's action", NodeNotificationAction, []string{NewID(PrefixNotification), "undo"}},
		{"an audit record", NodeAuditEntry, []string{"42"}},
		{"a fetch record of the same number", NodeFetchRecord, []string{"42"}},
		{"a saved entity whose key has any character", NodeSavedEntity, []string{inst, `a "key" / with _ and ü`}},
		{"a background schedule", NodeBackgroundRun, []string{inst, "notes.archive"}},
		{"a rendered response", NodeRenderedResponse, []string{NewID(PrefixUser), "msg-1"}},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := NodeID(tt.typ, tt.scope...)
			if id != NodeID(tt.typ, tt.scope...) {
				t.Fatal("the id changes between calls")
			}
			if was, ok := seen[id]; ok {
				t.Fatalf("id %s is also the id of %q", id, was)
			}
			seen[id] = tt.name
			typ, scope, err := ParseNodeID(id)
			if err != nil || typ != tt.typ || !reflect.DeepEqual(scope, tt.scope) {
				t.Fatalf("ParseNodeID(%s) = %s %q %v, want %s %q", id, typ, scope, err, tt.typ, tt.scope)
			}
		})
	}
}

func TestParseNodeIDRefuses(t *testing.T) {
	good := NodeID(NodeExtension, NewID(PrefixInstallation), "main")
	tests := []struct{ name, id string }{
		{"empty", ""},
		{"no prefix", "main"},
		{"a prefix alone", "inst_"},
		{"an unknown prefix", "zzz_abc"},
		{"a plugin's own name", "com.example.notes"},
		{"a scope that is not base64", "ext_***"},
		{"a scope that is not a list", "ext_" + b64(`{"a":1}`)},
		{"a scope of the wrong length", "ext_" + b64(`["instl_a"]`)},
		{"an empty part", "ext_" + b64(`["instl_a",""]`)},
		{"a part that is not a string", "ext_" + b64(`["instl_a",1]`)},
		{"another spelling of a good id", "ext_" + b64(` ["instl_a","main"]`)},
		{"padding", good + "="},
		{"a good id with a character more", good + "A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseNodeID(tt.id)
			if ErrorCode(err) != ErrBadUserInput || !strings.Contains(err.Error(), "is not an id this server gave") {
				t.Fatalf("ParseNodeID(%q) = %v, want BAD_USER_INPUT", tt.id, err)
			}
		})
	}
}

func TestNodeIDPanicsOnAWrongScope(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a scope of one part for an extension did not panic")
		}
	}()
	NodeID(NodeExtension, "instl_a")
}
