package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// summaryJob is a run of the example plugin's notes.summary tool over 50
// notes: a Go-built capability doing real work on a snapshot.
func summaryJob(t testing.TB, e *Engine) Job {
	dir := wasmtest.Example(t, "../examples/notes")
	wasm, err := os.ReadFile(filepath.Join(dir, "capabilities", "summary.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	var items []Item
	for i := range 50 {
		v, _ := json.Marshal(map[string]string{"text": strings.Repeat(fmt.Sprintf("word%d ", i), 20)})
		items = append(items, Item{Key: fmt.Sprintf("note-%02d", i), Value: v, Revision: 1})
	}
	return Job{
		Capability: models.Capability{ID: "notes.summary", Kind: models.KindTool},
		Module:     m,
		Request: Request{Capability: "notes.summary", Kind: models.KindTool, Trigger: TriggerInvoke, Arguments: json.RawMessage(`{"limit":3}`),
			Instance:      Instance{ID: "inst_bench", InstallationID: "inl_bench", Generation: 1},
			PluginStorage: &PluginStorage{StorageRevision: 50, Namespaces: map[string][]Item{"notes": items}}},
	}
}

// percentiles reports p50 and p99 of the durations as benchmark metrics.
func percentiles(b *testing.B, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkRunWarm: one run of a Go-built capability whose module is
// compiled (the steady state of a server): instantiate afresh, run, read and
// check the result.
func BenchmarkRunWarm(b *testing.B) {
	e := newEngine(b, Limits{})
	job := summaryJob(b, e)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := wasmtest.CPUTime()
	for range b.N {
		begun := time.Now()
		if _, _, err := e.Run(context.Background(), job); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(begun))
	}
	wasmtest.ReportCPU(b, cpu)
	percentiles(b, ds)
}

// BenchmarkEchoModuleOnly: the echo module's own time (the Go runtime
// starting in the instance, reading stdin, writing stdout), measured inside
// the engine around the instance alone; the host's overhead is a run's time
// minus this (see BenchmarkHostOverhead in package capability).
func BenchmarkEchoModuleOnly(b *testing.B) {
	e := newEngine(b, Limits{})
	m := compile(b, e, "echo")
	stdin := []byte(`{"capability":"bench.echo","kind":"tool","trigger":"invoke","arguments":{"a":1},"query":null,"instance":{"id":"i","installation_id":"n","generation":1}}`)
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := wasmtest.CPUTime()
	for range b.N {
		begun := time.Now()
		if _, err := e.exec(context.Background(), m, "u", "i", false, stdin); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(begun))
	}
	wasmtest.ReportCPU(b, cpu)
	percentiles(b, ds)
}

// BenchmarkCompile: compiling the notes.summary module to machine code, cold
// (an empty cache) and after a restart (a new engine on the same cache
// folder).
func BenchmarkCompile(b *testing.B) {
	dir := wasmtest.Example(b, "../examples/notes")
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
				e, _ := New(context.Background(), cache, Limits{})
				e.Compile(context.Background(), wasm)
				e.Close(context.Background())
			}
			b.ResetTimer()
			for i := range b.N {
				e, err := New(context.Background(), tt.dir(i), Limits{})
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
	e := newEngine(b, Limits{Concurrency: 16, PerInstance: 16})
	job := summaryJob(b, e)
	e.Run(context.Background(), job) // warm
	base := rssKiB(b, "VmRSS")
	resetPeak()
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
	peak := rssKiB(b, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peak-base)/1024, "peak-above-idle-MiB")
}

// resetPeak resets the kernel's peak RSS of the process (Linux).
func resetPeak() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// rssKiB reads a memory figure of /proc/self/status, in KiB.
func rssKiB(b *testing.B, field string) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	b.Skip("no " + field)
	return 0
}

// BenchmarkReactorEcho: a run of a Go-built reactor that echoes its
// arguments, through Run: an instance kept from the last run, restored to its
// initialized state, called, its result read and checked.
func BenchmarkReactorEcho(b *testing.B) {
	e := newEngine(b, Limits{})
	m := compileBytes(b, e, wasmtest.Reactor(b, reactors, "echo"))
	j := job(m, models.Capability{}, `{"a":1}`)
	e.Run(context.Background(), j) // initialize
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := wasmtest.CPUTime()
	for range b.N {
		begun := time.Now()
		if _, _, err := e.Run(context.Background(), j); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(begun))
	}
	wasmtest.ReportCPU(b, cpu)
	percentiles(b, ds)
}

// BenchmarkHostileSet16 runs each hostile module 16 times at once (16
// Instances of 16 users) with the default limits, module after module, and
// reports the process's peak resident memory over the whole set, and above
// what it held before. The target is a peak under 512 MiB.
//
//	go test -run '^$' -bench HostileSet16 -benchtime 1x ./sandbox
func BenchmarkHostileSet16(b *testing.B) {
	const pagesAtLimit = DefaultMemoryBytes / (64 << 10)
	e := newEngine(b, Limits{Concurrency: 16, PerUser: 16, Timeout: 2 * time.Second})
	set := map[string][]byte{
		"memory at the limit, untouched": wasmtest.BigMemory(pagesAtLimit, false),
		"memory grown and written":       wasmtest.MemoryGrowLoop(),
		"a table grown to its maximum":   wasmtest.TableGrowLoop(1<<20, true),
		"endless recursion":              wasmtest.Recursion(),
		"go: allocating until refused":   wasmtest.Module(b, modules, "memory"),
		"go: an endless loop":            wasmtest.Module(b, modules, "loop"),
		"go reactor: echo":               wasmtest.Reactor(b, reactors, "echo"),
	}
	compiled := map[string]*Module{}
	for name, wasm := range set {
		compiled[name] = compileBytes(b, e, wasm)
	}
	base := rssKiB(b, "VmRSS")
	resetPeak()
	b.ResetTimer()
	for range b.N {
		for name, m := range compiled {
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					j := job(m, models.Capability{}, `{"a":1}`)
					j.User, j.Request.Instance.ID = fmt.Sprint("user", i), fmt.Sprint("inst", i)
					e.Run(context.Background(), j)
				}()
			}
			wg.Wait()
			b.Logf("%s: peak so far %d MiB", name, rssKiB(b, "VmHWM")/1024)
		}
	}
	b.StopTimer()
	peak := rssKiB(b, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peak-base)/1024, "peak-above-idle-MiB")
}
