package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"pluginhost/wasmbin"
)

// This file and the others of the package are the adapter to the
// WebAssembly engine, wazero: the only place that names its types. The rest
// of the host speaks of modules, runs and results.

// Engine compiles and runs capability modules within Limits. It is safe for
// concurrent use; Close releases it.
type Engine struct {
	limits   Limits
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	cacheDir string
	tempDir  bool // cacheDir is the engine's own, removed by Close

	// interp runs pre-initializations: an interpreter compiles a module in
	// a fraction of the compiler's time, and initialization runs once.
	interpOnce sync.Once
	interp     wazero.Runtime
	interpErr  error
	quickMu    sync.Mutex    // one interpreted module made at a time (Quick)
	quickDelay time.Duration // QuickCompileDelay; tests shorten it

	budget   budget        // the memory of all runs at once
	slots    chan struct{} // one per run at once, overall
	compiles chan struct{} // one per compilation at once

	mu       sync.Mutex
	running  map[string]int // runs at once, per Instance ("i" + id) and per user ("u" + id)
	freed    chan struct{}  // closed (and replaced) whenever a run ends
	compiled map[[32]byte]*Module
	quick    map[[32]byte]*Module        // interpreted modules, compiled later or being compiled (Quick)
	deferred map[[32]byte]*time.Timer    // compilations Quick begins later
	codeSize int64                       // of the compiled modules kept
	pending  map[[32]byte]*compilation   // compilations under way
	failed   map[[32]byte]compileFailure // compilations that failed, recently
	idle     idleList                    // initialized instances of reactors, kept between runs
	restored sync.Cond                   // on mu: broadcast when a restore (restoreLater) ends
	closed   bool

	replaced atomic.Int64 // kept instances replaced because a run grew their memory

	// work is what runs on the engine's runtimes: runs, restores of
	// instances (restoreLater), first instances (prepare) and
	// pre-initializations. Close waits for it before closing them, for a
	// runtime closed under running code frees memory the code still
	// writes. It is added to only under mu while the engine is open
	// (begin).
	work sync.WaitGroup

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

// compileFailure is a compilation that failed, remembered so that a module that
// cannot be compiled is not compiled again on every run.
type compileFailure struct {
	err   error
	until time.Time
}

// failureMemory is how long a failed compilation is remembered. A module
// refused by its structure stays refused; one that ran out of its
// compilation budget may compile on a quieter machine.
const failureMemory = 10 * time.Minute

// Module is a compiled capability module, ready to run.
type Module struct {
	sum      [32]byte
	compiled wazero.CompiledModule
	facts    wasmbin.Facts
	codeSize int64 // the machine code's size
	refs     int   // runs using it, and restores of its instances (under Engine.mu)
	used     time.Time
	evicted  bool // dropped from the engine; closed when its last run ends
	// rt is the runtime it was compiled by: the engine's (nil), or its
	// interpreter for a pre-initialization.
	rt wazero.Runtime
	// globals names the exports of the module's mutable globals, and
	// stackBudget is the stack weight its instrumentation traps beyond.
	globals     []string
	stackBudget int64

	// image is a reactor's state after initialization, taken from its first
	// instance and written into every instance before each run.
	imageOnce sync.Mutex
	image     *image
	restoring int // instances being restored to the image (under Engine.mu)
}

// Kind returns how the module runs: wasmbin.KindCommand or KindReactor.
func (m *Module) Kind() string { return m.facts.Kind }

// maxCompiledBytes bounds the machine code of the modules kept compiled;
// modules not in use are dropped, least recently used first, beyond it. A
// dropped module is loaded again from the on-disk cache.
const maxCompiledBytes = 256 << 20

// New returns an engine. cacheDir keeps compiled machine code between
// restarts (it is created if missing); when empty, the engine uses a
// temporary folder of its own. Limits that are zero take their defaults.
func New(ctx context.Context, cacheDir string, limits Limits) (*Engine, error) {
	limits = limits.withDefaults()
	if err := limits.check(); err != nil {
		return nil, err
	}
	temp := false
	if cacheDir == "" {
		d, err := os.MkdirTemp("", "pluginhost-wazero-")
		if err != nil {
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
		cacheDir, temp = d, true
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
	}
	rt, err := newRuntime(ctx, cache)
	if err != nil {
		cache.Close(ctx)
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	e := &Engine{
		limits: limits, rt: rt, cache: cache, cacheDir: cacheDir, tempDir: temp,
		slots:    make(chan struct{}, limits.Concurrency),
		compiles: make(chan struct{}, limits.CompileConcurrency),
		running:  map[string]int{}, freed: make(chan struct{}),
		compiled: map[[32]byte]*Module{}, quick: map[[32]byte]*Module{}, deferred: map[[32]byte]*time.Timer{},
		pending: map[[32]byte]*compilation{}, failed: map[[32]byte]compileFailure{}, quickDelay: QuickCompileDelay,
		life: life, stop: stop,
	}
	e.restored.L = &e.mu
	e.budget.limit = limits.TotalMemoryBytes
	e.budget.reclaim = e.reclaim
	return e, nil
}

// newRuntime returns the runtime every compilation and run uses, in the
// server and in the compiler's process alike, so that both agree on the
// machine code they cache: the WebAssembly 2.0 core features (no threads,
// no tail calls, no exceptions). The engine's own checks of a run's time
// (WithCloseOnContextDone), which leave the machine code at every loop and
// call, are off: the instrumentation calls yield instead, a thousand times
// less often, and charges bulk instructions by their length. Measured side
// by side on the example's warm invoke, the engine's checks made a run
// about twice as slow (p50 4.8 ms against 2.0 ms; BenchmarkRunWarm 11.6 ms
// against 2.2 ms), and they leave one bulk instruction unbounded.
func newRuntime(ctx context.Context, cache wazero.CompilationCache) (wazero.Runtime, error) {
	return hostRuntime(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
}

// interpreter returns the engine's interpreter, made on first use: the
// runtime of pre-initializations, with the same features and host functions
// as the engine's.
func (e *Engine) interpreter(ctx context.Context) (wazero.Runtime, error) {
	e.interpOnce.Do(func() {
		e.mu.Lock()
		closed := e.closed
		e.mu.Unlock()
		if closed {
			e.interpErr = ErrClosed
			return
		}
		e.interp, e.interpErr = hostRuntime(ctx, wazero.NewRuntimeConfigInterpreter())
	})
	return e.interp, e.interpErr
}

// hostRuntime completes cfg with the features every runtime of the engine
// has and gives the runtime the host's modules.
func hostRuntime(ctx context.Context, cfg wazero.RuntimeConfig) (wazero.Runtime, error) {
	cfg = cfg.WithCoreFeatures(api.CoreFeaturesV2).WithCloseOnContextDone(false)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := instantiateWASI(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	_, err := rt.NewHostModuleBuilder(wasmbin.YieldModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, _ []uint64) { yield(ctx, mod) }), nil, nil).
		Export(wasmbin.YieldName).
		Instantiate(ctx)
	if err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return rt, nil
}

// yield is called by a running module every wasmbin.YieldInterval loop
// iterations and calls: it stops the run when its context is done (its
// time is up, its output overflowed, or its caller went away), and lets the
// goroutines waiting for a processor run, so that a long run shares the
// processor it holds.
func yield(ctx context.Context, mod api.Module) {
	if ctx.Err() != nil {
		stop(ctx, mod)
	}
	runtime.Gosched()
}

// stop ends a run whose context is done, from a call of the host: it
// closes the instance with the exit code of the context's end and unwinds
// the module's stack.
func stop(ctx context.Context, mod api.Module) {
	code := uint32(sys.ExitCodeContextCanceled)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = sys.ExitCodeDeadlineExceeded
	}
	mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
}

// Limits returns the engine's limits, defaults filled in.
func (e *Engine) Limits() Limits { return e.limits }

// MemoryInUse returns the bytes charged to the memory of all runs now: the
// runs under way and the instances kept ready.
func (e *Engine) MemoryInUse() int64 { return e.budget.Used() }

// Stats is the engine's state at one moment.
type Stats struct {
	// Compiled is the number of modules compiled and kept; CodeBytes the
	// size of their machine code.
	Compiled  int
	CodeBytes int64
	// Compiling is the number of compilations under way.
	Compiling int
	// Ready is the number of initialized instances kept for runs.
	Ready int
	// Replaced counts the kept instances replaced by new ones because a
	// run grew their memory, since the engine started.
	Replaced int64
	// MemoryInUse is MemoryInUse.
	MemoryInUse int64
}

// Stats returns the engine's state now.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Compiled: len(e.compiled), CodeBytes: e.codeSize, Compiling: len(e.pending), Ready: len(e.idle.items), MemoryInUse: e.budget.Used(),
		Replaced: e.replaced.Load()}
}

