package wasmbin_test

import (
	"context"
	"testing"

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
			m := &wasmbin.Module{
				Types:   []wasmbin.FuncType{{}},
				Funcs:   []uint32{0, 0, 0},
				Exports: []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
				Code: []wasmbin.Body{
					{Locals: local, Code: cat([]byte{opLoop, noResults, opCall, 1}, count(10)[2:], []byte{opEnd})},
					{Locals: local, Code: tt.callee},
					{Code: []byte{opEnd}},
				},
			}
			parsed, _, err := wasmbin.Check(m.Encode(), wasmbin.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := parsed.Instrument(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
			defer rt.Close(ctx)
			yields := 0
			if _, err := rt.NewHostModuleBuilder(wasmbin.YieldModule).NewFunctionBuilder().
				WithFunc(func() { yields++ }).Export(wasmbin.YieldName).Instantiate(ctx); err != nil {
				t.Fatal(err)
			}
			mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithStartFunctions())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mod.ExportedFunction("_start").Call(ctx); err != nil {
				t.Fatal(err)
			}
			fuel := int32(mod.ExportedGlobal(wasmbin.FuelExport).Get())
			// _start's loop iterates ten times (_start itself starts with it).
			if spent, want := wasmbin.YieldInterval-fuel, 10+10*tt.perCall; spent != want || yields != 0 {
				t.Errorf("spent %d units of fuel (yielding %d times), want %d: %d per call of the function", spent, yields, want, tt.perCall)
			}
			if stack := api.DecodeI32(mod.ExportedGlobal(wasmbin.StackExport).Get()); stack != 0 {
				t.Errorf("stack weight %d after the run, want 0", stack)
			}
		})
	}
}
