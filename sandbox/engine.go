package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"pluginhost/models"
)

// This file is the adapter to the WebAssembly engine, wazero: the only place
// that names its types. The rest of the host speaks of modules, runs and
// results.

// Engine compiles and runs capability modules within Limits. It is safe for
// concurrent use; Close releases it.
type Engine struct {
	limits Limits
	rt     wazero.Runtime
	cache  wazero.CompilationCache

	slots chan struct{} // one per run at once, overall

	mu       sync.Mutex
	running  map[string]int // runs at once, per Instance
	freed    chan struct{}  // closed (and replaced) whenever a run ends
	compiled map[[32]byte]*Module
	pending  map[[32]byte]*compilation // compilations under way
	closed   bool

	life      context.Context // ends with Close: the compilations' context
	stop      context.CancelFunc
	compiling sync.WaitGroup // compilations under way, which Close waits for
}

// ErrClosed is the error of a compilation asked of a closed engine.
var ErrClosed = errors.New("sandbox: the engine is closed")

// compilation is one module being compiled; done is closed when err is set
// and, on success, the module is among the compiled ones.
type compilation struct {
	done chan struct{}
	err  error
}

// Module is a compiled capability module, ready to run.
type Module struct {
	sum      [32]byte
	compiled wazero.CompiledModule
	minBytes uint64 // the memory the module declares it starts with
	refs     int    // runs using it (under Engine.mu)
	used     time.Time
}

// maxCompiled bounds the compiled modules kept in memory; modules not in use
// are dropped, least recently used first, beyond it. A dropped module is
// compiled again from the on-disk cache.
const maxCompiled = 64

// New returns an engine. cacheDir, when not empty, keeps compiled machine
// code between restarts (it is created if missing); limits that are zero
// take their defaults.
func New(ctx context.Context, cacheDir string, limits Limits) (*Engine, error) {
	limits = limits.withDefaults()
	if err := limits.check(); err != nil {
		return nil, err
	}
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	var cache wazero.CompilationCache
	if cacheDir != "" {
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
		c, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
		cache = c
		cfg = cfg.WithCompilationCache(c)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	// WASI preview 1 is the only host module: standard streams, the clock and
	// random bytes. No directory is mounted, so every file operation fails
	// inside the module; no socket is given, so neither does the network.
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	return &Engine{
		limits: limits, rt: rt, cache: cache,
		slots:   make(chan struct{}, limits.Concurrency),
		running: map[string]int{}, freed: make(chan struct{}),
		compiled: map[[32]byte]*Module{}, pending: map[[32]byte]*compilation{},
		life: life, stop: stop,
	}, nil
}

// Limits returns the engine's limits, defaults filled in.
func (e *Engine) Limits() Limits { return e.limits }

// Close releases the engine and its compiled modules, once the
// compilations under way are over (or ctx is done: then the runtime is left
// to the process's end, since closing it under a compilation would crash).
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.stop()
	over := make(chan struct{})
	go func() {
		e.compiling.Wait()
		close(over)
	}()
	select {
	case <-over:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := e.rt.Close(ctx)
	if e.cache != nil {
		e.cache.Close(ctx)
	}
	return err
}

// Compile checks and compiles a module, or returns the one already compiled
// from the same bytes. A module that Check refuses, or whose code is not
// valid, is refused. The caller must Release the module when done with it.
func (e *Engine) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	if err := Check(wasm); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	for {
		if m, err := e.ready(ctx, sum); m != nil || err != nil {
			return m, err
		}
		e.mu.Lock()
		if _, raced := e.pending[sum]; !raced && !e.closed {
			// The compilation is not the caller's: it goes on when the
			// caller gives up (a request's deadline can be shorter than a
			// large module's compilation on a slow machine), and the next
			// caller finds it done instead of starting again.
			c := &compilation{done: make(chan struct{})}
			e.pending[sum] = c
			e.compiling.Add(1)
			go func() {
				defer e.compiling.Done()
				e.compileInBackground(e.life, wasm, sum, c)
			}()
		}
		e.mu.Unlock() // ready waits for the compilation
	}
}

