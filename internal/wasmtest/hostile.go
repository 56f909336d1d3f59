package wasmtest

import "pluginhost/wasmbin"

// Hostile modules, written instruction by instruction, each aimed at one
// bound of the host. Each is a command module: it exports _start.

// Instructions used below.
const (
	opUnreachable = 0x00
	opBlock       = 0x02
	opLoop        = 0x03
	opEnd         = 0x0b
	opBr          = 0x0c
	opBrIf        = 0x0d
	opCall        = 0x10
	opDrop        = 0x1a
	opLocalGet    = 0x20
	opLocalSet    = 0x21
	opGlobalGet   = 0x23
	opGlobalSet   = 0x24
	opI32Store    = 0x36
	opMemoryGrow  = 0x40
	opI32Const    = 0x41
	opI64Const    = 0x42
	opI32Add      = 0x6a
	opRefNull     = 0xd0
	opMisc        = 0xfc
	tableGrow     = 15
	blockEmpty    = 0x40
)

// command returns a module whose _start is the given body, with memories,
// tables and globals as given.
func command(body []byte, locals []wasmbin.Local, mem []wasmbin.Resizable, tables []wasmbin.Table, exports ...wasmbin.Export) []byte {
	m := &wasmbin.Module{
		Types:    []wasmbin.FuncType{{}},
		Funcs:    []uint32{0},
		Memories: mem,
		Tables:   tables,
		Exports:  append([]wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}}, exports...),
		Code:     []wasmbin.Body{{Locals: locals, Code: body}},
	}
	return m.Encode()
}

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
		} else {
			return append(b, c)
		}
	}
}

// BigMemory starts with pages of memory and does nothing; exported says
// whether the memory is exported (the engine's own checks saw only exported
// memories).
func BigMemory(pages uint64, exported bool) []byte {
	var exports []wasmbin.Export
	if exported {
		exports = append(exports, wasmbin.Export{Name: "memory", Kind: wasmbin.ExternMemory})
	}
	return command([]byte{opEnd}, nil, []wasmbin.Resizable{{Min: pages}}, nil, exports...)
}

// MemoryGrowLoop grows its memory a page at a time and writes to each new
// page, forever: until the host refuses a growth, when it traps.
func MemoryGrowLoop() []byte {
	// Trap when a growth fails (memory.grow gives -1), else write to the
	// new page and go on.
	body := []byte{
		opLoop, blockEmpty,
		opI32Const, 1, opMemoryGrow, 0,
		opLocalSet, 0,
		opBlock, blockEmpty,
		opLocalGet, 0, opI32Const, 1, opI32Add, // 0 when the growth failed
		opBrIf, 0,
		opUnreachable,
		opEnd,
		// Write to the first word of the new page: (old pages) * 65536.
		opLocalGet, 0, opI32Const, 16, 0x74, // i32.shl
		opI32Const, 1, opI32Store, 2, 0,
		opBr, 0,
		opEnd,
		opEnd,
	}
	return command(body, []wasmbin.Local{{Count: 1, Type: wasmbin.I32}}, []wasmbin.Resizable{{Min: 1}}, nil)
}

// TableGrowLoop grows its table by a million elements at a time, forever.
// With max, the table declares that maximum.
func TableGrowLoop(max uint64, hasMax bool) []byte {
	body := []byte{
		opLoop, blockEmpty,
		opRefNull, byte(wasmbin.FuncRef),
	}
	body = append(body, opI32Const, 0xc0, 0x84, 0x3d) // 1,000,000 as a signed LEB128
	body = append(body, opMisc, tableGrow, 0, opDrop, opBr, 0, opEnd, opEnd)
	table := wasmbin.Table{Elem: wasmbin.FuncRef, Size: wasmbin.Resizable{Min: 1, Max: max, HasMax: hasMax}}
	return command(body, nil, nil, []wasmbin.Table{table})
}

// Recursion calls itself without end.
func Recursion() []byte {
	m := &wasmbin.Module{
		Types:   []wasmbin.FuncType{{}},
		Funcs:   []uint32{0, 0},
		Exports: []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
		Code: []wasmbin.Body{
			{Code: []byte{opCall, 1, opEnd}},
			{Code: []byte{opCall, 1, opEnd}},
		},
	}
	return m.Encode()
}

