package wasmtest

import (
	"encoding/binary"

	"pluginhost/wasmbin"
)

// Subscription is one subscription of PollOnce: a clock's timeout in
// nanoseconds (Flags 1: an absolute time), or, when Kind is 1 (read) or 2
// (write), a standard stream FD.
type Subscription struct {
	Kind    byte
	Timeout uint64
	Flags   uint16
	FD      uint32
}

// PollOnce is a command that calls poll_oneoff once with subs and exits
// with 10000 + 100 × the call's errno + the number of events it wrote.
func PollOnce(subs []Subscription) []byte {
	const opI32Load, opI32Mul = 0x28, 0x6c
	i32 := func(v int64) []byte { return sleb([]byte{opI32Const}, v) }
	var data []byte
	for _, s := range subs {
		sub := make([]byte, 48)
		sub[8] = s.Kind
		if s.Kind == 0 {
			binary.LittleEndian.PutUint64(sub[24:], s.Timeout)
			binary.LittleEndian.PutUint16(sub[40:], s.Flags)
		} else {
			binary.LittleEndian.PutUint32(sub[16:], s.FD)
		}
		data = append(data, sub...)
	}
	n := int64(len(subs))
	nevents := n * 80
	body := cat(i32(10000),
		i32(0), i32(n*48), i32(n), i32(nevents), []byte{opCall, 0},
		i32(100), []byte{opI32Mul, opI32Add},
		i32(nevents), []byte{opI32Load, 2, 0, opI32Add},
		[]byte{opCall, 1, opEnd})
	poll := wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32, wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}
	exit := wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}}
	m := &wasmbin.Module{
		Types: []wasmbin.FuncType{{}, poll, exit},
		Imports: []wasmbin.Import{
			{Module: wasmbin.WASIModule, Name: "poll_oneoff", Kind: wasmbin.ExternFunc, Type: 1},
			{Module: wasmbin.WASIModule, Name: "proc_exit", Kind: wasmbin.ExternFunc, Type: 2},
		},
		Funcs:    []uint32{0},
		Memories: []wasmbin.Resizable{{Min: 1}},
		Exports:  []wasmbin.Export{{Name: "_start", Kind: wasmbin.ExternFunc, Index: 2}},
		Code:     []wasmbin.Body{{Code: body}},
		Data:     []wasmbin.Data{{Offset: cat(i32(0), []byte{opEnd}), Init: data}},
	}
	return m.Encode()
}
