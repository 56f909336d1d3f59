package kit

import (
	"encoding/json"
	"runtime"
)

// The JSON codecs of the kit's types are built here, at initialization, so
// that they are part of the state every run starts from, instead of being
// built again by every run.
func init() {
	var req Request
	json.Unmarshal([]byte(`{"arguments":{},"query":"","instance":{},"plugin_storage":{"namespaces":{"n":[{"key":"k","value":{},"revision":1}]}},"fetched":{"f":{"headers":{}}},"carry":{}}`), &req)
	r := Reply("", map[string]any{"a": []any{1.0, "", true, nil, map[string]any{}}})
	r.Do(Create("n", "k", 1), Delete("n", Item{}))
	r.Notify(Notification{Actions: []ActionButton{{Action: Apply()}}})
	r.Cite(Evidence{})
	r.encode()
	Fetching(Get("f", "")).encode()
	// The state every run starts from holds a heap just collected: a run
	// then allocates up to the collector's goal before it collects.
	runtime.GC()
}
