package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"pluginhost/models"
	"pluginhost/wasmbin"
)

// instance is one instance of a module: a fresh one for each run of a
// command, or an initialized one kept between runs of a reactor, restored to
// its initialized state (its image) before each run.
type instance struct {
	m      *Module
	mod    api.Module
	mem    *linearMemory // nil when the module has no memory
	io     *stdio
	entry  api.Function // _start of a command, RunExport of a reactor
	stack  api.MutableGlobal
	fixed  int64 // tables and globals, charged to the budget while the instance lives
	budget *budget
	used   time.Time
	// mapped: the start of the memory maps the image's file (imageFile),
	// so that restore compares only the pages the instance wrote.
	mapped bool
	// entries holds the pagemap entries restore reads, kept from one
	// restore to the next.
	entries []byte
}

// stdio is an instance's standard streams and the context of the run
// under way, set anew for each run, and the instance's module.
type stdio struct {
	in       bytes.Reader
	out, err *boundedWriter
	ctx      context.Context
	mod      api.Module
}

// check stops the run when its context is done. The streams and the random
// source of the module call it: a call of WASI that works
// in as many pieces as the module asks for (an iovec each, a chunk of
// random bytes) ends there, not at the module's next yield.
func (s *stdio) check() {
	if s.ctx != nil && s.mod != nil && s.ctx.Err() != nil {
		stop(s.ctx, s.mod)
	}
}

type stdinOf struct{ s *stdio }
type stdoutOf struct{ s *stdio }
type stderrOf struct{ s *stdio }
type randOf struct{ s *stdio }

func (r stdinOf) Read(p []byte) (int, error) {
	r.s.check()
	return r.s.in.Read(p)
}

func (w stdoutOf) Write(p []byte) (int, error) {
	w.s.check()
	return w.s.out.Write(p)
}

func (w stderrOf) Write(p []byte) (int, error) {
	w.s.check()
	return w.s.err.Write(p)
}

// randChunk is the most random bytes made between two checks of the run's
// time: a few tens of microseconds of work.
const randChunk = 64 << 10

