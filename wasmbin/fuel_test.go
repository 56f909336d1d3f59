package wasmbin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"pluginhost/wasmbin"
)

// Instructions of the bodies below.
const (
	opBlock   = 0x02
	opLoop    = 0x03
	opEnd     = 0x0b
	opBrIf    = 0x0d
	opCall    = 0x10
	opDrop    = 0x1a
	opGet     = 0x20
	opTee     = 0x22
	opI32     = 0x41
	opI32LtU  = 0x49
	opI32Add  = 0x6a
	noResults = 0x40
)

// An instrumented module spends one unit of fuel per call and per loop
// iteration: a function that starts a loop before it can branch or call
// (as every function Go compiles does) spends its call's unit in the loop's
// first iteration, not twice; any other spends it on entry.
func TestInstrumentFuel(t *testing.T) {
	// count(n) is a loop that iterates n times, with local 0 as its counter.
	count := func(n byte) []byte {
		return []byte{opLoop, noResults, opGet, 0, opI32, 1, opI32Add, opTee, 0, opI32, n, opI32LtU, opBrIf, 0, opEnd}
	}
	cat := func(parts ...[]byte) (b []byte) {
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for _, tt := range []struct {
		name    string
		callee  []byte // the body of function 1, called ten times; function 2 does nothing
		perCall int32
	}{
		{"no loop", []byte{opEnd}, 1},
		{"a loop first", []byte{opLoop, noResults, opEnd, opEnd}, 1},
		{"plain instructions and blocks, then a loop (as Go compiles)",
			[]byte{opI32, 0, opDrop, opBlock, noResults, opLoop, noResults, opEnd, opEnd, opEnd}, 1},
		{"a loop iterating three times", cat(count(3), []byte{opEnd}), 3},
		{"a branch before the loop", []byte{opBlock, noResults, opI32, 0, opBrIf, 0, opLoop, noResults, opEnd, opEnd, opEnd}, 2},
		{"a call before the loop", []byte{opCall, 2, opLoop, noResults, opEnd, opEnd}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			local := []wasmbin.Local{{Count: 1, Type: wasmbin.I32}}
			mod, yields, err := runInstrumented(t, []wasmbin.Body{
				{Locals: local, Code: cat([]byte{opLoop, noResults, opCall, 1}, count(10)[2:], []byte{opEnd})},
				{Locals: local, Code: tt.callee},
				{Code: []byte{opEnd}},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// _start's loop iterates ten times (_start itself starts with it).
			if spent, want := spent(mod), 10+10*tt.perCall; spent != want || yields != 0 {
				t.Errorf("spent %d units of fuel (yielding %d times), want %d: %d per call of the function", spent, yields, want, tt.perCall)
			}
			if stack := api.DecodeI32(mod.ExportedGlobal(wasmbin.StackExport).Get()); stack != 0 {
				t.Errorf("stack weight %d after the run, want 0", stack)
			}
		})
	}
}

// More instructions of the bodies below.
const (
	opIf      = 0x04
	opBr      = 0x0c
	opBrTable = 0x0e
	opSet     = 0x21
)

// dispatchLoop is a body as Go compiles one: a loop whose blocks a
// br_table on local 0 selects, each selector value naming the block whose
// end the code resumes after (targets[k] is the depth of value k's block,
// 0 the first block of code; the last entry is the default). code[j] is
// the code after the j-th block's end, the last one's after the loop's
// blocks; a jump is `i32.const k; local.set 0; br` to the loop.
func dispatchLoop(targets []byte, code ...[]byte) []byte {
	n := len(code)
	b := []byte{opLoop, noResults}
	for range n {
		b = append(b, opBlock, noResults)
	}
	b = append(b, opGet, 0, opBrTable, byte(len(targets)-1))
	b = append(b, targets...)
	for _, c := range code {
		b = append(b, opEnd) // a block's end: its code follows
		b = append(b, c...)
	}
	return append(b, opEnd, opEnd) // the loop's end, the function's
}

// jump is a branch to the dispatch loop with the selector at k, from
// depth levels inside the loop.
func jump(k, depth byte) []byte { return []byte{opI32, k, opSet, 0, opBr, depth} }

// In a loop as Go compiles one, fuel is counted on entering it and at the
// branches back to it; a branch whose constant selects a block ahead of it
// cannot close a cycle and is not counted.
func TestInstrumentFuelDispatch(t *testing.T) {
	// Three blocks: A (selector 0), B (1, never taken), C (2). A jumps
	// forward to C; C counts local 1 up to ten and jumps back to A.
	a := jump(2, 2) // in blocks 1 and 2, then the loop: depth 2
	c := []byte{opGet, 1, opI32, 10, opI32LtU, opIf, noResults, opGet, 1, opI32, 1, opI32Add, opSet, 1}
	c = append(c, jump(0, 1)...) // in the if, then the loop: depth 1
	c = append(c, opEnd)
	mod, yields, err := runInstrumented(t, dispatchBody(dispatchLoop([]byte{0, 1, 2, 2}, a, nil, c)), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The entry, and ten branches back; not the eleven forward.
	if spent, want := spent(mod), int32(1+10); spent != want || yields != 0 {
		t.Errorf("spent %d units (yielding %d times), want %d", spent, yields, want)
	}
}

// A cycle made only of branches with constant selectors still spends fuel
// and yields, whichever way it goes back: a constant whose block lies
// behind the branch (even a larger one), a br_if, a br_table.
func TestInstrumentFuelDispatchCycles(t *testing.T) {
	for _, tt := range []struct {
		name    string
		targets []byte
		a, b    []byte // the code after blocks 0 and 1; each runs forever
	}{
		{"a constant jump back", []byte{0, 1, 1}, jump(1, 1), jump(0, 0)},
		{"a larger constant naming a block behind", []byte{0, 1, 0, 0, 0, 0, 1}, jump(1, 1), jump(5, 0)},
		{"a br_if back", []byte{0, 1, 1}, jump(1, 1), []byte{opI32, 0, opSet, 0, opI32, 1, opBrIf, 0}},
		{"a br_table back", []byte{0, 1, 1}, jump(1, 1), []byte{opI32, 0, opSet, 0, opI32, 0, opBrTable, 0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const enough = 3
			_, yields, err := runInstrumented(t, dispatchBody(dispatchLoop(tt.targets, tt.a, tt.b)), func(yields int) bool { return yields < enough })
			if err == nil || yields != enough {
				t.Errorf("the run ended with %v after %d yields, want it stopped at yield %d", err, yields, enough)
			}
		})
	}
}

// dispatchBody is the one function of a module, with the selector and a
// counter as its locals.
func dispatchBody(code []byte) []wasmbin.Body {
	return []wasmbin.Body{{Locals: []wasmbin.Local{{Count: 2, Type: wasmbin.I32}}, Code: code}}
}

// runInstrumented instruments a module of functions without parameters or
// results, the first exported as _start, runs _start once in the
// interpreter and returns the module after the run and how many times it
// yielded. keepGoing, when set, is asked at each yield; false stops the run
// there, with an error.
func runInstrumented(t *testing.T, bodies []wasmbin.Body, keepGoing func(yields int) bool) (mod api.Module, yields int, err error) {
	t.Helper()
	m := &wasmbin.Module{
		Types:   []wasmbin.FuncType{{}},
		Funcs:   make([]uint32, len(bodies)),
		Exports: []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
		Code:    bodies,
	}
	parsed, _, err := wasmbin.Check(m.Encode(), wasmbin.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := parsed.Instrument(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	// A run that never yields is stopped by the engine's own check, so
	// that a broken count fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCloseOnContextDone(true))
	t.Cleanup(func() { rt.Close(context.Background()) })
	stop := errors.New("stopped")
	if _, err := rt.NewHostModuleBuilder(wasmbin.YieldModule).NewFunctionBuilder().
		WithFunc(func() {
			yields++
			if keepGoing != nil && !keepGoing(yields) {
				panic(stop)
			}
		}).Export(wasmbin.YieldName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err = rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	_, err = mod.ExportedFunction("_start").Call(ctx)
	return mod, yields, err
}

// spent returns the fuel a module spent since it was instantiated.
func spent(mod api.Module) int32 {
	return wasmbin.YieldInterval - int32(mod.ExportedGlobal(wasmbin.FuelExport).Get())
}
