package wasmbin

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// reader reads the binary format. The first error sticks: every later read
// returns a zero value, so that a caller checks err once after a sequence.
type reader struct {
	b   []byte
	off int // offset of b[0] in the module, for messages
	err error
}

var errTruncated = errors.New("unexpected end")

func (r *reader) done() bool { return r.err == nil && len(r.b) == 0 }

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) failf(format string, args ...any) { r.fail(fmt.Errorf(format, args...)) }

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	r.off++
	return c
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail(errTruncated)
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	r.off += int(n)
	return b
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift+7 > bits && uint64(c&0x7f)>>(bits-shift) != 0 {
			r.fail(errors.New("integer too large"))
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
		if shift+7 >= bits {
			r.fail(errors.New("integer representation too long"))
			return 0
		}
	}
}

// sleb reads a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits uint) int64 {
	var v int64
	var shift uint
	for {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
		if shift >= bits+7 {
			r.fail(errors.New("integer representation too long"))
			return 0
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// count reads a vector length and refuses one above max, or one that could
// not fit in what is left (each element takes at least minBytes), before
// anything is allocated for it.
func (r *reader) count(what string, max int, minBytes int) int {
	n := r.u32()
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(max) {
		r.fail(&LimitError{Limit: what, Max: int64(max), Got: int64(n)})
		return 0
	}
	if minBytes > 0 && uint64(n)*uint64(minBytes) > uint64(len(r.b)) {
		r.fail(errTruncated)
		return 0
	}
	return int(n)
}

func (r *reader) name() string {
	n := r.u32()
	b := r.bytes(uint64(n))
	if r.err == nil && !utf8.Valid(b) {
		r.fail(errors.New("a name is not UTF-8"))
	}
	return string(b)
}

func (r *reader) valType() ValType {
	t := ValType(r.byte())
	if r.err == nil && !t.valid() {
		r.failf("unknown value type 0x%02x", byte(t))
	}
	return t
}

func (r *reader) refType() ValType {
	t := ValType(r.byte())
	if r.err == nil && t != FuncRef && t != ExternRef {
		r.failf("unknown reference type 0x%02x", byte(t))
	}
	return t
}

// resizable reads limits: a minimum and an optional maximum. Flags other than
// "has maximum" (shared memory, 64-bit memory) are refused: the host enables
// neither threads nor memory64.
func (r *reader) resizable(bits uint) Resizable {
	flags := r.byte()
	if r.err != nil {
		return Resizable{}
	}
	if flags > 1 {
		r.failf("limits flags 0x%02x (shared or 64-bit memories and tables are not supported)", flags)
		return Resizable{}
	}
	l := Resizable{Min: r.uleb(bits)}
	if flags == 1 {
		l.Max, l.HasMax = r.uleb(bits), true
		if r.err == nil && l.Max < l.Min {
			r.fail(errors.New("limits: the maximum is below the minimum"))
		}
	}
	return l
}
