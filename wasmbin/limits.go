package wasmbin

import (
	"cmp"
	"errors"
	"fmt"
)

// Limits bound a module's structure. They keep what the engine spends to
// compile a module (time and memory grow with functions, their size, their
// locals and how deeply their blocks nest) and what an instance of it holds
// (memory, tables, globals) within known bounds. A zero field takes its
// default; the defaults admit every module the Go toolchain and Debian's
// clang with wasi-libc build for a capability.
type Limits struct {
	// MaxFunctions bounds functions, imported and defined.
	MaxFunctions int
	// MaxFunctionBytes bounds one function body's size in bytes.
	MaxFunctionBytes int
	// MaxLocals bounds one function's locals (its parameters excluded).
	MaxLocals int
	// MaxNesting bounds how deeply blocks, loops and ifs nest in a function,
	// and MaxBlocks how many it has: the engine's time to compile a function
	// grows with the square of its blocks.
	MaxNesting, MaxBlocks int
	// MaxLocalsTimesBlocks bounds a function's locals (plus one) times its
	// blocks, and MaxModuleLocalsTimesBlocks the sum over all functions: the
	// engine's time and memory to compile a function grow with both.
	MaxLocalsTimesBlocks       int
	MaxModuleLocalsTimesBlocks int64
	// MaxBrTable bounds the targets of one br_table.
	MaxBrTable int
	// MaxTypes, MaxParams, MaxImports, MaxExports and MaxGlobals bound the
	// counts they name (MaxParams: parameters, or results, of one type).
	MaxTypes, MaxParams, MaxImports, MaxExports, MaxGlobals int
	// MaxTables bounds tables; MaxTableElements bounds the elements all of
	// them may ever hold together.
	MaxTables, MaxTableElements int
	// MaxSegmentElements bounds the elements of all element segments
	// together: the engine makes each of them, one at a time, for every
	// instance, before a run can be stopped (about 300 ns each).
	MaxSegmentElements int
	// MaxElementSegments and MaxDataSegments bound the segments.
	MaxElementSegments, MaxDataSegments int
	// MemoryBytes bounds the memory an instance starts with. Zero takes
	// DefaultMemoryBytes.
	MemoryBytes int64
}

// Default limits.
const (
	DefaultMaxFunctions               = 100_000
	DefaultMaxFunctionBytes           = 1 << 20
	DefaultMaxLocals                  = 10_000
	DefaultMaxNesting                 = 1_024
	DefaultMaxBlocks                  = 4_096
	DefaultMaxLocalsTimesBlocks       = 200_000
	DefaultMaxModuleLocalsTimesBlocks = 16_000_000
	DefaultMaxBrTable                 = 65_520
	DefaultMaxTypes                   = 20_000
	DefaultMaxParams                  = 1_000
	DefaultMaxImports                 = 1_000
	DefaultMaxExports                 = 10_000
	DefaultMaxGlobals                 = 10_000
	DefaultMaxTables                  = 16
	DefaultMaxTableElements           = 1 << 20
	DefaultMaxSegmentElements         = 1 << 16
	DefaultMaxElementSegments         = 10_000
	DefaultMaxDataSegments            = 100_000
	DefaultMemoryBytes                = 64 << 20
)

// PageBytes is the size of a memory page.
const PageBytes = 64 << 10

