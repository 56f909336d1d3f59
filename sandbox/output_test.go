package sandbox

import (
	"strings"
	"testing"

	"pluginhost/models"
)

// What a module writes is read as a fetch request or as exactly one
// ExtensionResult; every way of breaking that is bad_output with a message
// that names the rule, and a result's data comes out compact, without the
// host's own members.
func TestReadOutput(t *testing.T) {
	const inst = "inst_1"
	fetch := `{"id":"a","method":"GET","url":"https://x.example/"}`
	tests := []struct {
		name    string
		out     string
		fetches int    // fetch requests read
		data    string // the result's data, when it is one
		actions string // its host actions
		notices string // its notifications
		bad     string // part of the bad_output message
	}{
		{name: "a result", out: `{"summary":"s","data":{ "a" : [1, 2] },"evidence":[]}`, data: `{"a":[1,2]}`},
		{name: "a result with spaces around", out: " \n{\"summary\":\"s\",\"data\":{}}\n", data: `{}`},
		{name: "a result whose data names fetch", out: `{"summary":"s","data":{"fetch":[]}}`, data: `{"fetch":[]}`},
		{name: "a result whose text says fetch", out: `{"summary":"\"fetch\"","data":{"t":"\"fetch\""}}`, data: `{"t":"\"fetch\""}`},
		{name: "host actions and notifications taken out of data", out: `{"summary":"s","data":{"a":1,"host_actions":[{"op":"x"}],"notifications":[{"title":"t"}]}}`,
			data: `{"a":1}`, actions: `[{"op":"x"}]`, notices: `[{"title":"t"}]`},
		{name: "host actions spelled with an escape", out: `{"summary":"s","data":{"a":1,"host_\u0061ctions":[]}}`, data: `{"a":1}`, actions: `[]`},
		{name: "null host actions", out: `{"summary":"s","data":{"host_actions":null}}`, data: `{}`},
		{name: "a key that only looks like host actions", out: `{"summary":"s","data":{"Host_Actions":1}}`, data: `{"Host_Actions":1}`},
		{name: "evidence of this Instance", out: `{"summary":"s","data":{},"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"n","key":"k","revision":1}]}`, data: `{}`},
		{name: "a fetch request", out: `{"fetch":[` + fetch + `]}`, fetches: 1},
		{name: "a fetch request spelled with an escape", out: `{"f\u0065tch":[` + fetch + `]}`, fetches: 1},
		{name: "a fetch request with carry", out: `{"fetch":[` + fetch + `],"carry":{"n": 1}}`, fetches: 1},

		{name: "nothing", out: ``, bad: "not one ExtensionResult object"},
		{name: "not JSON", out: `hello`, bad: "not one ExtensionResult object"},
		{name: "an array", out: `[]`, bad: "not one ExtensionResult object"},
		{name: "cut short", out: `{"summary":"s","data":{}`, bad: "not one ExtensionResult object"},
		{name: "two values", out: `{"summary":"s","data":{}} {"summary":"t","data":{}}`, bad: "more than one JSON value"},
		{name: "no summary", out: `{"data":{}}`, bad: "no summary string"},
		{name: "a summary that is not a string", out: `{"summary":1,"data":{}}`, bad: "not one ExtensionResult object"},
		{name: "no data", out: `{"summary":"s"}`, bad: "data must be a JSON object"},
		{name: "data that is not an object", out: `{"summary":"s","data":[1]}`, bad: "data must be a JSON object"},
		{name: "evidence of another Instance", out: `{"summary":"s","data":{},"evidence":[{"type":"plugin_storage","instance_id":"inst_2"}]}`, bad: "evidence[0] must be plugin_storage evidence of this Instance"},
		{name: "a fetch request whose member is capitalized", out: `{"Fetch":[` + fetch + `]}`, bad: `"Fetch" is not a member of it`},
		{name: "a member beside fetch", out: `{"fetch":[` + fetch + `],"summary":"s"}`, bad: `"summary" is not a member of it`},
		{name: "a fetch request that is not a list", out: `{"fetch":{}}`, bad: "fetch:"},
		{name: "an empty fetch request", out: `{"fetch":[]}`, bad: "a round has 1 to"},
		{name: "a carry past its bound", out: `{"fetch":[` + fetch + `],"carry":"` + strings.Repeat("x", MaxCarry) + `"}`, bad: "carry holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fetches, _, err := parseFetch([]byte(tt.out))
			var res *Result
			if err == nil && fetches == nil {
				res, err = parseResult([]byte(tt.out), inst)
			}
			if tt.bad != "" {
				e, ok := err.(*models.Error)
				if !ok || e.Reason != models.ReasonBadOutput || !strings.Contains(e.Message, tt.bad) {
					t.Fatalf("got %v, want bad_output saying %q", err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fetches) != tt.fetches {
				t.Fatalf("read %d fetch requests, want %d", len(fetches), tt.fetches)
			}
			if tt.fetches > 0 {
				return
			}
			if string(res.Data) != tt.data || string(res.HostActions) != tt.actions || string(res.Notifications) != tt.notices {
				t.Errorf("data %s, host actions %s, notifications %s; want %s, %s, %s", res.Data, res.HostActions, res.Notifications, tt.data, tt.actions, tt.notices)
			}
		})
	}
}
