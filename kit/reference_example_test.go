package kit_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"pluginhost/kit"
)

// One example for every exported name of the kit: docs/kit.md shows each
// with its signature (go generate ./internal/kitref). Each request below is
// what the host writes on the module's standard input, and each output what
// the module writes on its standard output: a module in C reads and writes
// the same bytes.

func ExampleHandle() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("hello from "+req.Capability, nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "hello.say"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"hello from hello.say","data":{},"evidence":[]}
}

func ExampleHandler() {
	var count kit.Handler = func(req *kit.Request) (*kit.Result, error) {
		n := len(req.Items("notes"))
		return kit.Reply(fmt.Sprintf("%d notes", n), map[string]any{"count": n}), nil
	}
	kit.Handle(count)
	kit.Serve(strings.NewReader(`{"capability": "notes.count", "plugin_storage": {"storage_revision": 3,
		"namespaces": {"notes": [{"key": "a", "value": "milk", "revision": 1}, {"key": "b", "value": "eggs", "revision": 3}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"2 notes","data":{"count":2},"evidence":[]}
}

// A capability's main package registers its handler in init, so that a
// reactor module (pluginhost build) has it too, and calls Main from main,
// for a command module (GOOS=wasip1 GOARCH=wasm go build).
func ExampleMain() {
	// func init() { kit.Handle(summary) }
	//
	// func main() { kit.Main() }
	fmt.Println("kit.Main runs the handler once on standard input and exits with its code")
	// Output: kit.Main runs the handler once on standard input and exits with its code
}

// A handler's error goes to standard error, and the run fails (exit 1):
// the host answers CAPABILITY_FAILED with reason exit.
func ExampleServe() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return nil, errors.New("no notes to summarise")
	})
	code := kit.Serve(strings.NewReader(`{"capability": "notes.summary"}`), os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	// Output:
	// no notes to summarise
	// exit 1
}

func ExampleTriggerInvoke() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		if req.Trigger == kit.TriggerSchedule {
			return kit.Reply("nothing to do on a schedule", nil), nil
		}
		return kit.Reply("started by "+req.Trigger, nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.tidy", "trigger": "ai"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"started by ai","data":{},"evidence":[]}
}

func ExampleRequest() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply(fmt.Sprintf("%s (%s) for Instance %s at generation %d, storage revision %d",
			req.Capability, req.Kind, req.Instance.ID, req.Instance.Generation, req.PluginStorage.Revision), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.summary", "kind": "tool", "trigger": "invoke", "arguments": {}, "query": null,
		"instance": {"id": "inst_1", "installation_id": "instl_1", "generation": 3},
		"plugin_storage": {"storage_revision": 12, "namespaces": {"notes": []}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"notes.summary (tool) for Instance inst_1 at generation 3, storage revision 12","data":{},"evidence":[]}
}

func ExampleRequest_Args() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		var args struct {
			City  string `json:"city"`
			Limit int    `json:"limit"`
		}
		if err := req.Args(&args); err != nil {
			return nil, err
		}
		return kit.Reply(fmt.Sprintf("%d days of %s", args.Limit, args.City), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "weather.week", "arguments": {"city": "Bern", "limit": 3}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"3 days of Bern","data":{},"evidence":[]}
}

func ExampleRequest_Items() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		var keys []string
		for _, it := range req.Items("notes") {
			keys = append(keys, it.Key)
		}
		return kit.Reply(strings.Join(keys, ", "), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.keys", "plugin_storage": {"storage_revision": 2,
		"namespaces": {"notes": [{"key": "eggs", "value": {}, "revision": 2}, {"key": "milk", "value": {}, "revision": 1}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"eggs, milk","data":{},"evidence":[]}
}

func ExampleRequest_Item() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		it, ok := req.Item("settings", "unit")
		if !ok {
			return kit.Reply("no unit set: celsius", nil), nil
		}
		var unit string
		if err := it.Decode(&unit); err != nil {
			return nil, err
		}
		return kit.Reply("unit: "+unit, nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "weather.unit", "plugin_storage": {"storage_revision": 1,
		"namespaces": {"settings": [{"key": "unit", "value": "fahrenheit", "revision": 1}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"unit: fahrenheit","data":{},"evidence":[]}
}

func ExampleRequest_Evidence() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		it, _ := req.Item("notes", "milk")
		return kit.Reply("milk is on the list", nil).Cite(req.Evidence("notes", it)), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.find", "instance": {"id": "inst_1"}, "plugin_storage": {"storage_revision": 4,
		"namespaces": {"notes": [{"key": "milk", "value": "2 l", "revision": 4}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"milk is on the list","data":{},"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"notes","key":"milk","revision":4}]}
}

// The first run asks for the fetch; the host makes it and runs the
// capability again with the answer (this example writes that second run).
func ExampleRequest_Answer() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		if req.Round == 0 {
			return kit.Fetching(kit.Get("now", "https://api.weather.example/now?city=Bern")), nil
		}
		resp, err := req.Answer("now")
		if err != nil {
			return nil, err // the request could not be made: a refused connection, a TLS failure, a timeout
		}
		var now struct {
			Temperature float64 `json:"temperature"`
		}
		if err := resp.JSON(&now); err != nil {
			return nil, err
		}
		return kit.Reply(fmt.Sprintf("%d: %.1f degrees", resp.Status, now.Temperature), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "weather.now", "round": 1,
		"fetched": {"now": {"status": 200, "headers": {"content-type": "application/json"}, "body": "{\"temperature\": 21.5}"}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"200: 21.5 degrees","data":{},"evidence":[]}
}

func ExampleErrFetch() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		_, err := req.Answer("now")
		if errors.Is(err, kit.ErrFetch) {
			return kit.Reply("the weather service cannot be reached: "+err.Error(), nil), nil
		}
		return kit.Reply("fetched", nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "weather.now", "round": 1, "fetched": {"now": {"error": "timeout"}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"the weather service cannot be reached: fetch failed: now: timeout","data":{},"evidence":[]}
}

func ExampleResponse() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		resp, err := req.Answer("logo")
		if err != nil {
			return nil, err
		}
		return kit.Reply(fmt.Sprintf("%d, %s, %s-encoded body of %d characters", resp.Status, resp.Headers["content-type"], resp.BodyEncoding, len(resp.Body)), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "brand.logo", "round": 1,
		"fetched": {"logo": {"status": 200, "headers": {"content-type": "image/png"}, "body": "iVBORw0KGgo=", "body_encoding": "base64"}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"200, image/png, base64-encoded body of 12 characters","data":{},"evidence":[]}
}

func ExampleResponse_JSON() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		resp, err := req.Answer("repos")
		if err != nil {
			return nil, err
		}
		var repos []struct {
			Name string `json:"name"`
		}
		if err := resp.JSON(&repos); err != nil {
			return nil, err
		}
		return kit.Reply(fmt.Sprintf("%d repositories, first %s", len(repos), repos[0].Name), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "github.repos", "round": 1,
		"fetched": {"repos": {"status": 200, "body": "[{\"name\": \"pluginhost\"}, {\"name\": \"kit\"}]"}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"2 repositories, first pluginhost","data":{},"evidence":[]}
}

func ExampleInstance() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		in := req.Instance
		return kit.Reply(fmt.Sprintf("Instance %s of Installation %s, generation %d", in.ID, in.InstallationID, in.Generation), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.where", "instance": {"id": "inst_1", "installation_id": "instl_1", "generation": 2}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"Instance inst_1 of Installation instl_1, generation 2","data":{},"evidence":[]}
}

// Storage is nil when the manifest does not request the storage permission.
func ExampleStorage() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		if req.PluginStorage == nil {
			return kit.Reply("no storage", nil), nil
		}
		return kit.Reply(fmt.Sprintf("revision %d, %d namespaces", req.PluginStorage.Revision, len(req.PluginStorage.Namespaces)), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.stats", "plugin_storage": {"storage_revision": 7, "namespaces": {"notes": [], "archive": []}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"revision 7, 2 namespaces","data":{},"evidence":[]}
}

func ExampleItem() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		it := req.Items("notes")[0]
		return kit.Reply(fmt.Sprintf("%s at revision %d holds %s", it.Key, it.Revision, it.Value), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.first", "plugin_storage": {"storage_revision": 5,
		"namespaces": {"notes": [{"key": "milk", "value": {"text": "2 l"}, "revision": 5}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"milk at revision 5 holds {\"text\": \"2 l\"}","data":{},"evidence":[]}
}

func ExampleItem_Decode() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		var note struct {
			Text string `json:"text"`
			Done bool   `json:"done"`
		}
		if err := req.Items("notes")[0].Decode(&note); err != nil {
			return nil, err
		}
		return kit.Reply(fmt.Sprintf("%q, done: %v", note.Text, note.Done), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.first", "plugin_storage": {"storage_revision": 1,
		"namespaces": {"notes": [{"key": "milk", "value": {"text": "buy milk", "done": true}, "revision": 1}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"\"buy milk\", done: true","data":{},"evidence":[]}
}

func ExampleResult() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return &kit.Result{
			Summary: "1 note archived",
			Data:    map[string]any{"archived": 1},
			Evidence: []kit.Evidence{{Type: "plugin_storage", InstanceID: req.Instance.ID,
				Namespace: "notes", Key: "milk", Revision: 2}},
			HostActions: []kit.HostAction{kit.Create("archive", "milk", "2 l")},
		}, nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.archive", "instance": {"id": "inst_1"}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"1 note archived","data":{"archived":1,"host_actions":[{"type":"plugin_storage_set","namespace":"archive","key":"milk","value":"2 l"}]},"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"notes","key":"milk","revision":2}]}
}

func ExampleReply() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("3 notes, 7 words", map[string]any{"count": 3, "words": 7}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.summary"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"3 notes, 7 words","data":{"count":3,"words":7},"evidence":[]}
}

func ExampleResult_Do() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		it, _ := req.Item("notes", "milk")
		return kit.Reply("moved milk to the archive", nil).
			Do(kit.Create("archive", it.Key, it.Value), kit.Delete("notes", it)), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.archive", "plugin_storage": {"storage_revision": 3,
		"namespaces": {"notes": [{"key": "milk", "value": "2 l", "revision": 3}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"moved milk to the archive","data":{"host_actions":[{"type":"plugin_storage_set","namespace":"archive","key":"milk","value":"2 l"},{"type":"plugin_storage_delete","namespace":"notes","key":"milk","revision":3}]},"evidence":[]}
}

func ExampleResult_Cite() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		res := kit.Reply("the done notes", nil)
		for _, it := range req.Items("notes") {
			res.Cite(req.Evidence("notes", it))
		}
		return res, nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.done", "instance": {"id": "inst_1"}, "plugin_storage": {"storage_revision": 2,
		"namespaces": {"notes": [{"key": "a", "value": 1, "revision": 1}, {"key": "b", "value": 2, "revision": 2}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"the done notes","data":{},"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"notes","key":"a","revision":1},{"type":"plugin_storage","instance_id":"inst_1","namespace":"notes","key":"b","revision":2}]}
}

func ExampleResult_Notify() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("reminded", nil).Notify(kit.Notification{ID: "reminder", Title: "Water the plants", Severity: kit.Info}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "plants.remind", "trigger": "schedule"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"reminded","data":{"notifications":[{"id":"reminder","title":"Water the plants","severity":"info"}]},"evidence":[]}
}

func ExampleEvidence() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("from the archive", nil).Cite(kit.Evidence{Type: "plugin_storage", InstanceID: req.Instance.ID,
			Namespace: "archive", Key: "2024", Revision: 9}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.history", "instance": {"id": "inst_1"}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"from the archive","data":{},"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"archive","key":"2024","revision":9}]}
}

func ExampleHostAction() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("cleared", nil).Do(kit.HostAction{Type: kit.ActionDelete, Namespace: "cache", Key: "today", Revision: 4}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "cache.clear"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"cleared","data":{"host_actions":[{"type":"plugin_storage_delete","namespace":"cache","key":"today","revision":4}]},"evidence":[]}
}

func ExampleActionSet() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("saved", nil).Do(kit.HostAction{Type: kit.ActionSet, Namespace: "settings", Key: "unit", Value: []byte(`"celsius"`)}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "settings.save"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"saved","data":{"host_actions":[{"type":"plugin_storage_set","namespace":"settings","key":"unit","value":"celsius"}]},"evidence":[]}
}

// Create is refused by the host when the key exists: nothing of the run is
// applied.
func ExampleCreate() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("added", nil).Do(kit.Create("notes", "bread", map[string]any{"text": "buy bread"})), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.add"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"added","data":{"host_actions":[{"type":"plugin_storage_set","namespace":"notes","key":"bread","value":{"text":"buy bread"}}]},"evidence":[]}
}

// Update is refused by the host when the item changed since the snapshot
// (its revision moved on).
func ExampleUpdate() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		it, _ := req.Item("notes", "milk")
		return kit.Reply("marked done", nil).Do(kit.Update("notes", it, map[string]any{"text": "buy milk", "done": true})), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.done", "plugin_storage": {"storage_revision": 6,
		"namespaces": {"notes": [{"key": "milk", "value": {"text": "buy milk"}, "revision": 6}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"marked done","data":{"host_actions":[{"type":"plugin_storage_set","namespace":"notes","key":"milk","value":{"done":true,"text":"buy milk"},"revision":6}]},"evidence":[]}
}

func ExampleDelete() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		res := kit.Reply("emptied", nil)
		for _, it := range req.Items("notes") {
			res.Do(kit.Delete("notes", it))
		}
		return res, nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.empty", "plugin_storage": {"storage_revision": 2,
		"namespaces": {"notes": [{"key": "a", "value": 1, "revision": 1}, {"key": "b", "value": 2, "revision": 2}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"emptied","data":{"host_actions":[{"type":"plugin_storage_delete","namespace":"notes","key":"a","revision":1},{"type":"plugin_storage_delete","namespace":"notes","key":"b","revision":2}]},"evidence":[]}
}

func ExampleNotification() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("backed up", nil).Notify(kit.Notification{
			ID: "backup", Title: "Backup done", Body: "12 notes were saved.", Severity: kit.Success,
		}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.backup", "trigger": "schedule"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"backed up","data":{"notifications":[{"id":"backup","title":"Backup done","body":"12 notes were saved.","severity":"success"}]},"evidence":[]}
}

func ExampleInfo() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		severity := kit.Info
		if len(req.Items("alerts")) > 0 {
			severity = kit.Warning // kit.Success and kit.Error are the others
		}
		return kit.Reply("checked", nil).Notify(kit.Notification{ID: "check", Title: "Checked", Severity: severity}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "site.check", "plugin_storage": {"storage_revision": 1,
		"namespaces": {"alerts": [{"key": "disk", "value": "90%", "revision": 1}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"checked","data":{"notifications":[{"id":"check","title":"Checked","severity":"warning"}]},"evidence":[]}
}

func ExampleActionButton() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("due", nil).Notify(kit.Notification{ID: "due", Title: "Invoice due", Severity: kit.Warning,
			Actions: []kit.ActionButton{{ID: "show", Label: "Show", Action: kit.Open("invoices", nil)}}}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "invoices.check"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"due","data":{"notifications":[{"id":"due","title":"Invoice due","severity":"warning","actions":[{"id":"show","label":"Show","action":{"type":"open","extension":"invoices"}}]}]},"evidence":[]}
}

func ExampleAction() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		snooze := kit.Action{Type: "invoke", Capability: "plants.remind", Arguments: map[string]any{"in_hours": 2}}
		return kit.Reply("reminded", nil).Notify(kit.Notification{ID: "water", Title: "Water the plants", Severity: kit.Info,
			Actions: []kit.ActionButton{{ID: "snooze", Label: "In 2 hours", Action: snooze}}}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "plants.remind"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"reminded","data":{"notifications":[{"id":"water","title":"Water the plants","severity":"info","actions":[{"id":"snooze","label":"In 2 hours","action":{"type":"invoke","capability":"plants.remind","arguments":{"in_hours":2}}}]}]},"evidence":[]}
}

// The host actions of an Apply wait with the host until the user takes the
// action: here, an Undo of the archiving the run does.
func ExampleApply() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		it, _ := req.Item("notes", "milk")
		return kit.Reply("archived", nil).
			Do(kit.Create("archive", it.Key, it.Value), kit.Delete("notes", it)).
			Notify(kit.Notification{ID: "archived", Title: "milk archived", Severity: kit.Success,
				Actions: []kit.ActionButton{{ID: "undo", Label: "Undo", Action: kit.Apply(kit.Create("notes", it.Key, it.Value))}}}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "notes.archive", "plugin_storage": {"storage_revision": 3,
		"namespaces": {"notes": [{"key": "milk", "value": "2 l", "revision": 3}]}}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"archived","data":{"host_actions":[{"type":"plugin_storage_set","namespace":"archive","key":"milk","value":"2 l"},{"type":"plugin_storage_delete","namespace":"notes","key":"milk","revision":3}],"notifications":[{"id":"archived","title":"milk archived","severity":"success","actions":[{"id":"undo","label":"Undo","action":{"type":"host_actions","host_actions":[{"type":"plugin_storage_set","namespace":"notes","key":"milk","value":"2 l"}]}}]}]},"evidence":[]}
}

func ExampleOpen() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("new mail", nil).Notify(kit.Notification{ID: "mail", Title: "1 new message", Severity: kit.Info,
			Actions: []kit.ActionButton{{ID: "read", Label: "Read", Action: kit.Open("message", map[string]any{"id": "m42"})}}}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "mail.check", "trigger": "schedule"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"new mail","data":{"notifications":[{"id":"mail","title":"1 new message","severity":"info","actions":[{"id":"read","label":"Read","action":{"type":"open","extension":"message","parameters":{"id":"m42"}}}]}]},"evidence":[]}
}

func ExampleInvoke() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Reply("stale", nil).Notify(kit.Notification{ID: "stale", Title: "The forecast is old", Severity: kit.Info,
			Actions: []kit.ActionButton{{ID: "refresh", Label: "Refresh", Action: kit.Invoke("weather.refresh", map[string]any{"city": "Bern"})}}}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "weather.check"}`), os.Stdout, os.Stderr)
	// Output: {"summary":"stale","data":{"notifications":[{"id":"stale","title":"The forecast is old","severity":"info","actions":[{"id":"refresh","label":"Refresh","action":{"type":"invoke","capability":"weather.refresh","arguments":{"city":"Bern"}}}]}]},"evidence":[]}
}