func (l Limits) withDefaults() Limits {
	l.MaxFunctions = cmp.Or(l.MaxFunctions, DefaultMaxFunctions)
	l.MaxFunctionBytes = cmp.Or(l.MaxFunctionBytes, DefaultMaxFunctionBytes)
	l.MaxLocals = cmp.Or(l.MaxLocals, DefaultMaxLocals)
	l.MaxNesting = cmp.Or(l.MaxNesting, DefaultMaxNesting)
	l.MaxBlocks = cmp.Or(l.MaxBlocks, DefaultMaxBlocks)
	l.MaxLocalsTimesBlocks = cmp.Or(l.MaxLocalsTimesBlocks, DefaultMaxLocalsTimesBlocks)
	l.MaxModuleLocalsTimesBlocks = cmp.Or(l.MaxModuleLocalsTimesBlocks, DefaultMaxModuleLocalsTimesBlocks)
	l.MaxBrTable = cmp.Or(l.MaxBrTable, DefaultMaxBrTable)
	l.MaxTypes = cmp.Or(l.MaxTypes, DefaultMaxTypes)
	l.MaxParams = cmp.Or(l.MaxParams, DefaultMaxParams)
	l.MaxImports = cmp.Or(l.MaxImports, DefaultMaxImports)
	l.MaxExports = cmp.Or(l.MaxExports, DefaultMaxExports)
	l.MaxGlobals = cmp.Or(l.MaxGlobals, DefaultMaxGlobals)
	l.MaxTables = cmp.Or(l.MaxTables, DefaultMaxTables)
	l.MaxTableElements = cmp.Or(l.MaxTableElements, DefaultMaxTableElements)
	l.MaxSegmentElements = cmp.Or(l.MaxSegmentElements, DefaultMaxSegmentElements)
	l.MaxElementSegments = cmp.Or(l.MaxElementSegments, DefaultMaxElementSegments)
	l.MaxDataSegments = cmp.Or(l.MaxDataSegments, DefaultMaxDataSegments)
	l.MemoryBytes = cmp.Or(l.MemoryBytes, DefaultMemoryBytes)
	return l
}

// Facts is what Check learned of a module, for the engine.
type Facts struct {
	// Kind is how the module runs: KindCommand or KindReactor.
	Kind string
	// MemoryBytes is the memory an instance starts with.
	MemoryBytes int64
	// TableElements is the most elements the module's tables may ever hold.
	TableElements int64
	// Restorable says that an instance's whole state is its memory and its
	// globals: no instruction of its code changes a table (table.set,
	// table.grow, table.fill, table.copy, table.init) or drops a segment
	// (data.drop, elem.drop), so that an instance saved after
	// initialization can be restored by writing them back. Nothing from
	// outside changes a table either: a module imports no table, memory or
	// global (Check), and an instance's exports are the host's alone (no
	// other module links to it).
	Restorable bool
	// Functions is the number of defined functions; CodeBytes their size.
	Functions, CodeBytes int
	// MaxNesting and MaxLocals are the largest of any function.
	MaxNesting, MaxLocals int
}

// How a module runs.
const (
	// KindCommand is a WASI preview 1 command: it exports _start, which
	// reads the request on standard input and writes the result; each run
	// is a fresh instance.
	KindCommand = "command"
	// KindReactor exports RunExport (and may export _initialize, run once
	// when an instance is made): each run calls RunExport, which reads the
	// request on standard input and writes the result, on an instance
	// restored to its state after initialization.
	KindReactor = "reactor"
)

// RunExport is the function a reactor module exports for a run.
const RunExport = "pluginhost_run"

// WASIModule is the only module a capability may import from.
const WASIModule = "wasi_snapshot_preview1"

// Check parses a module and checks it against the limits and the host's
// rules: it imports functions of WASI preview 1 only, exports _start (a
// command) or RunExport (a reactor), has at most one memory, starting within
// MemoryBytes, tables whose growth is bounded, and code within the limits
// of every function. Errors name the limit (*LimitError) or the rule.
func Check(wasm []byte, lim Limits) (*Module, Facts, error) {
	lim = lim.withDefaults()
	m, err := Parse(wasm, lim)
	if err != nil {
		return nil, Facts{}, err
	}
	f, err := m.check(lim)
	return m, f, err
}

