package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// A module can run at once in the engine's interpreter (Quick). The
// interpreter makes a module ready in a fraction of the compiler's time and
// runs it several times slower, with the same instrumentation, limits and
// results: callers that prefer a run now to a fast run ask for it (the runs
// of a plugin in development, whose author waits for the page to show their
// change). A reactor's first instance is made as soon as the module is, in
// the background, so that its first run finds it ready. The module's
// compilation begins once it has been ready for QuickCompileDelay without
// being forgotten (Forget): an author's loop replaces most of its modules
// sooner, and their compilations, seconds of processor time each, would
// only slow the builds of the next ones. Once the compiled module is ready,
// Quick answers it, and the interpreted one is dropped when its last run
// ends.

// QuickCompileDelay is how long a module Quick made ready waits before its
// compilation begins.
const QuickCompileDelay = 10 * time.Second

// Quick returns the module of the SHA-256 sum (hex) ready to run: compiled
// when it is; otherwise as the engine's interpreter runs it, made now if it
// was not, with its compilation to begin after QuickCompileDelay unless it
// is under way. load gives the module's bytes when they are needed. A
// module whose compilation failed recently is that failure. The caller must
// Release the module when done with it.
func (e *Engine) Quick(ctx context.Context, sumHex string, load func(context.Context) ([]byte, error)) (*Module, error) {
	var sum [32]byte
	if b, err := hex.DecodeString(sumHex); err != nil || len(b) != len(sum) {
		return e.CompileStored(ctx, sumHex, load) // not a sum: as a compilation
	} else {
		copy(sum[:], b)
	}
	if m, err := e.quickReady(sum); m != nil || err != nil {
		return m, err
	}
	wasm, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if len(wasm) > MaxModuleBytes {
		return nil, fmt.Errorf("the module has %d bytes; at most %d are allowed", len(wasm), MaxModuleBytes)
	}
	if sha256.Sum256(wasm) != sum {
		return nil, fmt.Errorf("the module's bytes are not those of %s", sumHex)
	}
	e.quickMu.Lock()
	defer e.quickMu.Unlock()
	if m, err := e.quickReady(sum); m != nil || err != nil {
		return m, err // made meanwhile
	}
	ck, err := e.check(wasm)
	if err != nil {
		return nil, err
	}
	rt, err := e.interpreter(ctx)
	if err != nil {
		return nil, err
	}
	cm, err := rt.CompileModule(ctx, ck.instrumented)
	if err != nil {
		return nil, fmt.Errorf("not a valid WebAssembly module: %v", err)
	}
	m := &Module{sum: sum, compiled: cm, facts: ck.facts, rt: rt, refs: 1,
		globals: ck.globals, stackBudget: e.limits.StackBytes}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		cm.Close(context.Background())
		return nil, ErrClosed
	}
	// Compiled (or refused) while the interpreter worked.
	if c, ok := e.compiled[sum]; ok {
		cm.Close(context.Background())
		c.refs++
		return c, nil
	}
	if f, ok := e.failed[sum]; ok && time.Now().Before(f.until) {
		cm.Close(context.Background())
		return nil, f.err
	}
	if _, pending := e.pending[sum]; !pending {
		e.deferred[sum] = time.AfterFunc(e.quickDelay, func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if _, ok := e.deferred[sum]; ok && !e.closed {
				e.startCompileLocked(wasm, sum, ck) // checked and instrumented once
			}
		})
	}
	e.quick[sum] = m
	if m.reusable() && e.beginLocked() {
		m.refs++ // the first instance's, released when it is made
		go e.prepare(m)
	}
	return m, nil
}

// prepare makes the first instance of a reusable reactor, with the image
// every later one starts from, and keeps it for the next run: the first
// instance of an interpreted module takes several times as long as a run
// of it. A failure is left to the run, which meets it again and says why.
func (e *Engine) prepare(m *Module) {
	defer e.work.Done()
	defer e.Release(m)
	ctx, cancel := context.WithTimeout(e.life, e.limits.Timeout)
	defer cancel()
	in, err := e.instanceFor(ctx, m, &boundedWriter{max: e.limits.StderrBytes})
	if err != nil {
		return
	}
	e.keep(in)
}

// Forget says that the module of the SHA-256 sum (hex) is not needed
// compiled: its compilation, if Quick made it ready and it has not begun,
// does not begin, and its interpreted module is dropped when its last run
// ends. A later Quick makes it ready again.
func (e *Engine) Forget(sumHex string) {
	var sum [32]byte
	if b, err := hex.DecodeString(sumHex); err != nil || len(b) != len(sum) {
		return
	} else {
		copy(sum[:], b)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.deferred[sum]; ok {
		t.Stop()
		delete(e.deferred, sum)
	}
	e.dropQuickLocked(sum)
}

// quickReady returns the compiled module of sum, or its interpreted one,
// or the failure of its compilation; nil and nil when there is none yet.
func (e *Engine) quickReady(sum [32]byte) (*Module, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	for _, m := range []*Module{e.compiled[sum], e.quick[sum]} {
		if m != nil {
			m.refs++
			return m, nil
		}
	}
	if f, ok := e.failed[sum]; ok && time.Now().Before(f.until) {
		return nil, f.err
	}
	return nil, nil
}

// dropQuickLocked drops the interpreted module of sum, whose compilation
// ended: its idle instances are closed, and the module when its last run
// ends. e.mu is held.
func (e *Engine) dropQuickLocked(sum [32]byte) {
	m, ok := e.quick[sum]
	if !ok {
		return
	}
	delete(e.quick, sum)
	m.evicted = true
	for _, in := range e.idle.takeModule(m) {
		go in.close()
	}
	if m.refs == 0 {
		go m.compiled.Close(context.Background())
	}
}
