package wasmtest

import "pluginhost/wasmbin"

// BulkKinds names the instructions whose cost grows with their length
// operand, which BulkLoop repeats.
var BulkKinds = []string{"memory.fill", "memory.copy", "memory.init", "table.fill", "table.copy", "table.init", "table.grow"}

// More instructions.
const (
	memoryCopy = 10
	memoryFill = 11
)

// BulkLoop is a command that repeats one bulk instruction (BulkKinds)
// forever, each time over as much as it can: all of its memory of
// memoryBytes (memory.fill; memory.copy of half of it onto the other half;
// memory.init of a passive data segment of segmentBytes), or all of its
// table of elements (table.fill; table.copy of half of it; table.init of a
// passive element segment of segmentElements; table.grow by elements,
// which fails once the table is at its maximum).
func BulkLoop(kind string, memoryBytes int64, segmentBytes, elements, segmentElements int) []byte {
	i32 := func(v int64) []byte { return sleb([]byte{opI32Const}, v) }
	half := memoryBytes / 2
	var op []byte
	table := wasmbin.Table{Elem: wasmbin.FuncRef, Size: wasmbin.Resizable{Min: uint64(elements), Max: uint64(elements), HasMax: true}}
	var data []wasmbin.Data
	var elems []wasmbin.Element
	switch kind {
	case "memory.fill":
		op = cat(i32(0), i32(0), i32(memoryBytes), []byte{opMisc, memoryFill, 0})
	case "memory.copy":
		op = cat(i32(0), i32(half), i32(half), []byte{opMisc, memoryCopy, 0, 0})
	case "memory.init":
		data = []wasmbin.Data{{Passive: true, Init: make([]byte, segmentBytes)}}
		op = cat(i32(0), i32(0), i32(int64(segmentBytes)), []byte{opMisc, memoryInit, 0, 0})
	case "table.fill":
		op = cat(i32(0), []byte{opRefNull, byte(wasmbin.FuncRef)}, i32(int64(elements)), []byte{opMisc, tableFill, 0})
	case "table.copy":
		op = cat(i32(0), i32(int64(elements/2)), i32(int64(elements/2)), []byte{opMisc, tableCopy, 0, 0})
	case "table.init":
		elems = []wasmbin.Element{{Flags: 1, Funcs: make([]uint32, segmentElements)}} // function 0, _start
		op = cat(i32(0), i32(0), i32(int64(segmentElements)), []byte{opMisc, tableInit, 0, 0})
	case "table.grow":
		table.Size.Min = 0
		op = cat([]byte{opRefNull, byte(wasmbin.FuncRef)}, i32(int64(elements)), []byte{opMisc, tableGrow, 0, opDrop})
	default:
		panic("wasmtest: no bulk kind " + kind)
	}
	body := cat([]byte{opLoop, blockEmpty}, op, []byte{opBr, 0, opEnd, opEnd})
	m := &wasmbin.Module{
		Types:    []wasmbin.FuncType{{}},
		Funcs:    []uint32{0},
		Tables:   []wasmbin.Table{table},
		Memories: []wasmbin.Resizable{{Min: uint64(memoryBytes / wasmbin.PageBytes)}},
		Exports:  []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 0}},
		Code:     []wasmbin.Body{{Code: body}},
		Data:     data,
		Elements: elems, HasElements: len(elems) > 0,
	}
	if len(data) > 0 {
		n := uint32(len(data))
		m.DataCount = &n
	}
	return m.Encode()
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// MemoryOp is one memory.fill (Fill) or memory.copy of MemoryOps.
type MemoryOp struct {
	Fill bool
	// Dst, Src (of a copy) or Value (of a fill), and N are the
	// instruction's operands.
	Dst, Src, Value, N uint32
}

// MemoryOps is a command with memory of pages pages whose _start writes
// byte i ^ (i >> 8) at every i below the memory's end, then runs the ops
// in order.
func MemoryOps(pages int, ops ...MemoryOp) []byte {
	i32 := func(v uint32) []byte { return sleb([]byte{opI32Const}, int64(int32(v))) }
	end := uint32(pages * wasmbin.PageBytes)
	body := []byte{
		opLoop, blockEmpty,
		opLocalGet, 0, // address
		opLocalGet, 0, opLocalGet, 0, opI32Const, 8, 0x76, 0x73, // i ^ (i >> 8)
		opI32Store8, 0, 0,
		opLocalGet, 0, opI32Const, 1, opI32Add, opLocalSet, 0,
		opLocalGet, 0,
	}
	body = append(body, i32(end)...)
	body = append(body, 0x49, opBrIf, 0, opEnd) // i32.lt_u
	for _, op := range ops {
		if op.Fill {
			body = cat(body, i32(op.Dst), i32(op.Value), i32(op.N), []byte{opMisc, memoryFill, 0})
		} else {
			body = cat(body, i32(op.Dst), i32(op.Src), i32(op.N), []byte{opMisc, memoryCopy, 0, 0})
		}
	}
	return command(append(body, opEnd), []wasmbin.Local{{Count: 1, Type: wasmbin.I32}}, []wasmbin.Resizable{{Min: uint64(pages)}}, nil)
}
