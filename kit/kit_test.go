package kit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pluginhost/kit"
)

const request = `{"capability":"notes.summary","kind":"tool","trigger":"invoke","arguments":{"limit":2},"query":null,
"instance":{"id":"inst_1","installation_id":"inl_1","generation":3},
"plugin_storage":{"storage_revision":7,"namespaces":{"notes":[
 {"key":"a","value":{"text":"one two three","done":true},"revision":4},
 {"key":"b","value":{"text":"four"},"revision":7}]}}}`

type note struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
}

// serve runs h on the request and returns the exit code, the result decoded
// and standard error.
func serve(t *testing.T, h kit.Handler, req string) (int, map[string]any, string) {
	t.Helper()
	kit.Handle(h)
	var out, errOut bytes.Buffer
	code := kit.Serve(strings.NewReader(req), &out, &errOut)
	var res map[string]any
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("the result is not JSON: %v\n%s", err, out.String())
		}
	}
	return code, res, errOut.String()
}

func TestServe(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler kit.Handler
		req     string
		code    int
		want    string // the result, as JSON
		stderr  string
	}{
		{
			name: "arguments, items, evidence and host actions",
			handler: func(r *kit.Request) (*kit.Result, error) {
				var args struct{ Limit int }
				if err := r.Args(&args); err != nil {
					return nil, err
				}
				res := kit.Reply(fmt.Sprintf("%d notes, limit %d", len(r.Items("notes")), args.Limit), map[string]any{"limit": args.Limit})
				for _, it := range r.Items("notes") {
					var n note
					if err := it.Decode(&n); err != nil {
						return nil, err
					}
					if n.Done {
						res.Do(kit.Create("archive", it.Key, n), kit.Delete("notes", it)).Cite(r.Evidence("notes", it))
					}
				}
				b, _ := r.Item("notes", "b")
				return res.Do(kit.Update("notes", b, note{Text: "FOUR"})), nil
			},
			req: request,
			want: `{"summary":"2 notes, limit 2","data":{"limit":2,"host_actions":[
				{"type":"plugin_storage_set","namespace":"archive","key":"a","value":{"text":"one two three","done":true}},
				{"type":"plugin_storage_delete","namespace":"notes","key":"a","revision":4},
				{"type":"plugin_storage_set","namespace":"notes","key":"b","value":{"text":"FOUR","done":false},"revision":7}]},
				"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"notes","key":"a","revision":4}]}`,
		},
		{
			name: "notifications with actions",
			handler: func(r *kit.Request) (*kit.Result, error) {
				a, _ := r.Item("notes", "a")
				return kit.Reply("archived", nil).Notify(kit.Notification{ID: "archived-a", Title: "Note archived", Severity: kit.Success,
					Actions: []kit.ActionButton{{ID: "undo", Label: "Undo", Action: kit.Apply(kit.Create("notes", "a", "x"))},
						{ID: "open", Label: "Open", Action: kit.Open("main", map[string]any{"key": a.Key})}}}), nil
			},
			req: request,
			want: `{"summary":"archived","data":{"notifications":[{"id":"archived-a","title":"Note archived","severity":"success","actions":[
				{"id":"undo","label":"Undo","action":{"type":"host_actions","host_actions":[{"type":"plugin_storage_set","namespace":"notes","key":"a","value":"x"}]}},
				{"id":"open","label":"Open","action":{"type":"open","extension":"main","parameters":{"key":"a"}}}]}]},"evidence":[]}`,
		},
		{
			name: "a round of fetches, then their answers",
			handler: func(r *kit.Request) (*kit.Result, error) {
				if r.Round == 0 {
					f := kit.Get("now", "https://weather.example/now")
					f.Connection = "weather"
					return kit.Fetching(f), nil
				}
				resp, err := r.Answer("now")
				if err != nil {
					return nil, err
				}
				var w struct{ Temp float64 }
				if err := resp.JSON(&w); err != nil {
					return nil, err
				}
				return kit.Reply(fmt.Sprintf("%.1f degrees", w.Temp), nil), nil
			},
			req:  `{"capability":"w","round":0,"instance":{"id":"i"}}`,
			want: `{"fetch":[{"id":"now","method":"GET","url":"https://weather.example/now","connection":"weather"}]}`,
		},
		{
			name: "the answers of a round",
			handler: func(r *kit.Request) (*kit.Result, error) {
				resp, err := r.Answer("now")
				if err != nil {
					return nil, err
				}
				var w struct{ Temp float64 }
				resp.JSON(&w)
				return kit.Reply(fmt.Sprintf("%.1f degrees", w.Temp), nil), nil
			},
			req:  `{"capability":"w","round":1,"instance":{"id":"i"},"fetched":{"now":{"status":200,"body":"{\"temp\":21.5}"}}}`,
			want: `{"summary":"21.5 degrees","data":{},"evidence":[]}`,
		},
		{
			name: "a round that carries what the next run needs",
			handler: func(r *kit.Request) (*kit.Result, error) {
				var seen map[string]any
				if ok, err := r.Carried(&seen); ok || err != nil || seen != nil {
					return nil, fmt.Errorf("the first run carried %v %v %v", ok, seen, err)
				}
				return kit.Fetching(kit.Get("now", "https://weather.example/now")).Carry(map[string]any{"city": "Oslo", "ids": []int{1, 2}}), nil
			},
			req:  `{"capability":"w","instance":{"id":"i"}}`,
			want: `{"fetch":[{"id":"now","method":"GET","url":"https://weather.example/now"}],"carry":{"city":"Oslo","ids":[1,2]}}`,
		},
		{
			name: "what the previous round carried",
			handler: func(r *kit.Request) (*kit.Result, error) {
				var carried struct {
					City string
					IDs  []int
				}
				if ok, err := r.Carried(&carried); !ok || err != nil {
					return nil, fmt.Errorf("carried %v %v", ok, err)
				}
				return kit.Reply(fmt.Sprintf("%s %v", carried.City, carried.IDs), nil), nil
			},
			req:  `{"capability":"w","round":1,"instance":{"id":"i"},"fetched":{"now":{"status":200}},"carry":{"city":"Oslo","ids":[1,2]}}`,
			want: `{"summary":"Oslo [1 2]","data":{},"evidence":[]}`,
		},
		{
			name:    "a carry on a result that ends the run",
			handler: func(r *kit.Request) (*kit.Result, error) { return kit.Reply("done", nil).Carry(1), nil },
			req:     request,
			code:    1,
			stderr:  "kit: cannot write the result: Carry is for a round of fetches (kit.Fetching(...).Carry(v)); a result that ends the run carries nothing\n",
		},
		{
			name: "a carry that is not JSON",
			handler: func(r *kit.Request) (*kit.Result, error) {
				return kit.Fetching(kit.Get("a", "https://x.example/")).Carry(func() {}), nil
			},
			req:    request,
			code:   1,
			stderr: "kit: cannot write the result: the round's carry is not JSON: json: unsupported type: func()\n",
		},
		{
			name: "a failed fetch is the handler's error",
			handler: func(r *kit.Request) (*kit.Result, error) {
				if _, err := r.Answer("now"); !errors.Is(err, kit.ErrFetch) {
					return nil, fmt.Errorf("want ErrFetch, got %v", err)
				} else {
					return nil, err
				}
			},
			req:    `{"capability":"w","round":1,"instance":{"id":"i"},"fetched":{"now":{"error":"connection refused"}}}`,
			code:   1,
			stderr: "fetch failed: now: connection refused\n",
		},
		{
			name:    "a handler's error goes to standard error, exit 1",
			handler: func(*kit.Request) (*kit.Result, error) { return nil, errors.New("no notes to summarise") },
			req:     request,
			code:    1,
			stderr:  "no notes to summarise\n",
		},
		{
			name:    "no result",
			handler: func(*kit.Request) (*kit.Result, error) { return nil, nil },
			req:     request,
			code:    1,
			stderr:  "the handler returned no result\n",
		},
		{
			name:    "a request that is not JSON",
			handler: func(*kit.Request) (*kit.Result, error) { return kit.Reply("", nil), nil },
			req:     `{"capability":`,
			code:    1,
			stderr:  "kit: cannot read the request: unexpected EOF\n",
		},
		{
			name: "arguments of the wrong type",
			handler: func(r *kit.Request) (*kit.Result, error) {
				var args struct{ Limit string }
				return nil, r.Args(&args)
			},
			req:    request,
			code:   1,
			stderr: "arguments: json: cannot unmarshal number into Go struct field .Limit of type string\n",
		},
		{
			name: "host actions both in Data and built",
			handler: func(r *kit.Request) (*kit.Result, error) {
				return kit.Reply("", map[string]any{"host_actions": []any{}}).Do(kit.Create("n", "k", 1)), nil
			},
			req:    request,
			code:   1,
			stderr: "kit: cannot write the result: data.host_actions is set both in Data and by the result's builders\n",
		},
		{
			name:   "no handler",
			req:    request,
			code:   1,
			stderr: "kit: no handler: call kit.Handle from an init function\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, res, stderr := serve(t, tt.handler, tt.req)
			if code != tt.code || stderr != tt.stderr {
				t.Fatalf("exit %d, standard error %q; want %d, %q", code, stderr, tt.code, tt.stderr)
			}
			if tt.want == "" {
				if res != nil {
					t.Fatalf("a result after a failure: %v", res)
				}
				return
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				t.Fatalf("result\n%s\nwant\n%s", got, wantJSON)
			}
		})
	}
}

