package wasmbin

// Go compiles every function to WebAssembly as one dispatch loop: a loop,
// then blocks, then a br_table on a local that selects the block whose end
// the code resumes after, and a jump from one block of the function to
// another, forward or back, is the local set to a constant and a branch to
// the loop. A loop's fuel counted at its start is then counted at nearly
// every branch of the function, most of them forward.
//
// Only a jump back can close a cycle. In a dispatch loop the instrumentation
// counts fuel at the branches to the loop instead of at its start, and
// leaves out the branches whose target it knows lies ahead: a br right after
// the selector was set to a constant, to a block whose end comes after the
// branch. Between two counts a run then only moves forward through the
// function's instructions, or calls (counted on entry), so the work between
// two counts stays bounded by the function's length.

// dispatch is what the instrumentation knows of a dispatch loop.
type dispatch struct {
	selector uint32 // the local the br_table reads
	// targets holds, for each value of the selector the br_table lists,
	// the index of the instruction (a block's end) after which the code
	// resumes, or -1 when the target is not a block of the dispatch;
	// fallback is the same for every other value.
	targets  []int
	fallback int
}

// target returns the index of the instruction after which a branch to the
// loop with the selector at k resumes, or -1 when unknown.
func (d *dispatch) target(k int64) int {
	if k >= 0 && k < int64(len(d.targets)) {
		return d.targets[k]
	}
	return d.fallback
}

// located is an instruction with where it lies in its body.
type located struct {
	in         instr
	start, end int
}

// bodyScratch holds what dispatchLoops works with, kept from one body to
// the next of a module.
type bodyScratch struct {
	ins   []located
	ends  []int // the index of the end of each block, loop and if, by its own
	open  []int
	loops map[int]*dispatch
}

// dispatchLoops decodes a body's instructions and finds its dispatch loops:
// a loop without parameters or results, followed by one or more blocks
// without either, then local.get and br_table. It returns the
// instructions, and the dispatch of each such loop by its index among
// them; both live in s until its next use.
func dispatchLoops(b Body, s *bodyScratch) ([]located, map[int]*dispatch, error) {
	ins := s.ins[:0]
	err := walk(b, func(in instr, _ int, start, end int) error {
		ins = append(ins, located{in, start, end})
		return nil
	})
	s.ins = ins
	if err != nil {
		return nil, nil, err
	}
	if s.loops == nil {
		s.loops = map[int]*dispatch{}
	}
	clear(s.loops)
	ends := s.ends[:0]
	open := s.open[:0]
	hasLoop := false
	for i, l := range ins {
		ends = append(ends, -1)
		switch l.in.op {
		case opLoop:
			hasLoop = true
			open = append(open, i)
		case opBlock, opIf:
			open = append(open, i)
		case opEnd:
			if len(open) > 0 {
				ends[open[len(open)-1]] = i
				open = open[:len(open)-1]
			}
		}
	}
	s.ends, s.open = ends, open
	if !hasLoop {
		return ins, s.loops, nil
	}
	for i, l := range ins {
		if l.in.op != opLoop || l.in.block != blockEmpty {
			continue
		}
		n := 0
		for i+1+n < len(ins) && ins[i+1+n].in.op == opBlock && ins[i+1+n].in.block == blockEmpty {
			n++
		}
		get, table := i+1+n, i+2+n
		if n == 0 || table >= len(ins) || ins[get].in.op != opLocalGet || ins[table].in.op != opBrTable {
			continue
		}
		// Depth j of the br_table names the block opened at i+n-j.
		end := func(depth uint32) int {
			if int(depth) >= n {
				return -1 // the loop itself, or outside it
			}
			return ends[i+n-int(depth)]
		}
		r := brTable(b.Code, ins[table])
		d := &dispatch{selector: ins[get].in.imm, targets: make([]int, ins[table].in.imm)}
		for k := range d.targets {
			d.targets[k] = end(r.u32())
		}
		d.fallback = end(r.u32())
		if r.err != nil {
			continue
		}
		s.loops[i] = d
	}
	return ins, s.loops, nil
}

// brTable returns a reader at the labels of a br_table: its targets, then
// its default.
func brTable(code []byte, l located) *reader {
	r := &reader{b: code[l.start+1 : l.end]}
	r.u32() // how many targets
	return r
}

// i32Const returns the value of an i32.const.
func i32Const(code []byte, l located) (int64, bool) {
	if l.in.op != opI32Const {
		return 0, false
	}
	r := &reader{b: code[l.start+1 : l.end]}
	v := r.sleb(32)
	return v, r.err == nil
}
