package extensions_test

import (
	"fmt"
	"testing"

	"pluginhost/extensions"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// Benchmarks of what an app client and the AI call most, on SQLite:
// go test ./extensions -run '^$' -bench . -benchtime 500x
func BenchmarkHosting(b *testing.B) {
	backend := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/bench.db"}
	h := newHost(b, backend)
	alice := h.User(b, "alice")
	instl := h.install(b, alice, weather(b, "1.0.0", nil))
	inst := h.Instance(b, alice, instl)
	cands, err := h.ext.Candidates(ctx, alice)
	if err != nil {
		b.Fatal(err)
	}
	result := js(weatherResult(inst.ID))
	b.Run("uiConfig", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("setExtensionState", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main", js(map[string]any{"city": fmt.Sprint(i)})); err != nil {
				b.Fatal(err)
			}
		}
	})
	msg := 0
	b.Run("selectResponseUi", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			msg++
			r, err := h.ext.Select(ctx, alice, extensions.Selection{Handle: cands[0].Handle, MessageID: fmt.Sprintf("m%d", msg),
				Capability: "weather.lookup", Result: result})
			if err != nil || !r.Rendered {
				b.Fatal(err, r)
			}
		}
	})
}
