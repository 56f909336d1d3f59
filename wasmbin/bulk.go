package wasmbin

// A memory.fill or memory.copy runs, in the engine, as one operation the
// host cannot stop: one of 64 MiB takes milliseconds, and tens of them
// when many runs share the processors, long past a run's wall time. The
// instrumented module calls a function of its own instead, which does the
// same in chunks of bulkChunk bytes, charging each chunk's fuel before it,
// so that the host looks at the time between two chunks. The function
// checks the bounds first, as the instruction does, so that an operation
// out of bounds traps before it writes anything; a copy between
// overlapping ranges goes the way the instruction's result needs (upward
// when the destination is below the source, downward otherwise).

// bulkChunk is the most bytes a chunked fill or copy moves at once: about
// a tenth of a millisecond of work.
const bulkChunk = 1 << 20

// chunkedFill is the body of fill(d, v, n), which does memory.fill(d, v, n)
// in chunks.
func (g guard) chunkedFill() []byte {
	const d, v, n = 0, 1, 2
	w := &writer{}
	op := func(dst, length func()) { // memory.fill(dst, v, length)
		dst()
		w.localGet(v)
		length()
		w.byte(0xfc)
		w.u32(11)
		w.byte(0)
	}
	g.outOfBounds(w, d, n, func() { op(func() { w.localGet(d) }, func() { w.localGet(n) }) })
	g.chunks(w, n, func() {
		op(func() { w.localGet(d) }, func() { w.i32Const(bulkChunk) })
		w.advance(d, bulkChunk)
	})
	op(func() { w.localGet(d) }, func() { w.localGet(n) })
	w.byte(byte(opEnd))
	return w.b
}

// chunkedCopy is the body of copy(d, s, n), which does memory.copy(d, s, n)
// in chunks.
func (g guard) chunkedCopy() []byte {
	const d, s, n = 0, 1, 2
	w := &writer{}
	op := func(dst, src, length func()) { // memory.copy(dst, src, length)
		dst()
		src()
		length()
		w.byte(0xfc)
		w.u32(10)
		w.byte(0)
		w.byte(0)
	}
	whole := func() { op(func() { w.localGet(d) }, func() { w.localGet(s) }, func() { w.localGet(n) }) }
	g.outOfBounds(w, d, n, whole)
	g.outOfBounds(w, s, n, whole)
	// if d <= s: upward, from the start
	w.localGet(d)
	w.localGet(s)
	w.byte(byte(opI32LeU))
	w.byte(byte(opIf))
	w.byte(0x40)
	g.chunks(w, n, func() {
		op(func() { w.localGet(d) }, func() { w.localGet(s) }, func() { w.i32Const(bulkChunk) })
		w.advance(d, bulkChunk)
		w.advance(s, bulkChunk)
	})
	w.byte(byte(opElse))
	// else: downward, from the end (n is taken off before each chunk)
	g.chunks(w, n, func() {
		at := func(base uint32) func() { // base + n - bulkChunk
			return func() {
				w.localGet(base)
				w.localGet(n)
				w.byte(byte(opI32Add))
				w.i32Const(-bulkChunk)
				w.byte(byte(opI32Add))
			}
		}
		op(at(d), at(s), func() { w.i32Const(bulkChunk) })
	})
	w.byte(byte(opEnd))
	whole()
	w.byte(byte(opEnd))
	return w.b
}

// outOfBounds writes: if at + n passes the memory's end, do whole (which
// traps) and return.
func (g guard) outOfBounds(w *writer, at, n uint32, whole func()) {
	w.localGet(at)
	w.byte(byte(opI64ExtendU))
	w.localGet(n)
	w.byte(byte(opI64ExtendU))
	w.byte(byte(opI64Add))
	w.byte(byte(opMemorySize))
	w.byte(0)
	w.byte(byte(opI64ExtendU))
	w.byte(byte(opI64Const))
	w.sleb(16)
	w.byte(byte(opI64Shl))
	w.byte(byte(opI64GtU))
	w.byte(byte(opIf))
	w.byte(0x40)
	whole()
	w.byte(byte(opReturn))
	w.byte(byte(opEnd))
}

// chunks writes: while n > bulkChunk { charge bulkChunk; chunk(); n -=
// bulkChunk }; charge n. What is left (at most bulkChunk bytes) is the
// caller's to do.
func (g guard) chunks(w *writer, n uint32, chunk func()) {
	w.byte(byte(opBlock))
	w.byte(0x40)
	w.byte(byte(opLoop))
	w.byte(0x40)
	w.localGet(n)
	w.i32Const(bulkChunk)
	w.byte(byte(opI32LeU))
	w.byte(byte(opBrIf))
	w.u32(1)
	g.spend(w, func() { w.i32Const(bulkChunk) }, memoryFuelShift)
	chunk()
	w.advance(n, -bulkChunk)
	w.byte(byte(opBr))
	w.u32(0)
	w.byte(byte(opEnd))
	w.byte(byte(opEnd))
	g.spend(w, func() { w.localGet(n) }, memoryFuelShift)
}

func (w *writer) localGet(i uint32) {
	w.byte(byte(opLocalGet))
	w.u32(i)
}

func (w *writer) i32Const(v int32) {
	w.byte(byte(opI32Const))
	w.sleb(int64(v))
}

// advance writes: local i += by.
func (w *writer) advance(i uint32, by int32) {
	w.localGet(i)
	w.i32Const(by)
	w.byte(byte(opI32Add))
	w.byte(byte(opLocalSet))
	w.u32(i)
}
