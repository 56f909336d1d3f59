package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/wasmbin"
)

// Every way a module can take more than a run may have is refused at
// compile, naming the bound, or stops its run with reason memory or
// timeout; none answers anything else, and none takes the process down.
func TestHostileModules(t *testing.T) {
	const memLimit = 64 << 20
	pages := uint64(memLimit / wasmbin.PageBytes)
	e := newEngine(t, Limits{Timeout: 2 * time.Second, MemoryBytes: memLimit})
	for _, tt := range []struct {
		name   string
		wasm   []byte
		refuse string // a part of the compile error; empty: it compiles
		reason string // the run's reason, when it compiles
	}{
		{"memory at the limit, not exported", wasmtest.BigMemory(pages, false), "", models.ReasonBadOutput},
		{"memory one page past the limit, not exported", wasmtest.BigMemory(pages+1, false), "memory an instance starts with", ""},
		{"memory one page past the limit, exported", wasmtest.BigMemory(pages+1, true), "memory an instance starts with", ""},
		{"memory of 4 GiB, not exported", wasmtest.BigMemory(65536, false), "memory an instance starts with", ""},
		{"memory grown page by page", wasmtest.MemoryGrowLoop(), "", models.ReasonMemory},
		{"table grown without a maximum", wasmtest.TableGrowLoop(0, false), "declare a maximum", ""},
		{"table grown to a maximum past the limit", wasmtest.TableGrowLoop(wasmbin.DefaultMaxTableElements+1, true), "elements the tables may hold", ""},
		{"table grown to a maximum at the limit", wasmtest.TableGrowLoop(wasmbin.DefaultMaxTableElements, true), "", models.ReasonTimeout},
		{"endless recursion", wasmtest.Recursion(), "", models.ReasonMemory},
		{"blocks nested at the limit", wasmtest.NestedBlocks(wasmbin.DefaultMaxNesting), "", models.ReasonBadOutput},
		{"blocks nested past the limit", wasmtest.NestedBlocks(wasmbin.DefaultMaxNesting + 1), "nesting of blocks", ""},
		{"locals live across blocks (compile bomb)", wasmtest.LiveLocals(1000, 1000), "locals times blocks", ""},
		{"80 KB of nested blocks (compile bomb)", wasmtest.NestedBlocks(80 << 10 / 6), "nesting of blocks", ""},
		{"a trap", wasmtest.Trap(), "", models.ReasonExit},
		{"code that does not validate", wasmtest.Invalid(), "not a valid WebAssembly module", ""},
		{"a start function that loops", wasmtest.StartLoop(), "", models.ReasonTimeout},
		{"a data segment past the memory's end", wasmtest.SegmentOutOfBounds(), "does not fit", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := e.Compile(context.Background(), tt.wasm)
			if tt.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refuse) {
					t.Fatalf("compile: got %v, want a refusal naming %q", err, tt.refuse)
				}
				return
			}
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			defer e.Release(m)
			_, _, err = e.Run(context.Background(), job(m, models.Capability{}, `{}`))
			if f := failure(t, err); f.Reason != tt.reason {
				t.Fatalf("run: got %v (reason %q), want reason %q", err, f.Reason, tt.reason)
			}
			if e.MemoryInUse() != 0 {
				t.Errorf("after the run, %d bytes are still charged to the memory of all runs", e.MemoryInUse())
			}
		})
	}
}

// The memory of all runs is bounded: a run that would take more than what
// other runs leave of it fails with reason memory (naming the other runs),
// and what runs held is given back when they end.
func TestMemoryOfAllRuns(t *testing.T) {
	const limit = 64 << 20
	e := newEngine(t, Limits{Timeout: 3 * time.Second, MemoryBytes: limit, TotalMemoryBytes: limit + limit/2 + stackReserve(Limits{StackBytes: DefaultStackBytes})*2})
	holder := compileBytes(t, e, wasmtest.HoldMemory(limit/wasmbin.PageBytes))
	grower := compileBytes(t, e, wasmtest.MemoryGrowLoop())
	held := make(chan error, 1)
	go func() {
		j := job(holder, models.Capability{}, `{}`)
		j.Request.Instance.ID = "holder"
		_, _, err := e.Run(context.Background(), j)
		held <- err
	}()
	for e.MemoryInUse() < limit { // the holder has its memory
		time.Sleep(time.Millisecond)
	}
	j := job(grower, models.Capability{}, `{}`)
	j.Request.Instance.ID = "grower"
	_, _, err := e.Run(context.Background(), j)
	if f := failure(t, err); f.Reason != models.ReasonMemory || !strings.Contains(f.Message, "in use by other runs") {
		t.Fatalf("a run past what the holder leaves: %v", err)
	}
	if f := failure(t, <-held); f.Reason != models.ReasonTimeout {
		t.Fatalf("the holder: %v", f)
	}
	if e.MemoryInUse() != 0 {
		t.Errorf("after the runs, %d bytes are still charged", e.MemoryInUse())
	}
}

