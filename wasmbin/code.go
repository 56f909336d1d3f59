package wasmbin

import "fmt"

// op is an opcode: the byte of a one-byte opcode, or the prefix byte shifted
// left 16 bits with the sub-opcode for prefixed ones (0xFC, 0xFD).
type op uint32

const (
	opUnreachable  op = 0x00
	opNop          op = 0x01
	opBlock        op = 0x02
	opLoop         op = 0x03
	opIf           op = 0x04
	opElse         op = 0x05
	opEnd          op = 0x0b
	opBr           op = 0x0c
	opBrIf         op = 0x0d
	opBrTable      op = 0x0e
	opReturn       op = 0x0f
	opCall         op = 0x10
	opCallIndirect op = 0x11
	opDrop         op = 0x1a
	opLocalGet     op = 0x20
	opLocalSet     op = 0x21
	opLocalTee     op = 0x22
	opGlobalGet    op = 0x23
	opGlobalSet    op = 0x24
	opTableSet     op = 0x26
	opI32Load      op = 0x28 // the first of the loads and stores
	opMemorySize   op = 0x3f
	opMemoryGrow   op = 0x40
	opI32Const     op = 0x41
	opI64Const     op = 0x42
	opF32Const     op = 0x43
	opF64Const     op = 0x44
	opI32Eqz       op = 0x45
	opI32LeS       op = 0x4c
	opI32GtU       op = 0x4b
	opI32LeU       op = 0x4d
	opI64GtU       op = 0x56
	opI32Add       op = 0x6a
	opI32Sub       op = 0x6b
	opI32Mul       op = 0x6c
	opI32ShrU      op = 0x76
	opI64Add       op = 0x7c
	opI64Sub       op = 0x7d
	opI64Mul       op = 0x7e
	opI64Shl       op = 0x86
	opI64ExtendU   op = 0xad
	opLastNumeric  op = 0xc4 // i64.extend32_s
	opRefNull      op = 0xd0
	opRefFunc      op = 0xd2
)

func misc(sub uint32) op { return op(0xfc<<16 | sub) }
func simd(sub uint32) op { return op(0xfd<<16 | sub) }

// Bulk operations, and those that change a module instance's state other
// than its memory and globals: tables, and dropped segments.
var (
	opMemoryInit = misc(8)
	opDataDrop   = misc(9)
	opMemoryCopy = misc(10)
	opMemoryFill = misc(11)
	opTableInit  = misc(12)
	opElemDrop   = misc(13)
	opTableCopy  = misc(14)
	opTableGrow  = misc(15)
	opTableFill  = misc(17)
)

// bulkShift returns, for an instruction whose cost grows with its length
// operand (the top of the stack: bytes of memory, or elements of a table),
// how far that length is shifted right to give its fuel; ok is false for
// every other instruction, and for memory.fill and memory.copy, which the
// instrumentation does in chunks that charge their own fuel (bulk.go).
func bulkShift(o op) (shift int, ok bool) {
	switch o {
	case opMemoryInit:
		return memoryFuelShift, true
	case opTableInit, opTableCopy, opTableFill, opTableGrow:
		return tableFuelShift, true
	}
	return 0, false
}

func (o op) String() string {
	switch o >> 16 {
	case 0xfc:
		return fmt.Sprintf("0xfc %d", uint32(o&0xffff))
	case 0xfd:
		return fmt.Sprintf("0xfd %d", uint32(o&0xffff))
	}
	return fmt.Sprintf("0x%02x", uint32(o))
}

// instr is one decoded instruction.
type instr struct {
	op op
	// imm is the first integer immediate: a branch depth, a function, global
	// or table index; for br_table, the number of targets.
	imm uint32
	// block is the block type of block, loop and if: blockEmpty,
	// blockValue, or a type index.
	block int64
}

// Block types other than a type index.
const (
	blockEmpty int64 = -1
	blockValue int64 = -2
)

