// Command echo is the smallest useful capability: it answers the request's
// arguments as its data.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	var req struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	json.NewDecoder(os.Stdin).Decode(&req)
	if len(req.Arguments) == 0 || string(req.Arguments) == "null" {
		req.Arguments = json.RawMessage("{}")
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": "echo", "data": req.Arguments})
}
