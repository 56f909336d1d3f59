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

// A capability in two rounds of fetches: the first looks up a city, the
// second its forecast, and the run that writes the answer still knows the
// city's name because each round carried it to the next.
func ExampleResult_Carry() {
	kit.Handle(func(req *kit.Request) (*kit.Result, error) {
		var city struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		}
		switch req.Round {
		case 0:
			return kit.Fetching(kit.Get("city", "https://api.weather.example/city?q=Oslo")), nil
		case 1:
			resp, err := req.Answer("city")
			if err != nil {
				return nil, err
			}
			if err := resp.JSON(&city); err != nil {
				return nil, err
			}
			forecast := kit.Get("forecast", fmt.Sprintf("https://api.weather.example/forecast/%d", city.ID))
			return kit.Fetching(forecast).Carry(city), nil
		}
		if _, err := req.Carried(&city); err != nil {
			return nil, err
		}
		resp, err := req.Answer("forecast")
		if err != nil {
			return nil, err
		}
		return kit.Reply(city.Name+": "+resp.Body, nil), nil
	})

	for _, request := range []string{
		`{"capability":"weather.forecast","instance":{"id":"inst_1"}}`,
		`{"capability":"weather.forecast","instance":{"id":"inst_1"},"round":1,"fetched":{"city":{"status":200,"body":"{\"id\":3143244,\"name\":\"Oslo\"}"}}}`,
		`{"capability":"weather.forecast","instance":{"id":"inst_1"},"round":2,"fetched":{"forecast":{"status":200,"body":"sunny"}},"carry":{"id":3143244,"name":"Oslo"}}`,
	} {
		kit.Serve(strings.NewReader(request), os.Stdout, os.Stderr)
		fmt.Println()
	}
	// Output:
	// {"fetch":[{"id":"city","method":"GET","url":"https://api.weather.example/city?q=Oslo"}]}
	// {"carry":{"id":3143244,"name":"Oslo"},"fetch":[{"id":"forecast","method":"GET","url":"https://api.weather.example/forecast/3143244"}]}
	// {"summary":"Oslo: sunny","data":{},"evidence":[]}
}