// Compilation is bounded in time and memory: a module that passes the
// structural limits but costs more than the budget to compile is refused,
// naming the budget, and the server's process is untouched.
func TestCompileBudget(t *testing.T) {
	for _, tt := range []struct {
		name   string
		limits Limits
		wasm   []byte
		want   string
	}{
		{"time", Limits{CompileTimeout: 50 * time.Millisecond}, wasmtest.ManyBlockFunctions(40, 4000), "compilation time budget"},
		{"memory", Limits{CompileMemoryBytes: 24 << 20}, wasmtest.ManyBlockFunctions(4, 4000), "compilation memory budget"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(context.Background(), t.TempDir(), tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			_, err = e.Compile(context.Background(), tt.wasm)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a refusal naming the %s", err, tt.want)
			}
			// The refusal is remembered: the module is not compiled again.
			if _, again := e.Compile(context.Background(), tt.wasm); again == nil || again.Error() != err.Error() {
				t.Fatalf("compiled again: %v", again)
			}
		})
	}
}

// Closing the engine stops a compilation under way at once (its process is
// killed) rather than waiting for it.
func TestCloseStopsCompilation(t *testing.T) {
	e, err := New(context.Background(), t.TempDir(), Limits{CompileTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	e.Compile(gone, wasmtest.ManyBlockFunctions(250, 4000)) // a minute of work
	closed := make(chan error, 1)
	go func() { closed <- e.Close(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waited for a compilation of minutes")
	}
}

func compileBytes(t testing.TB, e *Engine, wasm []byte) *Module {
	t.Helper()
	m, err := e.Compile(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Release(m) })
	return m
}

// A loop of a bulk instruction over as much memory or as many table
// elements as the limits allow, 16 runs at once, each of another user and
// Instance, ends every run as timeout: a bulk instruction is charged by
// its length, so the host looks at the time between two of them. The
// caller's context is only a guard, thirty times the wall time, against a
// host that does not stop the runs; how far past its limit a run ends is
// measured by BenchmarkBulkOverrun.
func TestBulkInstructionsTimeOut(t *testing.T) {
	const runs = 16
	e := newEngine(t, bulkLimits(runs))
	for _, kind := range wasmtest.BulkKinds {
		t.Run(kind, func(t *testing.T) {
			m := compileBytes(t, e, bulkLoop(kind))
			defer e.Release(m)
			errs := runAtOnce(e, m, runs, 30*e.Limits().Timeout)
			for i, err := range errs {
				if f := failure(t, err); f.Reason != models.ReasonTimeout {
					t.Errorf("run %d: got %v (reason %q), want reason timeout", i, err, f.Reason)
				}
			}
		})
	}
	if e.MemoryInUse() != 0 {
		t.Errorf("after the runs, %d bytes are still charged to the memory of all runs", e.MemoryInUse())
	}
}

// bulkMemoryBytes is the memory of a run in the tests of bulk
// instructions: the size of the attack that found them unbounded.
const bulkMemoryBytes = 16 << 20

// bulkLimits are limits under which n runs of a bulk loop at its largest
// run at once.
func bulkLimits(n int) Limits {
	l := Limits{Timeout: time.Second, MemoryBytes: bulkMemoryBytes, Concurrency: n, PerUser: n, PerInstance: n}
	perRun := bulkMemoryBytes + stackReserve(Limits{StackBytes: DefaultStackBytes}) + fixedBytes(wasmbin.Facts{TableElements: wasmbin.DefaultMaxTableElements, Functions: 1})
	l.TotalMemoryBytes = int64(n) * perRun
	return l
}

// bulkLoop is a loop of the bulk instruction kind at the largest the
// limits of bulkLimits allow.
func bulkLoop(kind string) []byte {
	return wasmtest.BulkLoop(kind, bulkMemoryBytes, MaxModuleBytes/2, wasmbin.DefaultMaxTableElements, wasmbin.DefaultMaxSegmentElements)
}

// runAtOnce runs the module n times at once, each as another user's
// Instance, and returns each run's error; guard bounds the caller's wait.
func runAtOnce(e *Engine, m *Module, n int, guard time.Duration) []error {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := job(m, models.Capability{}, `{}`)
			j.User, j.Request.Instance.ID = fmt.Sprint("usr_", i), fmt.Sprint("inst_", i)
			_, _, errs[i] = e.Run(ctx, j)
		}()
	}
	wg.Wait()
	return errs
}