func (m *Module) check(lim Limits) (Facts, error) {
	var f Facts
	for _, im := range m.Imports {
		if im.Module != WASIModule {
			return f, fmt.Errorf("the module imports %s.%s; only %s is provided", im.Module, im.Name, WASIModule)
		}
		if im.Kind != ExternFunc {
			return f, fmt.Errorf("the module imports %s.%s as a table, memory or global; %s provides functions only", im.Module, im.Name, WASIModule)
		}
	}
	run, reactor := m.Export(RunExport)
	start, command := m.Export("_start")
	switch {
	case reactor && run.Kind == ExternFunc:
		if t, _ := m.FuncType(run.Index); len(t.Params)+len(t.Results) > 0 {
			return f, fmt.Errorf("the export %s must take and return nothing", RunExport)
		}
		f.Kind = KindReactor
		if ini, ok := m.Export("_initialize"); ok && ini.Kind != ExternFunc {
			return f, errors.New("the export _initialize must be a function")
		}
	case command && start.Kind == ExternFunc:
		f.Kind = KindCommand
	default:
		return f, fmt.Errorf("the module exports neither _start nor %s: build a WASI preview 1 command module (GOOS=wasip1 GOARCH=wasm go build) or a reactor that exports %s (pluginhost build)", RunExport, RunExport)
	}
	if len(m.Memories) > 0 {
		f.MemoryBytes = int64(m.Memories[0].Min) * PageBytes
		if f.MemoryBytes > lim.MemoryBytes {
			return f, &LimitError{Limit: "memory an instance starts with, in bytes", Max: lim.MemoryBytes, Got: f.MemoryBytes, Where: "memory 0"}
		}
	}
	for i, d := range m.Data {
		if !d.Passive && len(m.Memories) == 0 {
			return f, fmt.Errorf("data segment %d writes to a memory the module does not have", i)
		}
		if off, ok := constI32(d.Offset); ok && !d.Passive && uint64(uint32(off))+uint64(len(d.Init)) > uint64(f.MemoryBytes) {
			return f, fmt.Errorf("data segment %d (%d bytes at %d) does not fit in the %d bytes of memory the module starts with", i, len(d.Init), uint32(off), f.MemoryBytes)
		}
	}

	var changes stateChanges
	f.Functions = len(m.Code)
	m.stats = make([]FuncStats, len(m.Code))
	var product int64
	for i := range m.Code {
		st, err := m.funcStats(i, lim, &changes)
		if err != nil {
			return f, err
		}
		m.stats[i] = st
		locals := m.numLocals(i)
		f.MaxLocals = max(f.MaxLocals, locals)
		f.MaxNesting = max(f.MaxNesting, st.Nesting)
		f.CodeBytes += len(m.Code[i].Code)
		p := int64(locals+1) * int64(st.Blocks)
		if p > int64(lim.MaxLocalsTimesBlocks) {
			return f, &LimitError{Limit: "locals times blocks of a function", Max: int64(lim.MaxLocalsTimesBlocks), Got: p, Where: m.funcName(i)}
		}
		if product += p; product > lim.MaxModuleLocalsTimesBlocks {
			return f, &LimitError{Limit: "locals times blocks over all functions", Max: lim.MaxModuleLocalsTimesBlocks, Got: product}
		}
	}
	for i, t := range m.Tables {
		size := t.Size.Min
		if changes.tableGrows > 0 {
			if !t.Size.HasMax {
				return f, fmt.Errorf("table %d has no maximum and the code grows tables: declare a maximum of at most %d elements", i, lim.MaxTableElements)
			}
			size = t.Size.Max
		}
		f.TableElements += int64(size)
	}
	if f.TableElements > int64(lim.MaxTableElements) {
		return f, &LimitError{Limit: "elements the tables may hold", Max: int64(lim.MaxTableElements), Got: f.TableElements}
	}
	f.Restorable = changes.tables == 0 && changes.drops == 0
	return f, nil
}

// stateChanges counts the instructions that change an instance's state
// beyond its memory and globals.
type stateChanges struct{ tableGrows, tables, drops int }

func (m *Module) funcName(i int) string { return fmt.Sprintf("function %d", m.importedFuncs+i) }

func (m *Module) numLocals(i int) int {
	n := 0
	for _, l := range m.Code[i].Locals {
		n += int(l.Count)
	}
	return n
}

