package wasmtest

import "pluginhost/wasmbin"

// HostCallKinds names the calls of WASI whose cost grows with an operand,
// which HostCallLoop repeats.
var HostCallKinds = []string{"random_get", "fd_write", "poll_oneoff"}

// HostCallLoop is a command with memoryBytes of memory that repeats one
// call of WASI (HostCallKinds) forever, each time as large as its memory
// allows: random_get over the whole memory, or fd_write to standard error
// of an iovec for every 8 bytes of the memory (each of nothing: the memory
// is zeros), or poll_oneoff of as many subscriptions (each a clock's
// timeout of nothing) and their events as the memory holds.
func HostCallLoop(kind string, memoryBytes int64) []byte {
	i32 := func(v int64) []byte { return sleb([]byte{opI32Const}, v) }
	var typ wasmbin.FuncType
	var call []byte
	switch kind {
	case "random_get":
		typ = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
		call = cat(i32(0), i32(memoryBytes))
	case "fd_write":
		typ = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
		call = cat(i32(2), i32(0), i32((memoryBytes-8)/8), i32(memoryBytes-8))
	case "poll_oneoff":
		typ = wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
		const subscription, event = 48, 32
		n := (memoryBytes - 8) / (subscription + event)
		call = cat(i32(0), i32(n*subscription), i32(n), i32(memoryBytes-8))
	default:
		panic("wasmtest: no host call kind " + kind)
	}
	body := cat([]byte{opLoop, blockEmpty}, call, []byte{opCall, 0, opDrop, opBr, 0, opEnd, opEnd})
	m := &wasmbin.Module{
		Types:    []wasmbin.FuncType{{}, typ},
		Imports:  []wasmbin.Import{{Module: wasmbin.WASIModule, Name: kind, Kind: wasmbin.ExternFunc, Type: 1}},
		Funcs:    []uint32{0},
		Memories: []wasmbin.Resizable{{Min: uint64(memoryBytes / wasmbin.PageBytes)}},
		Exports:  []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 1}},
		Code:     []wasmbin.Body{{Code: body}},
	}
	return m.Encode()
}
