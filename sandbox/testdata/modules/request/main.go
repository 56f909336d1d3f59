// Command request answers the whole request it read as data.request, and the
// arguments' host_actions and extra data as its own: a stand-in for a plugin
// that reads its storage snapshot and asks for changes.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var req map[string]json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		os.Exit(1)
	}
	var args map[string]json.RawMessage
	json.Unmarshal(req["arguments"], &args)
	data := map[string]any{"request": req}
	for k, v := range args {
		data[k] = v
	}
	fmt.Fprintln(os.Stderr, "request read")
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": "request", "data": data})
}