// readInstr decodes one instruction and skips its immediates. Opcodes of
// proposals the host does not enable (threads, exceptions, tail calls,
// relaxed SIMD, multiple memories) are errors.
func readInstr(r *reader) instr {
	b := r.byte()
	if r.err != nil {
		return instr{}
	}
	in := instr{op: op(b)}
	switch {
	case b <= 0x01, b == 0x05, b == 0x0b, b == 0x0f, b == 0x1a, b == 0x1b, b == 0xd1, b >= 0x45 && b <= 0xc4:
		// no immediates
	case b >= 0x02 && b <= 0x04: // block, loop, if: a block type
		in.block = blockType(r)
	case b == 0x0c, b == 0x0d, b == 0x10, b >= 0x20 && b <= 0x26, b == 0xd2:
		in.imm = r.u32()
	case b == 0x0e: // br_table: targets and a default
		n := r.u32()
		if r.err == nil && uint64(n) > uint64(len(r.b)) {
			r.fail(errTruncated)
			return in
		}
		in.imm = n
		for range n {
			r.u32()
		}
		r.u32()
	case b == 0x11: // call_indirect: type, table
		in.imm = r.u32()
		r.u32()
	case b == 0x1c: // select with types
		n := r.u32()
		if r.err == nil && uint64(n) > uint64(len(r.b)) {
			r.fail(errTruncated)
			return in
		}
		for range n {
			r.valType()
		}
	case b >= 0x28 && b <= 0x3e: // loads and stores
		memArg(r)
	case b == 0x3f, b == 0x40: // memory.size, memory.grow
		memIndex(r)
	case b == 0x41:
		r.sleb(32)
	case b == 0x42:
		r.sleb(64)
	case b == 0x43:
		r.bytes(4)
	case b == 0x44:
		r.bytes(8)
	case b == 0xd0:
		r.refType()
	case b == 0xfc:
		sub := r.u32()
		in.op = misc(sub)
		switch {
		case sub <= 7: // saturating truncations
		case sub == 8: // memory.init: segment, memory
			in.imm = r.u32()
			memIndex(r)
		case sub == 9, sub == 13: // data.drop, elem.drop
			in.imm = r.u32()
		case sub == 10: // memory.copy
			memIndex(r)
			memIndex(r)
		case sub == 11: // memory.fill
			memIndex(r)
		case sub == 12, sub == 14: // table.init, table.copy
			in.imm = r.u32()
			r.u32()
		case sub >= 15 && sub <= 17: // table.grow, table.size, table.fill
			in.imm = r.u32()
		default:
			r.failf("unknown opcode 0xfc %d", sub)
		}
	case b == 0xfd:
		sub := r.u32()
		in.op = simd(sub)
		switch {
		case sub <= 11, sub == 92, sub == 93: // loads and stores
			memArg(r)
		case sub == 12, sub == 13: // v128.const, i8x16.shuffle
			r.bytes(16)
		case sub >= 21 && sub <= 34: // lane extraction and replacement
			r.byte()
		case sub >= 84 && sub <= 91: // lane loads and stores
			memArg(r)
			r.byte()
		case sub <= 255:
			// no immediates
		default:
			r.failf("opcode 0xfd %d (relaxed SIMD) is not supported", sub)
		}
	case b == 0x12, b == 0x13:
		r.fail(fmt.Errorf("opcode 0x%02x (tail calls) is not supported", b))
	case b >= 0x06 && b <= 0x09, b == 0x18, b == 0x19, b == 0x1f:
		r.fail(fmt.Errorf("opcode 0x%02x (exception handling) is not supported", b))
	case b == 0xfe:
		r.fail(fmt.Errorf("opcode 0xfe (threads) is not supported"))
	default:
		r.failf("unknown opcode 0x%02x", b)
	}
	return in
}

// blockType reads a block type: empty, one value type, or a type index.
func blockType(r *reader) int64 {
	if len(r.b) > 0 {
		if c := r.b[0]; c == 0x40 || ValType(c).valid() {
			r.byte()
			if c == 0x40 {
				return blockEmpty
			}
			return blockValue
		}
	}
	v := r.sleb(33)
	if r.err == nil && v < 0 {
		r.failf("block type %d", v)
	}
	return v
}

