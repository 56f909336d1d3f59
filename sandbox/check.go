package sandbox

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Check reports whether wasm has the shape of a module the host can run: at
// most MaxModuleBytes, the WebAssembly binary format (version 1) with well
// formed sections, a WASI preview 1 command (it exports the function _start)
// that imports nothing but WASI preview 1. It reads the module's structure
// only, in a few milliseconds, so that install and `pluginhost validate` stay
// fast; the engine validates the code itself when it compiles the module
// (Engine.Compile), which takes seconds for a Go-built module.
func Check(wasm []byte) error {
	if len(wasm) > MaxModuleBytes {
		return fmt.Errorf("the module has %d bytes; at most %d are allowed", len(wasm), MaxModuleBytes)
	}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return errors.New("not a WebAssembly module: it does not start with \\0asm")
	}
	if string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return errors.New("not a WebAssembly module of binary format version 1")
	}
	r := &wasmReader{b: wasm[8:]}
	seen := map[byte]bool{}
	start := false
	for !r.done() {
		id := r.byte()
		size := r.u32()
		body := r.bytes(size)
		if r.err != nil {
			return fmt.Errorf("not a valid WebAssembly module: section %d: %v", id, r.err)
		}
		if id > 13 {
			return fmt.Errorf("not a valid WebAssembly module: unknown section id %d", id)
		}
		if id != 0 && seen[id] {
			return fmt.Errorf("not a valid WebAssembly module: section %d appears twice", id)
		}
		seen[id] = true
		s := &wasmReader{b: body}
		switch id {
		case 0: // custom: a name, then anything
			s.name()
		case 2: // imports
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				mod, field := s.name(), s.name()
				if s.err == nil && mod != wasi_snapshot_preview1.ModuleName {
					return fmt.Errorf("the module imports %s.%s; only %s is provided", mod, field, wasi_snapshot_preview1.ModuleName)
				}
				switch kind := s.byte(); kind {
				case 0: // function
					s.u32()
				case 1: // table
					s.byte()
					s.limits()
				case 2: // memory
					s.limits()
				case 3: // global
					s.byte()
					s.byte()
				case 4: // tag
					s.byte()
					s.u32()
				default:
					return fmt.Errorf("not a valid WebAssembly module: import of unknown kind %d", kind)
				}
			}
		case 7: // exports
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				name, kind := s.name(), s.byte()
				s.u32()
				if name == "_start" && kind == 0 {
					start = true
				}
			}
		}
		if s.err != nil {
			return fmt.Errorf("not a valid WebAssembly module: section %d: %v", id, s.err)
		}
	}
	if !start {
		return errors.New("the module does not export _start: it must be a WASI preview 1 command module (GOOS=wasip1 GOARCH=wasm go build)")
	}
	return nil
}

// wasmReader reads the binary format; the first error sticks.
type wasmReader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (r *wasmReader) done() bool { return r.err == nil && len(r.b) == 0 }

func (r *wasmReader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// u32 reads an unsigned LEB128 of at most 32 bits.
func (r *wasmReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("integer too long"))
	return 0
}

func (r *wasmReader) bytes(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.fail(errTruncated)
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

func (r *wasmReader) name() string {
	b := r.bytes(r.u32())
	if r.err == nil && !utf8.Valid(b) {
		r.fail(errors.New("a name is not UTF-8"))
	}
	return string(b)
}

func (r *wasmReader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

func (r *wasmReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
