package wasmtest

import "pluginhost/wasmbin"

// Reactors written instruction by instruction, each of which changes one
// kind of an instance's state in its run and traps when a run starts with
// that state already changed: a host that starts every run from the
// module's initial state sees each run answer "fresh".

// StateKinds names the kinds of state StateReactor changes: the memory, a
// global, the memory's size, a table's contents (by table.set, table.fill,
// table.copy, table.init), its size (table.grow), an element or data
// segment (elem.drop, data.drop; a run after the drop traps when it uses
// the segment), and a table set by _initialize ("initialized table", whose
// run traps unless the table holds what _initialize set).
var StateKinds = []string{
	"memory", "global", "memory.grow",
	"table.set", "table.grow", "table.fill", "table.copy", "table.init",
	"elem.drop", "data.drop", "initialized table",
}

// Restorable reports whether the state StateReactor(kind) changes is its
// memory and globals alone.
func Restorable(kind string) bool {
	return kind == "memory" || kind == "global" || kind == "memory.grow"
}

// FreshSummary is the summary of a StateReactor's run that started fresh.
const FreshSummary = "fresh"

// More instructions.
const (
	opIf        = 0x04
	opI32Load8  = 0x2d
	opI32Store8 = 0x3a
	opMemSize   = 0x3f
	opI32Eqz    = 0x45
	opI32Ne     = 0x47
	opTableGet  = 0x25
	opTableSet  = 0x26
	opRefIsNull = 0xd1
	opRefFunc   = 0xd2
	memoryInit  = 8
	dataDrop    = 9
	tableInit   = 12
	elemDrop    = 13
	tableCopy   = 14
	tableSize   = 16
	tableFill   = 17
)

// StateReactor returns a reactor (it exports wasmbin.RunExport) whose run
// checks that one kind of state (StateKinds) is as the module declares it,
// trapping otherwise, changes it, and writes an ExtensionResult whose
// summary is FreshSummary.
func StateReactor(kind string) []byte {
	// Function 0 is fd_write; 1 the run; 2 a function the table refers
	// to; 3 _initialize.
	const target = 2
	slotSet := func(slot byte) []byte { // pushes 1 when the slot is not null
		return []byte{opI32Const, slot, opTableGet, 0, opRefIsNull, opI32Eqz}
	}
	table := wasmbin.Table{Elem: wasmbin.FuncRef, Size: wasmbin.Resizable{Min: 4, Max: 4, HasMax: true}}
	declared := wasmbin.Element{Flags: 3, Funcs: []uint32{target}} // so that ref.func may name it
	elements := []wasmbin.Element{declared}
	var check, change []byte
	var initialize []byte
	switch kind {
	case "memory":
		check = []byte{opI32Const, 0x80, 0x10, opI32Load8, 0, 0} // 2048
		change = []byte{opI32Const, 0x80, 0x10, opI32Const, 1, opI32Store8, 0, 0}
	case "global":
		check = []byte{opGlobalGet, 0}
		change = []byte{opI32Const, 1, opGlobalSet, 0}
	case "memory.grow":
		check = []byte{opMemSize, 0, opI32Const, 1, opI32Ne}
		change = []byte{opI32Const, 1, opMemoryGrow, 0, opDrop}
	case "table.set":
		check = slotSet(1)
		change = []byte{opI32Const, 1, opRefFunc, target, opTableSet, 0}
	case "table.grow":
		table.Size.Min = 1
		check = []byte{opMisc, tableSize, 0, opI32Const, 1, opI32Ne}
		change = []byte{opRefNull, byte(wasmbin.FuncRef), opI32Const, 1, opMisc, tableGrow, 0, opDrop}
	case "table.fill":
		check = slotSet(3)
		change = []byte{opI32Const, 0, opRefFunc, target, opI32Const, 4, opMisc, tableFill, 0}
	case "table.copy":
		elements = append(elements, wasmbin.Element{Flags: 0, Offset: []byte{opI32Const, 0, opEnd}, Funcs: []uint32{target}})
		check = slotSet(1)
		change = []byte{opI32Const, 1, opI32Const, 0, opI32Const, 1, opMisc, tableCopy, 0, 0}
	case "table.init":
		elements = []wasmbin.Element{{Flags: 1, Funcs: []uint32{target}}, declared}
		check = slotSet(1)
		change = []byte{opI32Const, 1, opI32Const, 0, opI32Const, 1, opMisc, tableInit, 0, 0}
	case "elem.drop":
		elements = []wasmbin.Element{{Flags: 1, Funcs: []uint32{target}}, declared}
		check = []byte{opI32Const, 0}
		// table.init traps once the segment is dropped.
		change = []byte{opI32Const, 0, opI32Const, 0, opI32Const, 1, opMisc, tableInit, 0, 0, opMisc, elemDrop, 0}
	case "data.drop":
		check = []byte{opI32Const, 0}
		// memory.init traps once the segment is dropped.
		change = []byte{opI32Const, 0x80, 0x10, opI32Const, 0, opI32Const, 1, opMisc, memoryInit, 1, 0, opMisc, dataDrop, 1}
	case "initialized table":
		initialize = []byte{opI32Const, 0, opRefFunc, target, opTableSet, 0}
		check = append(append(slotSet(0), opI32Eqz), append(slotSet(1), 0x72)...) // i32.or
		change = []byte{opI32Const, 1, opRefFunc, target, opTableSet, 0}
	default:
		panic("wasmtest: no state kind " + kind)
	}
	run := append(check, opIf, blockEmpty, opUnreachable, opEnd)
	run = append(run, change...)
	// fd_write(1, the iovec at 0, 1 iovec, the count at 8)
	run = append(run, opI32Const, 1, opI32Const, 0, opI32Const, 1, opI32Const, 8, opCall, 0, opDrop, opEnd)

	msg := `{"summary":"` + FreshSummary + `","data":{},"evidence":[]}`
	image := make([]byte, 16, 16+len(msg))
	image[0] = 16 // the iovec: msg at 16, its length
	image[4] = byte(len(msg))
	image = append(image, msg...)
	dataCount := uint32(2)
	m := &wasmbin.Module{
		Types:    []wasmbin.FuncType{{}, {Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}},
		Imports:  []wasmbin.Import{{Module: wasmbin.WASIModule, Name: "fd_write", Kind: wasmbin.ExternFunc, Type: 1}},
		Funcs:    []uint32{0, 0, 0},
		Tables:   []wasmbin.Table{table},
		Memories: []wasmbin.Resizable{{Min: 1, Max: 2, HasMax: true}},
		Globals:  []wasmbin.Global{{Type: wasmbin.I32, Mutable: true, Init: []byte{opI32Const, 0, opEnd}}},
		Exports: []wasmbin.Export{
			{Name: wasmbin.RunExport, Kind: wasmbin.ExternFunc, Index: 1},
			{Name: "_initialize", Kind: wasmbin.ExternFunc, Index: 3},
		},
		Elements: elements, HasElements: true,
		DataCount: &dataCount,
		Data: []wasmbin.Data{
			{Offset: []byte{opI32Const, 0, opEnd}, Init: image},
			{Passive: true, Init: []byte("x")},
		},
		Code: []wasmbin.Body{{Code: run}, {Code: []byte{opEnd}}, {Code: append(initialize, opEnd)}},
	}
	return m.Encode()
}