// ready returns the compiled module of sum, after the compilation of it
// under way if there is one, or nil when there is neither.
func (e *Engine) ready(ctx context.Context, sum [32]byte) (*Module, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, ErrClosed
		}
		if m, ok := e.compiled[sum]; ok {
			m.refs++
			m.used = time.Now()
			e.mu.Unlock()
			return m, nil
		}
		c, busy := e.pending[sum]
		e.mu.Unlock()
		if !busy {
			return nil, nil
		}
		select {
		case <-c.done:
			if c.err != nil {
				return nil, c.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// compileInBackground compiles a module for Compile and keeps it.
func (e *Engine) compileInBackground(ctx context.Context, wasm []byte, sum [32]byte, c *compilation) {
	m, err := e.compile(ctx, wasm, sum)
	e.mu.Lock()
	delete(e.pending, sum)
	if err == nil {
		m.used = time.Now()
		e.compiled[sum] = m
		e.evictLocked(ctx)
	}
	c.err = err
	close(c.done)
	e.mu.Unlock()
}

// CompileStored returns the compiled module whose bytes have the SHA-256
// sum (hex), calling load for the bytes only when it is neither compiled
// nor being compiled. The caller must Release the module when done with it.
func (e *Engine) CompileStored(ctx context.Context, sumHex string, load func(context.Context) ([]byte, error)) (*Module, error) {
	var sum [32]byte
	if b, err := hex.DecodeString(sumHex); err == nil && len(b) == len(sum) {
		copy(sum[:], b)
		if m, err := e.ready(ctx, sum); m != nil || err != nil {
			return m, err
		}
	}
	wasm, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return e.Compile(ctx, wasm)
}

func (e *Engine) compile(ctx context.Context, wasm []byte, sum [32]byte) (*Module, error) {
	cm, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("not a valid WebAssembly module: %v", err)
	}
	m := &Module{sum: sum, compiled: cm}
	for _, d := range cm.ExportedMemories() {
		m.minBytes = max(m.minBytes, uint64(d.Min())*pageBytes)
	}
	for _, d := range cm.ImportedMemories() {
		m.minBytes = max(m.minBytes, uint64(d.Min())*pageBytes)
	}
	return m, nil
}

// pageBytes is the size of a WebAssembly memory page.
const pageBytes = 64 << 10

// Release says that the caller no longer uses the module.
func (e *Engine) Release(m *Module) {
	e.mu.Lock()
	m.refs--
	e.mu.Unlock()
}

// evictLocked drops unused modules beyond maxCompiled, oldest use first.
func (e *Engine) evictLocked(ctx context.Context) {
	for len(e.compiled) > maxCompiled {
		var victim *Module
		for _, m := range e.compiled {
			if m.refs == 0 && (victim == nil || m.used.Before(victim.used)) {
				victim = m
			}
		}
		if victim == nil {
			return
		}
		delete(e.compiled, victim.sum)
		victim.compiled.Close(ctx)
	}
}

// Output is what a run that ended with exit code 0 wrote.
type Output struct {
	Stdout []byte
	Stderr []byte
}

// exec runs a module once, in a fresh instance that shares nothing with any
// other run: stdin in, stdout and stderr out, within the limits. key names the
// Instance the run is for, whose runs at once are bounded too. A failure is a
// CAPABILITY_FAILED error with its reason; the standard error kept so far is
// returned with it.
func (e *Engine) exec(ctx context.Context, m *Module, key string, stdin []byte) (*Output, error) {
	l := e.limits
	// 1. A slot, for the Instance and overall, before the deadline.
	release, err := e.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	defer release()

	// 2. Memory: what the module starts with, then every growth, is bounded.
	if m.minBytes > uint64(l.MemoryBytes) {
		return nil, models.CapabilityFailed(models.ReasonMemory, "the module starts with %d bytes of memory; a run may use at most %d", m.minBytes, l.MemoryBytes)
	}
	mem := &memoryLimit{limit: uint64(l.MemoryBytes)}
	runCtx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	runCtx = experimental.WithMemoryAllocator(runCtx, mem)

	// 3. Streams: standard output is bounded and the run is stopped when it
	// overflows; the first bytes of standard error are kept.
	stdout := &boundedWriter{max: l.OutputBytes, overflow: cancel}
	stderr := &boundedWriter{max: l.StderrBytes}

	// 4. The sandbox is what the configuration leaves out: no arguments, no
	// environment, no file system; only the clock and random bytes.
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdin(bytes.NewReader(stdin)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(func(ns int64) { sleep(runCtx, ns) }).
		WithRandSource(rand.Reader).
		WithStartFunctions("_start")
	inst, err := e.rt.InstantiateModule(runCtx, m.compiled, cfg)
	if inst != nil {
		inst.Close(context.Background())
	}

	// 5. How it ended, most specific cause first.
	exitCode := uint32(0)
	var exitErr *sys.ExitError
	if errors.As(err, &exitErr) {
		exitCode = exitErr.ExitCode()
		err = nil
	}
	kept := stderr.buf.Bytes()
	switch {
	case stdout.over.Load():
		return &Output{Stderr: kept}, models.CapabilityFailed(models.ReasonOutputTooLarge, "the module wrote more than %d bytes to standard output", l.OutputBytes)
	case mem.exceeded.Load():
		return &Output{Stderr: kept}, models.CapabilityFailed(models.ReasonMemory, "the module wanted more than %d bytes of memory", l.MemoryBytes)
	case ctx.Err() != nil:
		return &Output{Stderr: kept}, ctx.Err() // the caller went away
	case runCtx.Err() != nil || exitCode == sys.ExitCodeDeadlineExceeded:
		return &Output{Stderr: kept}, models.CapabilityFailed(models.ReasonTimeout, "the run did not end within %s", l.Timeout)
	case err != nil:
		return &Output{Stderr: kept}, models.CapabilityFailed(models.ReasonExit, "the module trapped: %v", err)
	case exitCode != 0:
		code := int(exitCode)
		e := models.CapabilityFailed(models.ReasonExit, "the module exited with code %d", code)
		e.ExitCode = &code
		return &Output{Stderr: kept}, e
	}
	return &Output{Stdout: stdout.buf.Bytes(), Stderr: kept}, nil
}

// sleep is the module's sleep: it ends early when the run's context does,
// so that a module that sleeps cannot outlive its wall time.
func sleep(ctx context.Context, ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// acquire takes a run slot for the Instance and one overall, waiting at most
// QueueWait (or until the caller's deadline, if sooner) for them; when none
// frees up by then, the run is busy.
func (e *Engine) acquire(ctx context.Context, key string) (func(), error) {
	wait := e.limits.QueueWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)-time.Millisecond)
	}
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	for {
		e.mu.Lock()
		if e.running[key] < e.limits.PerInstance {
			e.running[key]++
			e.mu.Unlock()
			break
		}
		freed := e.freed
		e.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return nil, e.busy()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	releaseKey := func() {
		e.mu.Lock()
		if e.running[key]--; e.running[key] == 0 {
			delete(e.running, key)
		}
		close(e.freed)
		e.freed = make(chan struct{})
		e.mu.Unlock()
	}
	select {
	case e.slots <- struct{}{}:
	case <-timer.C:
		releaseKey()
		return nil, e.busy()
	case <-ctx.Done():
		releaseKey()
		return nil, ctx.Err()
	}
	return func() { <-e.slots; releaseKey() }, nil
}

// busy is the error of a run that found no slot within QueueWait.
func (e *Engine) busy() error {
	return models.CapabilityFailed(models.ReasonBusy, "no run slot freed up within %s (%d runs at once overall, %d per Instance)", e.limits.QueueWait, e.limits.Concurrency, e.limits.PerInstance)
}

// memoryLimit backs a run's linear memory and refuses to grow it past the
// limit; it remembers that it refused, so that the failure has its reason.
type memoryLimit struct {
	limit    uint64
	buf      []byte
	exceeded atomic.Bool
}

func (m *memoryLimit) Allocate(capacity, _ uint64) experimental.LinearMemory {
	m.buf = make([]byte, 0, min(capacity, m.limit))
	return m
}

func (m *memoryLimit) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.exceeded.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.limit))
	copy(grown, m.buf)
	m.buf = grown
	return m.buf
}

func (m *memoryLimit) Free() { m.buf = nil }

// boundedWriter keeps at most max bytes. Past it, it records the overflow
// and calls overflow (if set) once; it never fails a write, so that a module
// is stopped by the host rather than by an error it might ignore.
type boundedWriter struct {
	max      int
	buf      bytes.Buffer
	over     atomic.Bool
	overflow func()
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	if len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		if !w.over.Swap(true) && w.overflow != nil {
			w.overflow()
		}
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}