// NestedBlocks nests depth empty blocks, each with a conditional branch.
func NestedBlocks(depth int) []byte {
	var body []byte
	for range depth {
		body = append(body, opBlock, blockEmpty, opI32Const, 0, opBrIf, 0)
	}
	for range depth {
		body = append(body, opEnd)
	}
	return command(append(body, opEnd), nil, nil, nil)
}

// LiveLocals sets locals i64 locals, then runs blocks blocks with a branch
// each, then reads every local: the engine's compiler keeps each local's
// value for each block.
func LiveLocals(locals, blocks int) []byte {
	var body []byte
	for i := range locals {
		body = append(body, opI64Const, 1, opLocalSet)
		body = uleb(body, uint64(i))
	}
	for range blocks {
		body = append(body, opBlock, blockEmpty, opI32Const, 0, opBrIf, 0, opEnd)
	}
	for i := range locals {
		body = append(body, opLocalGet)
		body = uleb(body, uint64(i))
		body = append(body, opDrop)
	}
	return command(append(body, opEnd), []wasmbin.Local{{Count: uint32(locals), Type: wasmbin.I64}}, nil, nil)
}

// ManyBlockFunctions has functions functions of blocks blocks each (with a
// branch each): a compilation that passes the structural limits but takes
// long.
func ManyBlockFunctions(functions, blocks int) []byte {
	var body []byte
	for range blocks {
		body = append(body, opBlock, blockEmpty, opI32Const, 0, opBrIf, 0, opEnd)
	}
	body = append(body, opEnd)
	m := &wasmbin.Module{
		Types:   []wasmbin.FuncType{{}},
		Exports: []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
	}
	for range functions {
		m.Funcs = append(m.Funcs, 0)
		m.Code = append(m.Code, wasmbin.Body{Code: body})
	}
	return m.Encode()
}

// Trap traps at once.
func Trap() []byte { return command([]byte{opUnreachable, opEnd}, nil, nil, nil) }

// StartLoop has a start function (run when the module is instantiated)
// that loops forever.
func StartLoop() []byte {
	m := &wasmbin.Module{
		Types:   []wasmbin.FuncType{{}},
		Funcs:   []uint32{0, 0},
		Exports: []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
		Code: []wasmbin.Body{
			{Code: []byte{opEnd}},
			{Code: []byte{opLoop, blockEmpty, opBr, 0, opEnd, opEnd}},
		},
	}
	start := uint32(1)
	m.Start = &start
	return m.Encode()
}

// SegmentOutOfBounds writes a data segment past the end of its one page
// of memory.
func SegmentOutOfBounds() []byte {
	m := &wasmbin.Module{
		Types:    []wasmbin.FuncType{{}},
		Funcs:    []uint32{0},
		Memories: []wasmbin.Resizable{{Min: 1}},
		Exports:  []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
		Code:     []wasmbin.Body{{Code: []byte{opEnd}}},
		Data:     []wasmbin.Data{{Offset: []byte{opI32Const, 0xf8, 0xff, 0x03, opEnd}, Init: []byte("past the end")}}, // at 65528
	}
	return m.Encode()
}

// Invalid is well formed but does not validate: its _start leaves a value
// on the stack.
func Invalid() []byte { return command([]byte{opI32Const, 0, opEnd}, nil, nil, nil) }

// HoldMemory grows its memory to pages pages, writing to each, then loops
// until the host stops it: it holds that memory for its whole run.
func HoldMemory(pages int) []byte {
	body := []byte{
		// while memory.size < pages { memory.grow 1; write to the new page }
		opBlock, blockEmpty,
		opLoop, blockEmpty,
		0x3f, 0, // memory.size
	}
	body = append(body, opI32Const)
	body = sleb(body, int64(pages))
	body = append(body,
		0x4f, // i32.ge_u
		opBrIf, 1,
		opI32Const, 1, opMemoryGrow, 0,
		opI32Const, 16, 0x74, // i32.shl: the new page's first byte
		opI32Const, 1, opI32Store, 2, 0,
		opBr, 0,
		opEnd,
		opEnd,
		// then forever
		opLoop, blockEmpty, opBr, 0, opEnd,
		opEnd,
	)
	return command(body, nil, []wasmbin.Resizable{{Min: 1}}, nil)
}

func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