func (r randOf) Read(p []byte) (int, error) {
	for off := 0; off < len(p); off += randChunk {
		r.s.check()
		if _, err := rand.Read(p[off:min(off+randChunk, len(p))]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

// bytes returns what the writer kept; a nil writer kept nothing.

// image is a reactor's state after initialization: its memory and the
// values of its mutable globals (by export name).
type image struct {
	memory  []byte
	globals map[string]uint64
	file    *imageFile // the memory in a file instances map, or nil
}

// fixedBytes is what an instance of the module holds beyond its linear
// memory: its tables at their largest, and the engine's own records of the
// instance (about 64 bytes a function, and a few pages).
func fixedBytes(f wasmbin.Facts) int64 {
	const refBytes, funcBytes, baseBytes = 8, 64, 64 << 10
	return f.TableElements*refBytes + int64(f.Functions)*funcBytes + baseBytes
}

// newInstance instantiates the module, with its memory bounded by limit and
// charged to the budget, and nothing of the host but WASI preview 1 on the
// given streams: no arguments, no environment, no file system; only the
// clock and random bytes. Nothing runs yet.
func (e *Engine) newInstance(ctx context.Context, m *Module) (*instance, error) {
	return e.instantiate(ctx, m, false)
}

// instantiate is newInstance; a deterministic instance reads a fixed clock
// and zeros for random bytes, so that what it computes depends on its code
// alone (Preinitialize).
func (e *Engine) instantiate(ctx context.Context, m *Module, deterministic bool) (_ *instance, err error) {
	in := &instance{m: m, io: &stdio{}, fixed: fixedBytes(m.facts), budget: &e.budget}
	if m.facts.MemoryBytes+in.fixed > e.limits.TotalMemoryBytes || !e.budget.take(in.fixed) {
		return nil, starved(e.limits)
	}
	alloc := &memoryAllocator{limit: uint64(e.limits.MemoryBytes), budget: &e.budget}
	ctx = experimental.WithMemoryAllocator(ctx, alloc)
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdin(stdinOf{in.io}).
		WithStdout(stdoutOf{in.io}).
		WithStderr(stderrOf{in.io}).
		WithStartFunctions() // the run calls its entry itself
	if deterministic {
		var tick atomic.Int64
		cfg = cfg.
			WithWalltime(func() (int64, int32) { return preinitEpoch, 0 }, sys.ClockResolution(time.Microsecond)).
			WithNanotime(func() int64 { return tick.Add(int64(time.Microsecond)) }, sys.ClockResolution(time.Microsecond)).
			WithRandSource(zeros{})
	} else {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithRandSource(randOf{in.io})
	}
	defer func() {
		if p := recover(); p != nil {
			err = crashed("instantiating the module", p)
		}
		if err != nil {
			if alloc.mem != nil && (alloc.mem.starved.Load() || alloc.mem.exceeded.Load()) {
				err = memoryError(e.limits, alloc.mem)
			}
			if in.mod != nil {
				in.mod.Close(context.Background())
			} else if alloc.mem != nil {
				alloc.mem.Free()
			}
			e.budget.give(in.fixed)
		}
	}()
	rt := e.rt
	if m.rt != nil {
		rt = m.rt
	}
	mod, err := rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		// Its start function trapped or ran out of time, or a segment
		// did not fit: the module's failure, as a trap in a run is.
		if ctx.Err() != nil {
			return nil, models.CapabilityFailed(models.ReasonTimeout, "the module did not start within %s", e.limits.Timeout)
		}
		return nil, models.CapabilityFailed(models.ReasonExit, "the module could not start: %s", trimTrace(err))
	}
	in.mod = mod
	in.io.mod = mod
	in.mem = alloc.mem
	name := "_start"
	if m.facts.Kind == wasmbin.KindReactor {
		name = wasmbin.RunExport
	}
	in.entry = in.mod.ExportedFunction(name)
	in.stack, _ = in.mod.ExportedGlobal(wasmbin.StackExport).(api.MutableGlobal)
	if in.entry == nil || in.stack == nil {
		return nil, fmt.Errorf("the module lacks %s or the host's instrumentation", name)
	}
	return in, nil
}

// preinitEpoch is the wall clock a deterministic instance reads: the time,
// in Unix seconds, of 2026-01-01 00:00:00 UTC.
const preinitEpoch = 1767225600

// zeros is the random source of a deterministic instance.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// charge returns what the instance holds of the budget.
func (in *instance) charge() int64 {
	n := in.fixed
	if in.mem != nil {
		n += in.mem.chargeNow()
	}
	return n
}

// close closes the instance and gives its memory back.
func (in *instance) close() {
	in.mod.Close(context.Background()) // frees the linear memory
	in.budget.give(in.fixed)
}

// call runs fn of the instance on its streams, within ctx, and reports a
// panic of the engine as an error instead of taking the process down.
func (in *instance) call(ctx context.Context, fn api.Function) (err error) {
	if in.mem != nil {
		defer in.mem.use()()
	}
	defer func() {
		if p := recover(); p != nil {
			err = crashed("running the module", p)
		}
	}()
	_, err = fn.Call(ctx)
	return err
}

// takeImage saves a reactor instance's state after initialization.
func (in *instance) takeImage() *image {
	img := &image{globals: map[string]uint64{}}
	if in.mem != nil {
		img.memory = bytes.Clone(in.mem.bytes())
		if img.file = newImageFile(img.memory); img.file != nil {
			runtime.AddCleanup(img, (*imageFile).close, img.file)
		}
	}
	for _, name := range in.m.globals {
		if g, ok := in.mod.ExportedGlobal(name).(api.MutableGlobal); ok {
			img.globals[name] = g.Get()
		}
	}
	return img
}

// grew reports whether the instance's memory is larger than the image's:
// its run grew it, and no restore can bring it back.
func (in *instance) grew(img *image) bool {
	if in.mem == nil || in.mod.IsClosed() {
		return false
	}
	mem := in.mod.Memory()
	return mem != nil && uint64(mem.Size()) > uint64(len(img.memory))
}

// restore writes the image back into the instance: its memory and globals
// as they were after initialization, and an empty stack. It reports false
// when the instance cannot hold the image (its memory grew, or is smaller:
// then it is grown first).
func (in *instance) restore(img *image) bool {
	if in.mod.IsClosed() {
		return false
	}
	if in.mem != nil {
		defer in.mem.use()() // the engine may close the instance meanwhile
		cur := in.mod.Memory()
		size := uint64(cur.Size())
		want := uint64(len(img.memory))
		if size > want {
			return false // memory never shrinks: the instance is closed
		}
		if size < want {
			if _, ok := cur.Grow(uint32((want - size) / wasmbin.PageBytes)); !ok {
				return false
			}
		}
		mem := in.mem.bytes()
		switch {
		case in.mapped && img.file.restoreOwnPages(mem, img.memory, &in.entries):
		case img.file != nil && img.file.mapOnto(mem):
			in.mapped = true
		default:
			restoreMemory(mem, img.memory)
		}
	}
	for name, v := range img.globals {
		if g, ok := in.mod.ExportedGlobal(name).(api.MutableGlobal); ok {
			g.Set(v)
		}
	}
	in.stack.Set(0)
	return true
}

// pageBytes is the system's page size.
var pageBytes = os.Getpagesize()

// restoreMemory writes src over dst, as long, page by page, skipping the
// pages that hold src already: a run leaves most of them as they were,
// and comparing costs less than writing.
func restoreMemory(dst, src []byte) {
	for off := 0; off < len(src); off += pageBytes {
		end := min(off+pageBytes, len(src))
		if !bytes.Equal(dst[off:end], src[off:end]) {
			copy(dst[off:end], src[off:end])
		}
	}
}

// idleList keeps the instances of reactors that are ready for a run, most
// recently used last. It is guarded by Engine.mu.
type idleList struct {
	items []*instance
	bytes int64
}

func (l *idleList) push(in *instance) {
	in.used = time.Now()
	l.items = append(l.items, in)
	l.bytes += in.charge()
}

// take returns an idle instance of m, the most recently used.
func (l *idleList) take(m *Module) *instance {
	for i := len(l.items) - 1; i >= 0; i-- {
		if in := l.items[i]; in.m == m {
			l.remove(i)
			return in
		}
	}
	return nil
}

func (l *idleList) takeOldest() *instance {
	if len(l.items) == 0 {
		return nil
	}
	in := l.items[0]
	l.remove(0)
	return in
}

func (l *idleList) takeModule(m *Module) []*instance {
	var out []*instance
	for i := len(l.items) - 1; i >= 0; i-- {
		if in := l.items[i]; in.m == m {
			l.remove(i)
			out = append(out, in)
		}
	}
	return out
}

func (l *idleList) takeAll() []*instance {
	out := l.items
	l.items, l.bytes = nil, 0
	return out
}

func (l *idleList) remove(i int) {
	l.bytes -= l.items[i].charge()
	l.items = append(l.items[:i], l.items[i+1:]...)
}
