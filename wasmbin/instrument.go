package wasmbin

import (
	"fmt"
	"strconv"
)

// What the instrumented module adds: an import the host provides, and
// exports the host reads and sets.
const (
	// YieldModule and YieldName name the function the instrumented module
	// imports and calls every YieldInterval units of fuel (loop iterations
	// and calls): the host checks there whether the run's time is up, and
	// lets other work run. It takes and returns nothing.
	YieldModule = "pluginhost"
	YieldName   = "yield"
	// FuelExport is the i32 global counted down at every loop iteration
	// (in a dispatch loop, every one a branch back starts: dispatch.go) and
	// call; the module calls yield when it reaches zero, then sets it back
	// to YieldInterval, its initial value. An instance kept between runs
	// keeps it: the first yield of a run comes within YieldInterval units,
	// whatever the run before spent.
	FuelExport = "pluginhost.fuel"
	// StackExport is the i32 global that holds the stack weight of the
	// frames under way; a run that trapped with it above the budget ran out
	// of stack.
	StackExport = "pluginhost.stack"
	// globalExportPrefix, with the global's index, names each mutable
	// global the module defines (GlobalExport).
	globalExportPrefix = "pluginhost.global."
)

// YieldInterval is how many units of fuel a module spends between two
// calls of yield: from about a hundred microseconds to a few milliseconds
// of work, below the Go scheduler's own time slice. A loop iteration or a
// call spends one (an iteration of a dispatch loop that a branch ahead
// starts, none); a bulk instruction spends one for every 1<<
// memoryFuelShift bytes or 1<<tableFuelShift table elements it is asked
// to touch, so that a loop of them cannot pass the time between two
// checks of the wall time.
const YieldInterval = 100_000

// How far a bulk instruction's length is shifted right to give its fuel:
// about the work of a loop iteration. memory.fill and memory.copy move 16
// bytes in about the time of one iteration; table.fill, table.init and
// table.grow write one element in about the time of two (table.copy, which
// copies a slice, is faster; it is charged the same).
const (
	memoryFuelShift = 4
	tableFuelShift  = 1
)

// GlobalExport is the name under which the instrumented module exports the
// mutable global of index i.
func GlobalExport(i int) string { return globalExportPrefix + strconv.Itoa(i) }

// MutableGlobals returns the indices of the mutable globals the module
// defines, which the instrumented module exports (GlobalExport).
func (m *Module) MutableGlobals() []int {
	var out []int
	for i, g := range m.Globals {
		if g.Mutable {
			out = append(out, m.importedGlobals+i)
		}
	}
	return out
}

// MutableGlobalExports returns the names under which the instrumented
// module exports the mutable globals the module defines.
func (m *Module) MutableGlobalExports() []string {
	var names []string
	for _, i := range m.MutableGlobals() {
		names = append(names, GlobalExport(i))
	}
	return names
}

// Frame weights. The engine keeps a function's frame on a stack it grows
// without a bound of its own, so the host bounds it: every call adds its
// function's weight, an estimate in bytes of its frame from the values it
// can hold, and the run traps when the sum passes the budget.
const (
	frameBaseBytes  = 64
	frameValueBytes = 16
)

// Weight is the stack weight of a defined function's frame: its
// parameters, results, locals (with the one Instrument adds to a function
// with bulk instructions) and the most operands it holds at once, each of
// which may need a slot. The module must have passed Check.
func (m *Module) Weight(i int) int64 {
	t := m.Types[m.Funcs[i]]
	values := int64(len(t.Params)+len(t.Results)+m.numLocals(i)) + int64(m.stats[i].Height)
	if m.stats[i].Bulk > 0 {
		values++
	}
	return frameBaseBytes + frameValueBytes*values
}

