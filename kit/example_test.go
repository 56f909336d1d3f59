package kit_test

import (
	"fmt"
	"os"
	"strings"

	"pluginhost/kit"
)

// A capability that counts the Instance's notes, cites the done ones and
// archives them. In a plugin, init registers it and main calls kit.Main;
// here Serve runs it on a request as the host would write it.
func Example() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		var args struct {
			Archive bool `json:"archive"`
		}
		if err := req.Args(&args); err != nil {
			return nil, err
		}
		notes := req.Items("notes")
		res := kit.Reply(fmt.Sprintf("%d notes", len(notes)), map[string]any{"count": len(notes)})
		for _, it := range notes {
			var n struct {
				Text string `json:"text"`
				Done bool   `json:"done"`
			}
			if err := it.Decode(&n); err != nil {
				return nil, err
			}
			if n.Done && args.Archive {
				res.Cite(req.Evidence("notes", it)).Do(kit.Create("archive", it.Key, n), kit.Delete("notes", it))
			}
		}
		return res, nil
	})

	request := `{"capability":"notes.archive","kind":"tool","trigger":"invoke","arguments":{"archive":true},
		"instance":{"id":"inst_1","installation_id":"inl_1","generation":1},
		"plugin_storage":{"storage_revision":2,"namespaces":{"notes":[
			{"key":"milk","value":{"text":"buy milk","done":true},"revision":2},
			{"key":"call","value":{"text":"call Ann"},"revision":1}]}}}`
	code := kit.Serve(strings.NewReader(request), os.Stdout, os.Stderr)
	fmt.Println("\nexit", code)
	// Output:
	// {"summary":"2 notes","data":{"count":2,"host_actions":[{"type":"plugin_storage_set","namespace":"archive","key":"milk","value":{"text":"buy milk","done":true}},{"type":"plugin_storage_delete","namespace":"notes","key":"milk","revision":2}]},"evidence":[{"type":"plugin_storage","instance_id":"inst_1","namespace":"notes","key":"milk","revision":2}]}
	// exit 0
}
