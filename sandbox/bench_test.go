package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// BenchmarkEchoModuleOnly: the echo module's own time (the Go runtime
// starting in the instance, reading stdin, writing stdout), measured inside
// the engine around the instance alone; the host's overhead is a run's time
// minus this (see BenchmarkHostOverhead in package capability).
func BenchmarkEchoModuleOnly(b *testing.B) {
	e := newEngine(b, Limits{})
	m := compile(b, e, "echo")
	stdin := []byte(`{"capability":"bench.echo","kind":"tool","trigger":"invoke","arguments":{"a":1},"query":null,"instance":{"id":"i","installation_id":"n","generation":1}}`)
	wasmtest.BenchCalls(b, func() error {
		_, err := e.exec(context.Background(), m, "u", "i", false, time.Time{}, stdin)
		return err
	})
}

// BenchmarkReactorEcho: a run of a Go-built reactor that echoes its
// arguments, through Run: an instance kept from the last run, restored to its
// initialized state, called, its result read and checked.
func BenchmarkReactorEcho(b *testing.B) {
	e := newEngine(b, Limits{})
	m := compileBytes(b, e, wasmtest.Reactor(b, reactors, "echo"))
	j := job(m, models.Capability{}, `{"a":1}`)
	e.Run(context.Background(), j) // initialize
	wasmtest.BenchCalls(b, func() error {
		_, _, err := e.Run(context.Background(), j)
		return err
	})
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
	base := wasmtest.RSSKiB(b, "VmRSS")
	wasmtest.ResetPeakRSS()
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
			b.Logf("%s: peak so far %d MiB", name, wasmtest.RSSKiB(b, "VmHWM")/1024)
		}
	}
	b.StopTimer()
	peak := wasmtest.RSSKiB(b, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peak-base)/1024, "peak-above-idle-MiB")
}

// BenchmarkBulkOverrun runs, for each bulk instruction and each call of
// WASI whose cost grows with its length, 16 loops of it at once at the
// largest sizes the limits allow (TestBulkInstructionsTimeOut's and
// TestLongHostCallsTimeOut's set-up, a wall time of 1 s), and reports how far past the wall time the
// runs ended (the median and the latest of the 16, over all instructions),
// and the process's CPU time in the 200 ms after the last one ended. The
// targets are a latest overrun under 500 ms and the CPU back to idle.
//
//	go test -run '^$' -bench BulkOverrun -benchtime 1x ./sandbox
func BenchmarkBulkOverrun(b *testing.B) {
	const runs = 16
	e := newEngine(b, bulkLimits(runs))
	modules := map[string]*Module{}
	kinds := append(slices.Clone(wasmtest.BulkKinds), wasmtest.HostCallKinds...)
	for _, kind := range wasmtest.BulkKinds {
		modules[kind] = compileBytes(b, e, bulkLoop(kind))
	}
	for _, kind := range wasmtest.HostCallKinds {
		modules[kind] = compileBytes(b, e, wasmtest.HostCallLoop(kind, bulkMemoryBytes))
	}
	var overruns []time.Duration
	var after time.Duration
	b.ResetTimer()
	for range b.N {
		for _, kind := range kinds {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					j := job(modules[kind], models.Capability{}, `{}`)
					j.User, j.Request.Instance.ID = fmt.Sprint("usr_", i), fmt.Sprint("inst_", i)
					begun := time.Now()
					_, _, err := e.Run(context.Background(), j)
					over := time.Since(begun) - e.Limits().Timeout
					if f := (*models.Error)(nil); !errors.As(err, &f) || f.Reason != models.ReasonTimeout {
						b.Errorf("%s: %v", kind, err)
					}
					mu.Lock()
					overruns = append(overruns, over)
					mu.Unlock()
				}()
			}
			wg.Wait()
			cpu := wasmtest.CPUTime()
			time.Sleep(200 * time.Millisecond)
			after += wasmtest.CPUTime() - cpu
			b.Logf("%s: latest overrun %v", kind, slices.Max(overruns[len(overruns)-runs:]))
		}
	}
	b.StopTimer()
	p50, _ := wasmtest.Percentiles(overruns)
	b.ReportMetric(p50, "overrun-p50-ms")
	b.ReportMetric(float64(slices.Max(overruns).Microseconds())/1000, "overrun-max-ms")
	b.ReportMetric(float64(after.Microseconds())/1000/float64(b.N*len(kinds)), "cpu-ms-in-200ms-after")
}

// BenchmarkReactorAlloc: runs of a Go-built reactor that allocate 256 KiB
// (within the free heap the kit leaves at initialization: the instance is
// restored and kept) and 4 MiB (past it: the run grows the memory, and the
// instance is replaced by a new one after the run answers).
func BenchmarkReactorAlloc(b *testing.B) {
	for _, kib := range []int{256, 4096} {
		b.Run(fmt.Sprintf("%dKiB", kib), func(b *testing.B) {
			e := newEngine(b, Limits{})
			m := compileBytes(b, e, wasmtest.Reactor(b, reactors, "alloc"))
			j := job(m, models.Capability{}, fmt.Sprintf(`{"kib":%d}`, kib))
			e.Run(context.Background(), j) // initialize
			wasmtest.BenchCalls(b, func() error {
				_, _, err := e.Run(context.Background(), j)
				return err
			})
		})
	}
}