// A fetch with a connection gets the credential the user connected attached
// by the host (the module never sees it), only on the connection's hosts.
func ExampleFetch() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Fetching(kit.Fetch{ID: "issue", Method: "POST", URL: "https://api.github.com/repos/me/notes/issues",
			Headers: map[string]string{"Accept": "application/json"}, Body: `{"title": "Buy milk"}`, Connection: "github"}), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "github.file_issue"}`), os.Stdout, os.Stderr)
	// Output: {"fetch":[{"id":"issue","method":"POST","url":"https://api.github.com/repos/me/notes/issues","headers":{"Accept":"application/json"},"body":"{\"title\": \"Buy milk\"}","connection":"github"}]}
}

func ExampleGet() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		now := kit.Get("now", "https://api.weather.example/now?city=Oslo")
		now.Connection = "weather"
		return kit.Fetching(now), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "weather.now"}`), os.Stdout, os.Stderr)
	// Output: {"fetch":[{"id":"now","method":"GET","url":"https://api.weather.example/now?city=Oslo","connection":"weather"}]}
}

func ExampleFetching() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		if req.Round == 0 {
			return kit.Fetching(kit.Get("a", "https://api.example.com/a"), kit.Get("b", "https://api.example.com/b")), nil
		}
		return kit.Reply(fmt.Sprintf("round %d: %d answers", req.Round, len(req.Fetched)), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "sync.pull"}`), os.Stdout, os.Stderr)
	// Output: {"fetch":[{"id":"a","method":"GET","url":"https://api.example.com/a"},{"id":"b","method":"GET","url":"https://api.example.com/b"}]}
}

// The round after one that carried a value reads it; the first run has
// nothing carried.
func ExampleRequest_Carried() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		var page struct {
			Next string `json:"next"`
			Seen int    `json:"seen"`
		}
		ok, err := req.Carried(&page)
		if err != nil {
			return nil, err
		}
		if !ok {
			return kit.Reply("nothing carried: the first run", nil), nil
		}
		return kit.Reply(fmt.Sprintf("round %d goes on at %s, %d seen", req.Round, page.Next, page.Seen), nil), nil
	})
	kit.Serve(strings.NewReader(`{"capability": "sync.pull", "round": 2, "fetched": {"page": {"status": 200, "body": "[]"}},
		"carry": {"next": "cursor-2", "seen": 40}}`), os.Stdout, os.Stderr)
	// Output: {"summary":"round 2 goes on at cursor-2, 40 seen","data":{},"evidence":[]}
}

// A value that would pass MaxCarry is refused by the kit, naming the
// bound: the run fails before the host sees it.
func ExampleMaxCarry() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		return kit.Fetching(kit.Get("more", "https://api.example.com/more")).Carry(strings.Repeat("x", kit.MaxCarry)), nil
	})
	code := kit.Serve(strings.NewReader(`{"capability": "sync.pull"}`), os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	// Output:
	// kit: cannot write the result: the round's carry encodes to 65538 bytes of JSON; at most 65536 (kit.MaxCarry) are carried to the next round: carry less, such as the ids to fetch again
	// exit 1
}