// Instrument returns the module rewritten for the host, which keeps its
// behaviour and bounds what it can take:
//   - every defined function adds its Weight to a mutable i32 global,
//     exported as StackExport, on entry, traps (unreachable) when the sum
//     passes stackBudget, and takes it off on every way out (return, its
//     end, a branch to its end);
//   - every function entry and loop iteration counts a mutable i32 global,
//     exported as FuelExport, down by one (the entry of a function that
//     starts a loop before it can branch or call is counted by the loop's
//     first iteration; in a dispatch loop, as Go compiles every function,
//     an iteration is counted at the branch that starts it, and not at all
//     when the branch goes to a block ahead of it: dispatch.go), and every
//     bulk instruction
//     (memory.init, table.fill, table.copy, table.init, table.grow) by its
//     length shifted right (YieldInterval), before it runs; memory.fill
//     and memory.copy become calls of two functions added after the
//     module's, which do them in chunks and charge each chunk before it
//     (bulk.go). The module calls the imported YieldModule.YieldName when
//     the fuel is spent (the import comes after the module's own, so the
//     module's functions move up by one index, everywhere they are named):
//     the host looks at the time at least every YieldInterval units;
//   - every mutable global the module defines is exported as
//     GlobalExport(index), so that the host can save and restore an
//     instance's globals.
//
// Custom sections (names, debugging information) are left out. The module
// must have passed Check.
func (m *Module) Instrument(stackBudget int64) ([]byte, error) {
	if stackBudget < 1 || stackBudget > 1<<30 {
		return nil, fmt.Errorf("wasmbin: stack budget %d out of range", stackBudget)
	}
	out := &Module{
		Types: append([]FuncType(nil), m.Types...), Funcs: m.Funcs, Tables: m.Tables, Memories: m.Memories,
		DataCount: m.DataCount, Data: m.Data, HasElements: m.HasElements,
		importedGlobals: m.importedGlobals,
	}
	// The yield import, after the module's function imports.
	yieldType := out.typeIndex(FuncType{})
	k := uint32(m.importedFuncs)
	renumber := func(f uint32) uint32 {
		if f >= k {
			return f + 1
		}
		return f
	}
	out.Imports = append(append([]Import(nil), m.Imports...), Import{Module: YieldModule, Name: YieldName, Kind: ExternFunc, Type: yieldType})
	out.importedFuncs = m.importedFuncs + 1

	// Globals: the module's, then the stack weight and the fuel.
	out.Globals = append([]Global(nil), m.Globals...)
	stack := uint32(m.NumGlobals())
	fuel := stack + 1
	zero := []byte{byte(opI32Const), 0, byte(opEnd)}
	out.Globals = append(out.Globals, Global{Type: I32, Mutable: true, Init: zero}, Global{Type: I32, Mutable: true, Init: constI32Expr(YieldInterval)})
	for i, g := range out.Globals[:len(m.Globals)] {
		var err error
		if out.Globals[i].Init, err = renumberExpr(g.Init, renumber); err != nil {
			return nil, err
		}
	}

	// Exports: the module's, renumbered, then the host's.
	for _, e := range m.Exports {
		if e.Kind == ExternFunc {
			e.Index = renumber(e.Index)
		}
		out.Exports = append(out.Exports, e)
	}
	for i, g := range m.Globals {
		if g.Mutable {
			idx := m.importedGlobals + i
			out.Exports = append(out.Exports, Export{Name: GlobalExport(idx), Kind: ExternGlobal, Index: uint32(idx)})
		}
	}
	out.Exports = append(out.Exports, Export{Name: StackExport, Kind: ExternGlobal, Index: stack}, Export{Name: FuelExport, Kind: ExternGlobal, Index: fuel})
	if m.Start != nil {
		s := renumber(*m.Start)
		out.Start = &s
	}
	for _, el := range m.Elements {
		el.Funcs = append([]uint32(nil), el.Funcs...)
		for i, f := range el.Funcs {
			el.Funcs[i] = renumber(f)
		}
		exprs := make([][]byte, len(el.Exprs))
		for i, e := range el.Exprs {
			var err error
			if exprs[i], err = renumberExpr(e, renumber); err != nil {
				return nil, err
			}
		}
		el.Exprs = exprs
		out.Elements = append(out.Elements, el)
	}

	// Code.
	g := guard{stack: stack, fuel: fuel, yield: k, budget: int32(stackBudget), renumber: renumber, scratch: &bodyScratch{}}
	if len(m.Memories) == 1 {
		// The chunked fill and copy (bulk.go), after the module's functions.
		t := out.typeIndex(FuncType{Params: []ValType{I32, I32, I32}})
		g.chunked = true
		g.fill = uint32(out.importedFuncs + len(m.Code))
		g.copy = g.fill + 1
		out.Funcs = append(append([]uint32(nil), m.Funcs...), t, t)
	}
	out.Code = make([]Body, len(m.Code), len(m.Code)+2)
	for i, b := range m.Code {
		w := m.Weight(i)
		if w > stackBudget {
			return nil, &LimitError{Limit: "stack weight of one frame", Max: stackBudget, Got: w, Where: m.funcName(i)}
		}
		t := m.Types[m.Funcs[i]]
		// A function with bulk instructions gets a local of its own, after
		// the module's, that holds each one's length while it is charged.
		scratch := uint32(len(t.Params) + m.numLocals(i))
		code, err := g.body(b, int32(w), out.blockTypeOf(t.Results), scratch)
		if err != nil {
			return nil, &Error{b.off, fmt.Errorf("%s: %v", m.funcName(i), err)}
		}
		locals := b.Locals
		if m.stats[i].Bulk > 0 {
			locals = append(append([]Local(nil), b.Locals...), Local{Count: 1, Type: I32})
		}
		out.Code[i] = Body{Locals: locals, Code: code, off: b.off}
	}
	if g.chunked {
		out.Code = append(out.Code, Body{Code: g.chunkedFill()}, Body{Code: g.chunkedCopy()})
	}
	return out.Encode(), nil
}

