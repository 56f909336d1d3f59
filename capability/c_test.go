package capability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"pluginhost/capability"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// A plugin whose capabilities are C modules (clang with wasi-libc), a command
// and a reactor, installs and runs through the host like any other: each run
// sees its own Instance's notes, counts one run, and nothing of the other
// Instance's runs.
func TestCPluginRuns(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		env := fixture.New(t, b)
		alice := env.User(t, "alice")
		m := fixture.Manifest("com.example.cnotes", fixture.NS("notes", 65536))
		m["capabilities"] = []any{
			map[string]any{"id": "c.command", "kind": "tool", "description": "C command", "module": "capabilities/command.wasm"},
			map[string]any{"id": "c.reactor", "kind": "tool", "description": "C reactor", "module": "capabilities/reactor.wasm"},
		}
		pkg := env.Package(t, m, map[string][]byte{
			"capabilities/command.wasm": wasmtest.C(t, "../sandbox/testdata/c/notes.c", false),
			"capabilities/reactor.wasm": wasmtest.C(t, "../sandbox/testdata/c/notes.c", true),
		})
		installed, err := env.Life.Install(context.Background(), alice, pkg)
		if err != nil {
			t.Fatal(err)
		}
		caller := models.Caller{UserID: alice.ID}
		var instances []*models.Instance
		for i := range 2 {
			inst := env.Instance(t, alice, installed)
			instances = append(instances, inst)
			for n := range i + 1 { // the first Instance has 1 note, the second 2
				if _, err := env.Store.Create(context.Background(), caller, inst.ID, "notes", fmt.Sprint("n", n), models.JSON(`"x"`)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for round := range 3 {
			for i, inst := range instances {
				for _, c := range []string{"c.command", "c.reactor"} {
					res, err := env.Runs.Run(context.Background(), capability.Call{Caller: caller, InstanceID: inst.ID, Capability: c,
						Arguments: models.JSON(`{}`), Trigger: sandbox.TriggerInvoke})
					if err != nil {
						t.Fatalf("round %d, %s on Instance %d: %v", round, c, i, err)
					}
					var got struct {
						Runs, Notes int
						Earlier     string `json:"earlier_instance"`
					}
					json.Unmarshal(res.Data, &got)
					if got.Runs != 1 || got.Notes != i+1 || got.Earlier != "" {
						t.Fatalf("round %d, %s on Instance %d saw %+v; want 1 run, %d notes, no earlier Instance", round, c, i, got, i+1)
					}
				}
			}
		}
	})
}
