package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/wasmbin"
)

// Modules built by another toolchain, C with wasi-libc and Debian's clang,
// run unchanged: as a command, as a reactor, and as a reactor pre-initialized
// by pluginhost build's step. Each run reads its request, sees the snapshot,
// and starts from a clean state: one run counted, no earlier Instance.
func TestCModules(t *testing.T) {
	e := newEngine(t, Limits{})
	reactor := wasmtest.C(t, "testdata/c/notes.c", true)
	pre, err := e.Preinitialize(context.Background(), reactor)
	if err != nil {
		t.Fatalf("pre-initialize the C reactor: %v", err)
	}
	for _, tt := range []struct {
		name string
		wasm []byte
		kind string
	}{
		{"command", wasmtest.C(t, "testdata/c/notes.c", false), wasmbin.KindCommand},
		{"reactor", reactor, wasmbin.KindReactor},
		{"reactor, pre-initialized", pre, wasmbin.KindReactor},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := compileBytes(t, e, tt.wasm)
			if m.Kind() != tt.kind {
				t.Fatalf("the module is a %s, want %s", m.Kind(), tt.kind)
			}
			for i := range 4 {
				j := job(m, models.Capability{}, `{}`)
				j.Request.Instance.ID = fmt.Sprint("inst_c_", i)
				j.Request.PluginStorage = &PluginStorage{StorageRevision: 3, Namespaces: map[string][]Item{"notes": {
					{Key: "a", Value: json.RawMessage(`"x"`), Revision: 1},
					{Key: "b", Value: json.RawMessage(`"y"`), Revision: 1},
					{Key: "c", Value: json.RawMessage(`"z"`), Revision: 1},
				}}}
				res, _, err := e.Run(context.Background(), j)
				if err != nil {
					t.Fatalf("run %d: %v", i+1, err)
				}
				var got struct {
					Runs, Notes int
					Earlier     string `json:"earlier_instance"`
				}
				if err := json.Unmarshal(res.Data, &got); err != nil {
					t.Fatalf("run %d: %s: %v", i+1, res.Data, err)
				}
				if got.Runs != 1 || got.Notes != 3 || got.Earlier != "" {
					t.Fatalf("run %d saw %+v; want 1 run, 3 notes, no earlier Instance", i+1, got)
				}
			}
		})
	}
}