// typeIndex returns the index of a function type, adding it when missing.
func (m *Module) typeIndex(t FuncType) uint32 {
	for i, have := range m.Types {
		if equalTypes(have.Params, t.Params) && equalTypes(have.Results, t.Results) {
			return uint32(i)
		}
	}
	m.Types = append(m.Types, t)
	return uint32(len(m.Types) - 1)
}

// blockTypeOf returns the encoded block type of a block that yields results,
// adding a function type for it when there are several.
func (m *Module) blockTypeOf(results []ValType) []byte {
	switch len(results) {
	case 0:
		return []byte{0x40}
	case 1:
		return []byte{byte(results[0])}
	}
	w := &writer{}
	w.sleb(int64(m.typeIndex(FuncType{Results: append([]ValType(nil), results...)})))
	return w.b
}

func equalTypes(a, b []ValType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func constI32Expr(v int32) []byte {
	w := &writer{}
	w.byte(byte(opI32Const))
	w.sleb(int64(v))
	w.byte(byte(opEnd))
	return w.b
}

// renumberExpr rewrites the function indices of ref.func in a constant
// expression.
func renumberExpr(expr []byte, renumber func(uint32) uint32) ([]byte, error) {
	w := &writer{}
	r := &reader{b: expr}
	for !r.done() {
		start := len(expr) - len(r.b)
		in := readInstr(r)
		if r.err != nil {
			return nil, r.err
		}
		if in.op == opRefFunc {
			w.byte(byte(opRefFunc))
			w.u32(renumber(in.imm))
			continue
		}
		w.raw(expr[start : len(expr)-len(r.b)])
	}
	return w.b, nil
}

// guard writes the instrumented bodies.
type guard struct {
	stack, fuel, yield uint32
	budget             int32
	renumber           func(uint32) uint32
	// chunked says that the module has a memory, and fill and copy are
	// the functions that do its memory.fill and memory.copy in chunks.
	chunked    bool
	fill, copy uint32
	scratch    *bodyScratch
}

// body wraps a body: the entry (stack weight added and checked, fuel
// counted), then the original code in a block of the function's results (so
// that a branch to the function's end lands before the exit), then the
// exit; each return takes the exit first, each loop counts fuel at the
// start of every iteration (a dispatch loop on its entry and at the
// branches back to it: dispatch.go), and each bulk instruction is charged
// its length first, through the local scratch. Function indices are
// renumbered.
func (g guard) body(b Body, weight int32, blockType []byte, scratch uint32) ([]byte, error) {
	ins, loops, err := dispatchLoops(b, g.scratch)
	if err != nil {
		return nil, err
	}
	w := &writer{b: make([]byte, 0, len(b.Code)+64)}
	exit := func() {
		w.byte(byte(opGlobalGet))
		w.u32(g.stack)
		w.byte(byte(opI32Const))
		w.sleb(int64(weight))
		w.byte(byte(opI32Sub))
		w.byte(byte(opGlobalSet))
		w.u32(g.stack)
	}
	// Entry: add the weight, trap past the budget.
	w.byte(byte(opGlobalGet))
	w.u32(g.stack)
	w.byte(byte(opI32Const))
	w.sleb(int64(weight))
	w.byte(byte(opI32Add))
	w.byte(byte(opGlobalSet))
	w.u32(g.stack)
	w.byte(byte(opGlobalGet))
	w.u32(g.stack)
	w.byte(byte(opI32Const))
	w.sleb(int64(g.budget))
	w.byte(byte(opI32GtU))
	w.byte(byte(opIf))
	w.byte(0x40)
	w.byte(byte(opUnreachable))
	w.byte(byte(opEnd))
	if !entersLoop(ins) {
		g.countFuel(w)
	}
	// The original code, in a block.
	w.byte(byte(opBlock))
	w.raw(blockType)
	// open holds the blocks, loops and ifs the instruction is in, by their
	// index, to find where a branch goes.
	var open []int
	// toDispatch returns the dispatch loop a branch of the given depth
	// goes to, if it goes to one.
	toDispatch := func(depth uint32) *dispatch {
		if int(depth) >= len(open) {
			return nil
		}
		return loops[open[len(open)-1-int(depth)]]
	}
	for i, l := range ins {
		in := l.in
		switch in.op {
		case opBlock, opLoop, opIf:
			open = append(open, i)
		case opEnd:
			if len(open) == 0 { // the function's end
				w.byte(byte(opEnd)) // the block's end
				exit()
				w.raw(b.Code[l.start:l.end])
				continue
			}
			open = open[:len(open)-1]
		}
		switch {
		case in.op == opReturn:
			exit()
		case in.op == opCall || in.op == opRefFunc:
			w.byte(byte(in.op))
			w.u32(g.renumber(in.imm))
			continue
		case g.chunked && (in.op == opMemoryFill || in.op == opMemoryCopy):
			w.byte(byte(opCall))
			if in.op == opMemoryFill {
				w.u32(g.fill)
			} else {
				w.u32(g.copy)
			}
			continue
		case in.op == opBr:
			if d := toDispatch(in.imm); d != nil && !ahead(b.Code, ins, i, d) {
				g.countFuel(w)
			}
		case in.op == opBrIf:
			if toDispatch(in.imm) != nil {
				g.countFuel(w) // whether it branches or not: at most one unit too many
			}
		case in.op == opBrTable:
			r := brTable(b.Code, l)
			for range in.imm + 1 {
				if toDispatch(r.u32()) != nil {
					g.countFuel(w)
					break
				}
			}
		case in.op == opLoop && loops[i] != nil:
			// A dispatch loop counts its entry before it starts, and its
			// iterations at the branches to it.
			g.countFuel(w)
		}
		if shift, ok := bulkShift(in.op); ok {
			g.chargeLength(w, scratch, shift)
		}
		w.raw(b.Code[l.start:l.end])
		if in.op == opLoop && loops[i] == nil {
			g.countFuel(w)
		}
	}
	return w.b, nil
}

// ahead reports whether the br at ins[i], to the dispatch loop d, resumes
// after an instruction that comes after it: the two instructions before it
// set d's selector to a constant whose block ends later in the body.
func ahead(code []byte, ins []located, i int, d *dispatch) bool {
	if i < 2 || ins[i-1].in.op != opLocalSet || ins[i-1].in.imm != d.selector {
		return false
	}
	k, ok := i32Const(code, ins[i-2])
	if !ok {
		return false
	}
	t := d.target(k)
	return t > i
}

// entersLoop reports whether every run of the body reaches the start of a
// loop before anything that branches, calls or returns: then the loop's
// first iteration counts the call's fuel, and the entry need not count it
// again. Every function Go compiles starts so: a block, then the loop that
// dispatches to its resumption points.
func entersLoop(ins []located) bool {
	for _, l := range ins {
		switch in := l.in; {
		case in.op == opLoop:
			return true
		case in.op == opBlock, in.op == opNop, in.op == opDrop,
			in.op >= opLocalGet && in.op <= opGlobalSet,
			in.op >= opI32Load && in.op <= opMemorySize,   // loads, stores
			in.op >= opI32Const && in.op <= opLastNumeric: // constants, numeric instructions
		default:
			return false
		}
	}
	return false
}

// chargeLength writes, before a bulk instruction whose length is the i32
// on top of the stack (left there): fuel -= length >> shift; if fuel <= 0
// { yield(); fuel = YieldInterval }. The fuel stays within an i32: it is
// at most YieldInterval before, and a length is below 1<<32.
func (g guard) chargeLength(w *writer, scratch uint32, shift int) {
	w.byte(byte(opLocalTee))
	w.u32(scratch)
	g.spend(w, func() { w.localGet(scratch) }, shift)
}

// spend writes: fuel -= length >> shift; if fuel <= 0 { yield(); fuel =
// YieldInterval }, where length is what length writes.
func (g guard) spend(w *writer, length func(), shift int) {
	w.byte(byte(opGlobalGet))
	w.u32(g.fuel)
	length()
	w.byte(byte(opI32Const))
	w.sleb(int64(shift))
	w.byte(byte(opI32ShrU))
	w.byte(byte(opI32Sub))
	w.byte(byte(opGlobalSet))
	w.u32(g.fuel)
	w.byte(byte(opGlobalGet))
	w.u32(g.fuel)
	w.byte(byte(opI32Const))
	w.sleb(0)
	w.byte(byte(opI32LeS))
	g.refuel(w)
}

// countFuel writes: fuel -= 1; if fuel == 0 { yield(); fuel = YieldInterval }.
func (g guard) countFuel(w *writer) {
	w.byte(byte(opGlobalGet))
	w.u32(g.fuel)
	w.byte(byte(opI32Const))
	w.sleb(1)
	w.byte(byte(opI32Sub))
	w.byte(byte(opGlobalSet))
	w.u32(g.fuel)
	w.byte(byte(opGlobalGet))
	w.u32(g.fuel)
	w.byte(byte(opI32Eqz))
	g.refuel(w)
}

// refuel writes: if (the i32 on top of the stack) { yield(); fuel =
// YieldInterval }.
func (g guard) refuel(w *writer) {
	w.byte(byte(opIf))
	w.byte(0x40)
	w.byte(byte(opCall))
	w.u32(g.yield)
	w.byte(byte(opI32Const))
	w.sleb(YieldInterval)
	w.byte(byte(opGlobalSet))
	w.u32(g.fuel)
	w.byte(byte(opEnd))
}
