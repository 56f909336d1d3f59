// Command archive is the notes.archive background capability of the example
// plugin: on its schedule it moves every note marked done from the namespace
// notes to the namespace archive. It changes nothing itself: it answers host
// actions, which the host applies in one transaction, or none of them. Build
// it with GOOS=wasip1 GOARCH=wasm (see the README).
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

type item struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

func main() {
	var req struct {
		PluginStorage struct {
			Namespaces map[string][]item `json:"namespaces"`
		} `json:"plugin_storage"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "archive: cannot read the request:", err)
		os.Exit(1)
	}
	archived := map[string]bool{}
	for _, it := range req.PluginStorage.Namespaces["archive"] {
		archived[it.Key] = true
	}
	actions := []map[string]any{}
	for _, it := range req.PluginStorage.Namespaces["notes"] {
		var v struct {
			Done bool `json:"done"`
		}
		if json.Unmarshal(it.Value, &v) != nil || !v.Done || archived[it.Key] {
			continue
		}
		actions = append(actions,
			map[string]any{"type": "plugin_storage_set", "namespace": "archive", "key": it.Key, "value": it.Value},
			map[string]any{"type": "plugin_storage_delete", "namespace": "notes", "key": it.Key, "revision": it.Revision})
		if len(actions) >= 64 { // the host applies at most 64 actions per result
			break
		}
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"summary": fmt.Sprintf("archived %d notes", len(actions)/2),
		"data":    map[string]any{"archived": len(actions) / 2, "host_actions": actions},
	})
}