// memory.fill and memory.copy, which the instrumentation does in chunks,
// leave memory as the instructions do: copies between overlapping ranges
// either way, of less, exactly and more than a chunk, and an operation
// out of bounds traps before it writes anything.
func TestChunkedMemoryOps(t *testing.T) {
	const pages = 128
	const end = pages * wasmbin.PageBytes
	const mib = 1 << 20
	type op = wasmtest.MemoryOp
	e := newEngine(t, Limits{})
	for _, tt := range []struct {
		name string
		ops  []op
		trap bool // the last op is out of bounds
	}{
		{"copy upward over itself", []op{{Dst: 7, Src: 2*mib + 1, N: 2*mib + 13}}, false},
		{"copy downward over itself", []op{{Dst: mib + 3, Src: 0, N: 3*mib + 5}}, false},
		{"copy of one chunk", []op{{Dst: 100, Src: 5 * mib, N: mib}}, false},
		{"copy of less than a chunk", []op{{Dst: 5 * mib, Src: 5*mib + 10, N: 1000}}, false},
		{"copy of nothing at the end", []op{{Dst: end, Src: 0, N: 0}}, false},
		{"fill", []op{{Fill: true, Dst: 5*mib + 1, Value: 0xab, N: 2*mib + 9}}, false},
		{"fill, then copy", []op{{Fill: true, Dst: 0, Value: 1, N: 3 * mib}, {Dst: 2 * mib, Src: 0, N: 4*mib + 1}}, false},
		{"copy past the end", []op{{Fill: true, Dst: 0, Value: 2, N: mib}, {Dst: end - mib, Src: 0, N: 2 * mib}}, true},
		{"copy from past the end", []op{{Dst: 0, Src: end - mib, N: mib + 1}}, true},
		{"fill past the end", []op{{Fill: true, Dst: end - 3*mib, Value: 7, N: 4 * mib}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := make([]byte, end)
			for i := range want {
				want[i] = byte(i ^ i>>8)
			}
			for i, o := range tt.ops {
				if tt.trap && i == len(tt.ops)-1 {
					break
				}
				if o.Fill {
					for j := range o.N {
						want[o.Dst+j] = byte(o.Value)
					}
				} else {
					copy(want[o.Dst:o.Dst+o.N], want[o.Src:o.Src+o.N])
				}
			}
			m := compileBytes(t, e, wasmtest.MemoryOps(pages, tt.ops...))
			defer e.Release(m)
			in, err := e.newInstance(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			defer in.close()
			in.io.out, in.io.err, in.io.ctx = &boundedWriter{max: 1}, &boundedWriter{max: 1}, context.Background()
			err = in.call(context.Background(), in.entry)
			if tt.trap != (err != nil && strings.Contains(err.Error(), "out of bounds")) {
				t.Fatalf("trap %v, got %v", tt.trap, err)
			}
			if got := in.mem.bytes(); !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && got[i] == want[i] {
					i++
				}
				t.Fatalf("memory differs first at %d", i)
			}
		})
	}
}

// A loop of a call of WASI whose cost grows with its length (random_get
// over the whole memory, fd_write of an iovec for every 8 bytes of it,
// poll_oneoff of as many subscriptions as it holds), 16 runs at once, ends
// every run as timeout: the host looks at the time in the streams, the
// random source and its own poll_oneoff.
func TestLongHostCallsTimeOut(t *testing.T) {
	const runs = 16
	e := newEngine(t, bulkLimits(runs))
	for _, kind := range wasmtest.HostCallKinds {
		t.Run(kind, func(t *testing.T) {
			m := compileBytes(t, e, wasmtest.HostCallLoop(kind, bulkMemoryBytes))
			defer e.Release(m)
			for i, err := range runAtOnce(e, m, runs, 30*e.Limits().Timeout) {
				if f := failure(t, err); f.Reason != models.ReasonTimeout {
					t.Errorf("run %d: got %v (reason %q), want reason timeout", i, err, f.Reason)
				}
			}
		})
	}
}
