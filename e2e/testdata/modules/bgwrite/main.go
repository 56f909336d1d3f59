// Command bgwrite is the background capability of the web host's test
// plugin: each run writes one note, "bg", with the run's clock, through a
// host action, as a plugin's scheduled job would.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	var req struct {
		PluginStorage struct {
			Namespaces map[string][]struct {
				Key      string `json:"key"`
				Revision int    `json:"revision"`
			} `json:"namespaces"`
		} `json:"plugin_storage"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		os.Exit(1)
	}
	action := map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "bg", "value": map[string]any{"text": "from the background " + time.Now().UTC().Format(time.RFC3339Nano)}}
	for _, it := range req.PluginStorage.Namespaces["notes"] {
		if it.Key == "bg" {
			action["revision"] = it.Revision
		}
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": "wrote bg", "data": map[string]any{"host_actions": []any{action}}})
}
