package wasmbin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Preinitialize returns the module rewritten to start in the state an
// instance of it reached after its initialization: memory holds mem (the
// instance's whole linear memory, a whole number of pages) and each mutable
// global the value globals gives it by index. The rewritten module starts
// with that memory as data and those values as the globals' initial values;
// its start function and its _initialize export are gone, since what they
// did is already done. The same inputs give the same bytes.
//
// The module must have passed Check and be Restorable: its tables and
// segments are as the module declares them, so its memory and globals are
// its whole state.
func (m *Module) Preinitialize(mem []byte, globals map[int]uint64) ([]byte, error) {
	if len(mem)%PageBytes != 0 {
		return nil, fmt.Errorf("wasmbin: memory of %d bytes is not a whole number of pages", len(mem))
	}
	if len(m.Memories) != 1 && len(mem) > 0 {
		return nil, errors.New("wasmbin: the module has no memory to hold the image")
	}
	out := *m
	out.customs = nil
	out.Start = nil

	// Memory: the image's size, and its content as active data segments
	// (the module's own active segments are emptied, not removed, so that
	// passive ones keep their indices).
	if len(m.Memories) == 1 {
		mems := append([]Resizable(nil), m.Memories...)
		pages := uint64(len(mem) / PageBytes)
		if mems[0].HasMax && mems[0].Max < pages {
			return nil, fmt.Errorf("wasmbin: memory of %d pages is past the module's maximum of %d", pages, mems[0].Max)
		}
		mems[0].Min = pages
		out.Memories = mems
	}
	out.Data = make([]Data, 0, len(m.Data))
	for _, d := range m.Data {
		if !d.Passive {
			d = Data{Memory: d.Memory, Offset: constI32Expr(0)}
		}
		out.Data = append(out.Data, d)
	}
	out.Data = append(out.Data, imageSegments(mem)...)
	if len(out.Data) > DefaultMaxDataSegments {
		return nil, fmt.Errorf("wasmbin: the image needs %d data segments; at most %d are allowed", len(out.Data), DefaultMaxDataSegments)
	}
	if out.DataCount != nil {
		n := uint32(len(out.Data))
		out.DataCount = &n
	}

	// Globals.
	out.Globals = append([]Global(nil), m.Globals...)
	for i, g := range out.Globals {
		idx := m.importedGlobals + i
		v, ok := globals[idx]
		if !g.Mutable || !ok {
			continue
		}
		init, err := constOf(g.Type, v)
		if err != nil {
			return nil, fmt.Errorf("wasmbin: global %d: %v", idx, err)
		}
		out.Globals[i].Init = init
	}

	// Exports: _initialize has run.
	out.Exports = nil
	for _, e := range m.Exports {
		if e.Name != "_initialize" {
			out.Exports = append(out.Exports, e)
		}
	}
	return out.Encode(), nil
}

// imageSegments returns active data segments that write the non-zero bytes
// of mem at their offsets: runs of non-zero bytes, joined across gaps of
// zeros shorter than a segment's own overhead.
func imageSegments(mem []byte) []Data {
	const joinGap = 32
	var out []Data
	for i := 0; i < len(mem); {
		if mem[i] == 0 {
			i++
			continue
		}
		start, end := i, i
		for j := i; j < len(mem); {
			if mem[j] != 0 {
				end = j + 1
				j++
				continue
			}
			k := j
			for k < len(mem) && mem[k] == 0 && k-j < joinGap {
				k++
			}
			if k == len(mem) || mem[k] == 0 {
				break // a long run of zeros, or the end
			}
			j = k
		}
		out = append(out, Data{Offset: constI32Expr(int32(start)), Init: mem[start:end:end]})
		i = end
	}
	return out
}

// constOf returns the constant expression of a value of a type, as the
// engine holds it in 64 bits.
func constOf(t ValType, v uint64) ([]byte, error) {
	w := &writer{}
	switch t {
	case I32:
		w.byte(byte(opI32Const))
		w.sleb(int64(int32(uint32(v))))
	case I64:
		w.byte(byte(opI64Const))
		w.sleb(int64(v))
	case F32:
		w.byte(byte(opF32Const))
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v))
	case F64:
		w.byte(byte(opF64Const))
		w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(math.Float64frombits(v)))
	default:
		return nil, fmt.Errorf("a mutable global of type 0x%02x cannot be set by a constant", byte(t))
	}
	w.byte(byte(opEnd))
	return w.b, nil
}
