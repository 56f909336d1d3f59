package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"pluginhost/wasmbin"
)

// Preinitialize returns a reactor module that starts initialized: it makes
// an instance that reads a fixed clock and zeros for random bytes, runs its
// _initialize within the run's limits of memory and output and the
// compilation's time, and writes its memory and globals
// into the module (wasmbin.Module.Preinitialize). The same module gives the
// same bytes. A reactor without _initialize is returned as it is; a command
// cannot be pre-initialized. The module runs in the engine's interpreter,
// in this process: pre-initialize only the modules of the plugin being
// built, never those a server receives.
func (e *Engine) Preinitialize(ctx context.Context, wasm []byte) ([]byte, error) {
	if !e.begin() {
		return nil, ErrClosed
	}
	defer e.work.Done()
	parsed, facts, err := wasmbin.Check(wasm, e.limits.Structure)
	if err != nil {
		return nil, err
	}
	if facts.Kind != wasmbin.KindReactor {
		return nil, fmt.Errorf("only a reactor (it exports %s) can be pre-initialized; this module is a %s", wasmbin.RunExport, facts.Kind)
	}
	if _, ok := parsed.Export("_initialize"); !ok {
		return wasm, nil
	}
	if !facts.Restorable {
		return nil, errors.New("the module changes its tables or drops segments: its state is more than its memory and globals, so it cannot be pre-initialized")
	}
	// The interpreter compiles in a tenth of the compiler's time, and
	// initialization runs once: the author's loop waits for it.
	instrumented, err := parsed.Instrument(e.limits.StackBytes)
	if err != nil {
		return nil, err
	}
	rt, err := e.interpreter(ctx)
	if err != nil {
		return nil, err
	}
	cm, err := rt.CompileModule(ctx, instrumented)
	if err != nil {
		return nil, fmt.Errorf("not a valid WebAssembly module: %v", err)
	}
	defer cm.Close(context.Background())
	m := &Module{compiled: cm, facts: facts, rt: rt, globals: parsed.MutableGlobalExports(), stackBudget: e.limits.StackBytes}
	// Initialization is bounded as a compilation is, not as a run: it runs
	// once, on the author's machine, in the interpreter (several times
	// slower than the compiled code a run uses, more so under the race
	// detector), and what it does is never done again by a run.
	ctx, cancel := context.WithTimeout(ctx, e.limits.CompileTimeout)
	defer cancel()
	defer context.AfterFunc(e.life, cancel)() // Close ends it
	in, err := e.instantiate(ctx, m, true)
	if err != nil {
		return nil, err
	}
	defer in.close()
	stderr := &boundedWriter{max: e.limits.StderrBytes}
	in.io.out, in.io.err, in.io.ctx = &boundedWriter{max: e.limits.OutputBytes}, stderr, ctx
	err = in.call(ctx, in.mod.ExportedFunction("_initialize"))
	if err := e.outcome(ctx, ctx, in, in.io.out, err); err != nil {
		return nil, fmt.Errorf("initializing the module: %w (standard error: %q)", err, stderr.bytes())
	}
	var mem []byte
	if in.mem != nil {
		mem = in.mem.bytes()
	}
	globals := map[int]uint64{}
	for _, i := range parsed.MutableGlobals() {
		if g, ok := in.mod.ExportedGlobal(wasmbin.GlobalExport(i)).(api.MutableGlobal); ok {
			globals[i] = g.Get()
		}
	}
	return parsed.Preinitialize(mem, globals)
}
