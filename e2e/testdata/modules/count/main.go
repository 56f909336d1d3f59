// Command count is a data capability of the web host's test plugin: it
// answers the number of notes in its storage snapshot. A screen shows it
// as an ordinary (not storage) source, which storage changes must not re-run.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var req struct {
		PluginStorage struct {
			Namespaces map[string][]json.RawMessage `json:"namespaces"`
		} `json:"plugin_storage"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		os.Exit(1)
	}
	n := len(req.PluginStorage.Namespaces["notes"])
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": fmt.Sprintf("%d notes", n), "data": map[string]any{"n": n}})
}
