package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pluginhost/internal/plugintest"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

func newEngine(b *testing.B, l sandbox.Limits) *sandbox.Engine {
	e, err := sandbox.New(context.Background(), b.TempDir(), l)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// summaryJob is a run of the example plugin's notes.summary tool over 50
// notes: a Go-built capability doing real work on a snapshot.
func summaryJob(t testing.TB, e *sandbox.Engine) sandbox.Job {
	dir := plugintest.Example(t, "../examples/notes")
	wasm, err := os.ReadFile(filepath.Join(dir, "capabilities", "summary.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	var items []sandbox.Item
	for i := range 50 {
		v, _ := json.Marshal(map[string]string{"text": strings.Repeat(fmt.Sprintf("word%d ", i), 20)})
		items = append(items, sandbox.Item{Key: fmt.Sprintf("note-%02d", i), Value: v, Revision: 1})
	}
	return sandbox.Job{
		Capability: models.Capability{ID: "notes.summary", Kind: models.KindTool},
		Module:     m,
		Request: sandbox.Request{Capability: "notes.summary", Kind: models.KindTool, Trigger: sandbox.TriggerInvoke, Arguments: json.RawMessage(`{"limit":3}`),
			Instance:      sandbox.Instance{ID: "inst_bench", InstallationID: "inl_bench", Generation: 1},
			PluginStorage: &sandbox.PluginStorage{StorageRevision: 50, Namespaces: map[string][]sandbox.Item{"notes": items}}},
	}
}

// BenchmarkRunWarm: one run of a Go-built capability whose module is
// compiled (the steady state of a server): instantiate afresh, run, read and
// check the result.
func BenchmarkRunWarm(b *testing.B) {
	e := newEngine(b, sandbox.Limits{})
	job := summaryJob(b, e)
	wasmtest.BenchCalls(b, func() error {
		_, _, err := e.Run(context.Background(), job)
		return err
	})
}

// BenchmarkCompile: compiling the notes.summary module to machine code, cold
// (an empty cache) and after a restart (a new engine on the same cache
// folder).
func BenchmarkCompile(b *testing.B) {
	dir := plugintest.Example(b, "../examples/notes")
	wasm, err := os.ReadFile(filepath.Join(dir, "capabilities", "summary.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(wasm))/(1<<20), "module-MiB")
	cache := b.TempDir()
	for _, tt := range []struct {
		name string
		dir  func(i int) string
	}{
		{"cold", func(i int) string { return filepath.Join(b.TempDir(), strconv.Itoa(i)) }},
		{"cached", func(int) string { return cache }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			if tt.name == "cached" { // fill the cache once
				e, _ := sandbox.New(context.Background(), cache, sandbox.Limits{})
				e.Compile(context.Background(), wasm)
				e.Close(context.Background())
			}
			b.ResetTimer()
			for i := range b.N {
				e, err := sandbox.New(context.Background(), tt.dir(i), sandbox.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Compile(context.Background(), wasm); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				e.Close(context.Background())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkConcurrent16: 16 runs of notes.summary at once; reports the
// process's peak resident memory during them, above what it held before.
func BenchmarkConcurrent16(b *testing.B) {
	e := newEngine(b, sandbox.Limits{Concurrency: 16, PerInstance: 16})
	job := summaryJob(b, e)
	e.Run(context.Background(), job) // warm
	base := wasmtest.RSSKiB(b, "VmRSS")
	wasmtest.ResetPeakRSS()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := e.Run(context.Background(), job); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	peak := wasmtest.RSSKiB(b, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peak-base)/1024, "peak-above-idle-MiB")
}