// funcStats walks one body: its nesting, blocks and stack height, its
// references to functions, globals and types, and the instructions that
// change tables or drop segments.
func (m *Module) funcStats(i int, lim Limits, changes *stateChanges) (FuncStats, error) {
	var st FuncStats
	where := m.funcName(i)
	type frame struct{ base, params, results int }
	frames := []frame{{results: len(m.Types[m.Funcs[i]].Results)}}
	height := 0
	pop := func(n int) {
		height = max(height-n, frames[len(frames)-1].base)
	}
	blockArity := func(bt int64) (int, int, error) {
		switch {
		case bt == blockEmpty:
			return 0, 0, nil
		case bt == blockValue:
			return 0, 1, nil
		case bt >= int64(len(m.Types)):
			return 0, 0, fmt.Errorf("block type %d does not exist", bt)
		}
		t := m.Types[bt]
		return len(t.Params), len(t.Results), nil
	}
	err := walk(m.Code[i], func(in instr, depth, _, _ int) error {
		switch in.op {
		case opBlock, opLoop, opIf:
			if depth+1 > lim.MaxNesting {
				return &LimitError{Limit: "nesting of blocks", Max: int64(lim.MaxNesting), Got: int64(depth + 1), Where: where}
			}
			st.Nesting = max(st.Nesting, depth+1)
			if st.Blocks++; st.Blocks > lim.MaxBlocks {
				return &LimitError{Limit: "blocks of a function", Max: int64(lim.MaxBlocks), Got: int64(st.Blocks), Where: where}
			}
			params, results, err := blockArity(in.block)
			if err != nil {
				return err
			}
			if in.op == opIf {
				pop(1)
			}
			pop(params)
			frames = append(frames, frame{base: height, params: params, results: results})
			height += params
		case opElse:
			f := frames[len(frames)-1]
			height = f.base + f.params
		case opEnd:
			f := frames[len(frames)-1]
			frames = frames[:len(frames)-1]
			height = f.base + f.results
		case opUnreachable, opBr, opReturn:
			height = frames[len(frames)-1].base
		case opBrTable:
			if int(in.imm) > lim.MaxBrTable {
				return &LimitError{Limit: "targets of a br_table", Max: int64(lim.MaxBrTable), Got: int64(in.imm), Where: where}
			}
			height = frames[len(frames)-1].base
		case opCall:
			t, ok := m.FuncType(in.imm)
			if !ok {
				return fmt.Errorf("call of function %d, which does not exist", in.imm)
			}
			pop(len(t.Params))
			height += len(t.Results)
		case opCallIndirect:
			if int(in.imm) >= len(m.Types) {
				return fmt.Errorf("call_indirect of type %d, which does not exist", in.imm)
			}
			t := m.Types[in.imm]
			pop(len(t.Params) + 1)
			height += len(t.Results)
		default:
			switch in.op {
			case opRefFunc:
				if int(in.imm) >= m.NumFuncs() {
					return fmt.Errorf("reference to function %d, which does not exist", in.imm)
				}
			case opGlobalGet, opGlobalSet:
				if int(in.imm) >= m.NumGlobals() {
					return fmt.Errorf("global %d does not exist", in.imm)
				}
			case opTableGrow:
				changes.tableGrows++
				changes.tables++
			case opTableSet, opTableFill, opTableCopy, opTableInit:
				changes.tables++
			case opDataDrop, opElemDrop:
				changes.drops++
			}
			if _, ok := bulkShift(in.op); ok {
				st.Bulk++
			}
			p, q := effect(in.op)
			pop(p)
			height += q
		}
		st.Height = max(st.Height, height)
		return nil
	})
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return st, le
		}
		return st, &Error{m.Code[i].off, fmt.Errorf("%s: %v", where, err)}
	}
	return st, nil
}

// constI32 returns the value of a constant expression that is one i32.const.
func constI32(expr []byte) (int32, bool) {
	r := &reader{b: expr}
	if in := readInstr(r); r.err != nil || in.op != opI32Const {
		return 0, false
	}
	r = &reader{b: expr[1:]}
	v := r.sleb(32)
	return int32(v), r.err == nil
}