// Close releases the engine and its compiled modules. Compilations, runs
// and pre-initializations under way are stopped (their processes killed,
// their modules ended at their next yield) and waited for; when ctx ends
// first, the runtime is left to the process's end.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	idle := e.idle.takeAll()
	for sum, t := range e.deferred {
		t.Stop()
		delete(e.deferred, sum)
	}
	e.mu.Unlock()
	for _, in := range idle {
		in.close()
	}
	e.stop()
	over := make(chan struct{})
	go func() {
		e.compiling.Wait()
		e.work.Wait()
		close(over)
	}()
	select {
	case <-over:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := e.rt.Close(ctx)
	e.interpOnce.Do(func() {}) // waits for one being made
	if e.interp != nil {
		e.interp.Close(ctx)
	}
	e.cache.Close(ctx)
	if e.tempDir {
		os.RemoveAll(e.cacheDir)
	}
	return err
}

// Compile checks and compiles a module, or returns the one already compiled
// from the same bytes. A module that wasmbin.Check refuses, or whose
// compilation fails or passes its budget, is refused with the reason. The
// caller must Release the module when done with it.
func (e *Engine) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	if len(wasm) > MaxModuleBytes {
		return nil, fmt.Errorf("the module has %d bytes; at most %d are allowed", len(wasm), MaxModuleBytes)
	}
	sum := sha256.Sum256(wasm)
	for {
		if m, err := e.ready(ctx, sum); m != nil || err != nil {
			return m, err
		}
		e.mu.Lock()
		e.startCompileLocked(wasm, sum, nil)
		e.mu.Unlock() // ready waits for the compilation
	}
}