func memArg(r *reader) {
	if align := r.u32(); r.err == nil && align >= 64 {
		r.fail(fmt.Errorf("memory argument with alignment flags %d (multiple memories are not supported)", align))
	}
	r.u32()
}

func memIndex(r *reader) {
	if i := r.u32(); r.err == nil && i != 0 {
		r.failf("memory index %d (multiple memories are not supported)", i)
	}
}

// FuncStats is what the host measures of one function body.
type FuncStats struct {
	// Nesting is the deepest nesting of blocks, loops and ifs; Blocks how
	// many there are.
	Nesting, Blocks int
	// Height is the most operands the function can hold on its stack.
	Height int
	// Bulk is how many instructions charged by their length (bulkShift)
	// the function has.
	Bulk int
}

// walk decodes a body's instructions, calling fn with each and the nesting
// depth it is at (0 for the function's own block), and checks that blocks
// are balanced and that the body ends with the function's end.
func walk(b Body, fn func(in instr, depth int, start, end int) error) error {
	r := &reader{b: b.Code, off: b.off}
	depth := 0
	pos := 0
	for {
		if r.done() {
			return fmt.Errorf("the body does not end with end")
		}
		in := readInstr(r)
		if r.err != nil {
			return r.err
		}
		end := len(b.Code) - len(r.b)
		d := depth
		switch in.op {
		case opBlock, opLoop, opIf:
			depth++
		case opEnd:
			depth--
			d = depth
		case opElse:
			if depth == 0 {
				return fmt.Errorf("else outside of an if")
			}
			d = depth - 1
		}
		if err := fn(in, d, pos, end); err != nil {
			return err
		}
		pos = end
		if depth < 0 {
			if !r.done() {
				return fmt.Errorf("instructions after the function's end")
			}
			return nil
		}
	}
}

// effect returns how many operands an instruction pops and pushes, for the
// instructions whose effect does not depend on types; calls and blocks are
// the caller's. SIMD instructions not listed pop at least one operand and
// push at most one, so 1, 1 is an upper bound of the height they leave.
func effect(o op) (pop, push int) {
	b := uint32(o)
	switch {
	case b == 0x45, b == 0x50, b >= 0x67 && b <= 0x69, b >= 0x79 && b <= 0x7b, b >= 0x8b && b <= 0x91,
		b >= 0x99 && b <= 0x9f, b >= 0xa7 && b <= 0xc4, b >= 0x28 && b <= 0x35, b == 0x40, b == 0x22, b == 0x25, b == 0xd1:
		return 1, 1 // unary, conversions, loads, memory.grow, local.tee, table.get, ref.is_null
	case b >= 0x46 && b <= 0x4f, b >= 0x51 && b <= 0x66, b >= 0x6a && b <= 0x78, b >= 0x7c && b <= 0x8a,
		b >= 0x92 && b <= 0x98, b >= 0xa0 && b <= 0xa6:
		return 2, 1 // comparisons, binary
	case b >= 0x36 && b <= 0x3e, b == 0x26:
		return 2, 0 // stores, table.set
	case b >= 0x41 && b <= 0x44, b == 0x20, b == 0x23, b == 0x3f, b == 0xd0, b == 0xd2:
		return 0, 1 // constants, local.get, global.get, memory.size, ref.null, ref.func
	case b == 0x21, b == 0x24, b == 0x1a, b == 0x0d, b == 0x0e:
		return 1, 0 // local.set, global.set, drop, br_if, br_table
	case b == 0x1b, b == 0x1c:
		return 3, 1 // select
	}
	switch o {
	case misc(8), misc(10), misc(11), misc(12), misc(14), misc(17):
		return 3, 0 // memory.init, memory.copy, memory.fill, table.init, table.copy, table.fill
	case misc(15):
		return 2, 1 // table.grow
	case misc(16):
		return 0, 1 // table.size
	case misc(9), misc(13):
		return 0, 0 // data.drop, elem.drop
	case simd(12):
		return 0, 1 // v128.const
	case simd(11), simd(88), simd(89), simd(90), simd(91):
		return 2, 0 // stores
	}
	if o>>16 == 0xfc || o>>16 == 0xfd {
		return 1, 1
	}
	return 0, 0
}
