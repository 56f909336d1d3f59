// Command tick counts its runs in storage: it reads the key "ticks" of the
// namespace "notes" from its snapshot and asks the host, through a host
// action, to store one more.
package main

import (
	"encoding/json"
	"os"
)

type item struct {
	Key      string `json:"key"`
	Value    int    `json:"value"`
	Revision int    `json:"revision"`
}

func main() {
	var req struct {
		PluginStorage struct {
			Namespaces map[string][]item `json:"namespaces"`
		} `json:"plugin_storage"`
	}
	json.NewDecoder(os.Stdin).Decode(&req)
	action := map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "ticks", "value": 1}
	for _, it := range req.PluginStorage.Namespaces["notes"] {
		if it.Key == "ticks" {
			action["value"], action["revision"] = it.Value+1, it.Revision
		}
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"summary": "tick",
		"data":    map[string]any{"host_actions": []any{action}},
	})
}