func TestItemsWithoutStorage(t *testing.T) {
	var r kit.Request
	if err := json.Unmarshal([]byte(`{"capability":"c","instance":{"id":"i"}}`), &r); err != nil {
		t.Fatal(err)
	}
	if items := r.Items("notes"); items != nil {
		t.Fatalf("items of a plugin without storage: %v", items)
	}
	if _, ok := r.Item("notes", "a"); ok {
		t.Fatal("an item of a plugin without storage")
	}
	var args map[string]any
	if err := r.Args(&args); err != nil || args != nil {
		t.Fatalf("no arguments: %v %v", args, err)
	}
}

// A round carries at most kit.MaxCarry bytes of JSON: at the bound it is
// written as it is; one byte past it the run fails and says how big it was
// and the bound.
func TestCarryBound(t *testing.T) {
	for _, tt := range []struct {
		name   string
		size   int // of the carry's JSON: a string of size-2 letters in quotes
		code   int
		stderr string
	}{
		{"at the bound", kit.MaxCarry, 0, ""},
		{"one byte past it", kit.MaxCarry + 1, 1, "kit: cannot write the result: the round's carry encodes to 65537 bytes of JSON; at most 65536 (kit.MaxCarry) are carried to the next round: carry less, such as the ids to fetch again\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			value := strings.Repeat("x", tt.size-2)
			code, res, stderr := serve(t, func(*kit.Request) (*kit.Result, error) {
				return kit.Fetching(kit.Get("a", "https://x.example/")).Carry(value), nil
			}, request)
			if code != tt.code || stderr != tt.stderr {
				t.Fatalf("exit %d, standard error %q; want %d, %q", code, stderr, tt.code, tt.stderr)
			}
			if tt.code == 0 && res["carry"] != value {
				t.Fatalf("the carry written is %d bytes, want the %d given", len(fmt.Sprint(res["carry"])), len(value))
			}
		})
	}
}

// A handler may keep what it read from a request, such as an item's raw
// value: serving the next request does not change it.
func TestKeptValuesOutliveTheRun(t *testing.T) {
	var kept []json.RawMessage
	keep := func(r *kit.Request) (*kit.Result, error) {
		for _, it := range r.Items("notes") {
			kept = append(kept, it.Value)
		}
		return kit.Reply("kept", nil), nil
	}
	serve(t, keep, request)
	other := strings.ReplaceAll(strings.ReplaceAll(request, "one two three", "eno owt eerht"), `"four"`, `"ruof"`)
	for range 3 {
		serve(t, keep, other)
	}
	if got := string(kept[0]) + " " + string(kept[1]); got != `{"text":"one two three","done":true} {"text":"four"}` {
		t.Fatalf("the first request's values became %s", got)
	}
}