// startCompileLocked begins the compilation of a module unless it is under
// way; ck is the module checked and instrumented already, or nil. The
// compilation is not the caller's: it goes on when the caller gives up (a
// request's deadline can be shorter than a large module's compilation on a
// slow machine), and the next caller finds it done instead of starting
// again. e.mu is held.
func (e *Engine) startCompileLocked(wasm []byte, sum [32]byte, ck *checked) {
	if t, ok := e.deferred[sum]; ok {
		t.Stop() // begun now
		delete(e.deferred, sum)
	}
	if _, raced := e.pending[sum]; raced || e.closed {
		return
	}
	c := &compilation{done: make(chan struct{})}
	e.pending[sum] = c
	e.compiling.Add(1)
	go func() {
		defer e.compiling.Done()
		e.compileInBackground(e.life, wasm, sum, ck, c)
	}()
}

// ready returns the compiled module of sum, after the compilation of it
// under way if there is one, or nil when there is neither. A compilation
// that failed recently is its error.
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
		if f, ok := e.failed[sum]; ok {
			if time.Now().Before(f.until) {
				e.mu.Unlock()
				return nil, f.err
			}
			delete(e.failed, sum)
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
func (e *Engine) compileInBackground(ctx context.Context, wasm []byte, sum [32]byte, ck *checked, c *compilation) {
	var m *Module
	var err error
	if ck == nil {
		ck, err = e.check(wasm)
	}
	if err == nil {
		m, err = e.compile(ctx, sum, ck)
	}
	e.mu.Lock()
	delete(e.pending, sum)
	switch {
	case err == nil && e.closed:
		m.compiled.Close(context.Background())
		err = ErrClosed
	case err == nil:
		m.used = time.Now()
		e.compiled[sum] = m
		e.codeSize += m.codeSize
		e.evictLocked()
		e.dropQuickLocked(sum)
	case ctx.Err() == nil:
		if len(e.failed) >= 256 {
			clear(e.failed)
		}
		e.failed[sum] = compileFailure{err: err, until: time.Now().Add(failureMemory)}
		e.dropQuickLocked(sum)
	}
	c.err = err
	close(c.done)
	e.mu.Unlock()
}

// Known reports whether the module of the SHA-256 sum (hex) is compiled,
// being compiled, or was refused recently: whether compiling it now would
// do nothing new.
func (e *Engine) Known(sumHex string) bool {
	var sum [32]byte
	if b, err := hex.DecodeString(sumHex); err != nil || len(b) != len(sum) {
		return false
	} else {
		copy(sum[:], b)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, compiled := e.compiled[sum]
	_, pending := e.pending[sum]
	_, failed := e.failed[sum]
	return compiled || pending || failed
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

// checked is a module that passed wasmbin.Check within the engine's
// limits, instrumented for them.
type checked struct {
	facts        wasmbin.Facts
	globals      []string // the exports of its mutable globals
	instrumented []byte
}

// check checks the module's structure and instruments it.
func (e *Engine) check(wasm []byte) (*checked, error) {
	parsed, facts, err := wasmbin.Check(wasm, e.limits.Structure)
	if err != nil {
		return nil, err
	}
	instrumented, err := parsed.Instrument(e.limits.StackBytes)
	if err != nil {
		return nil, err
	}
	return &checked{facts: facts, globals: parsed.MutableGlobalExports(), instrumented: instrumented}, nil
}

// compile compiles a checked module in a child process within the
// compilation budget (compileInChild), and loads the machine code the
// child left in the cache.
func (e *Engine) compile(ctx context.Context, sum [32]byte, ck *checked) (*Module, error) {
	size, err := e.compileInChild(ctx, ck.instrumented)
	if err != nil {
		return nil, err
	}
	cm, err := e.rt.CompileModule(ctx, ck.instrumented)
	if err != nil {
		return nil, fmt.Errorf("not a valid WebAssembly module: %v", err)
	}
	return &Module{sum: sum, compiled: cm, facts: ck.facts, codeSize: size,
		globals: ck.globals, stackBudget: e.limits.StackBytes}, nil
}

// Release says that the caller no longer uses the module.
func (e *Engine) Release(m *Module) {
	e.mu.Lock()
	m.refs--
	closeIt := m.evicted && m.refs == 0
	e.mu.Unlock()
	if closeIt {
		m.compiled.Close(context.Background())
	}
}

// evictLocked drops unused modules beyond maxCompiledBytes, oldest use
// first, with their idle instances.
func (e *Engine) evictLocked() {
	for e.codeSize > maxCompiledBytes {
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
		e.codeSize -= victim.codeSize
		victim.evicted = true
		for _, in := range e.idle.takeModule(victim) {
			go in.close()
		}
		go victim.compiled.Close(context.Background())
	}
}

// reclaim closes idle instances until n bytes are free in the budget, or
// none is left; it reports whether any was closed.
func (e *Engine) reclaim(n int64) bool {
	e.mu.Lock()
	var victims []*instance
	for freed := int64(0); freed < n; {
		in := e.idle.takeOldest()
		if in == nil {
			break
		}
		freed += in.charge()
		victims = append(victims, in)
	}
	e.mu.Unlock()
	for _, in := range victims {
		in.close()
	}
	return len(victims) > 0
}

// instantiateWASI provides WASI preview 1, the only host module: standard
// streams, the clock, random bytes and the host's own poll_oneoff (poll.go),
// bounded in its subscriptions and its sleep. No directory is mounted, so every
// file operation fails inside the module; no socket is given, so neither
// does the network. The standard streams cannot be closed or renumbered, so
// that an instance kept between runs keeps them.
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(pollOneoff), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("in", "out", "nsubscriptions", "result.nevents").
		Export("poll_oneoff")
	b.NewFunctionBuilder().WithFunc(func(fd uint32) uint32 {
		if fd <= 2 {
			return 0 // the host keeps its streams open
		}
		return errnoBadf
	}).Export("fd_close")
	b.NewFunctionBuilder().WithFunc(func(from, to uint32) uint32 { return errnoNotsup }).Export("fd_renumber")
	_, err := b.Instantiate(ctx)
	return err
}
