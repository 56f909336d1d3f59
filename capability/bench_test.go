package capability_test

import (
	"context"
	"testing"

	"pluginhost/capability"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// BenchmarkHostPathEcho: a whole run through the host, on SQLite, of the echo
// module (which only answers its arguments): the Instance and its package
// read, the module found, the storage snapshot read, the request written, the
// run, the result read and checked, the audit record written. The host's
// overhead per run is this minus the module's own time
// (sandbox.BenchmarkEchoModuleOnly).
func BenchmarkHostPathEcho(b *testing.B) {
	h := newHostTB(b, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/pluginhost.db"})
	call := capability.Call{Caller: models.Caller{UserID: h.user.ID}, InstanceID: h.inst.ID, Capability: "notes.echo", Arguments: models.JSON(`{"a":1}`), Trigger: sandbox.TriggerInvoke}
	if _, err := h.runs.Run(context.Background(), call); err != nil { // compile
		b.Fatal(err)
	}
	wasmtest.BenchCalls(b, func() error {
		_, err := h.runs.Run(context.Background(), call)
		return err
	})
}
