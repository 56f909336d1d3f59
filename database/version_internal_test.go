package database

import (
	"encoding/binary"
	"testing"
)

// A header is told only when it is whole: both copies the same, marked
// initialized, and its checksum right; a header caught while a writer
// writes it, or never written, tells nothing.
func TestHeaderOf(t *testing.T) {
	header := func() []byte {
		h := make([]byte, walHeaderSize)
		binary.NativeEndian.PutUint32(h[0:], 3007000)   // the index's format
		binary.NativeEndian.PutUint32(h[8:], 41)        // commits
		h[walIsInitOffset] = 1                          // initialized
		binary.NativeEndian.PutUint32(h[16:], 7)        // the last frame
		binary.NativeEndian.PutUint32(h[32:], 0xfeed01) // the salt
		s1, s2 := walChecksum(h[:walChecksummed])
		binary.NativeEndian.PutUint32(h[walChecksummed:], s1)
		binary.NativeEndian.PutUint32(h[walChecksummed+4:], s2)
		return append(h, h...)
	}
	for _, tt := range []struct {
		name string
		edit func([]byte) []byte
		ok   bool
	}{
		{"whole", func(b []byte) []byte { return b }, true},
		{"the first copy half written", func(b []byte) []byte { b[8]++; return b }, false},
		{"the second copy not yet written", func(b []byte) []byte { b[walHeaderSize+16]++; return b }, false},
		{"both copies with a wrong checksum", func(b []byte) []byte { b[16]++; b[walHeaderSize+16]++; return b }, false},
		{"not initialized", func(b []byte) []byte { b[walIsInitOffset], b[walHeaderSize+walIsInitOffset] = 0, 0; return b }, false},
		{"short", func(b []byte) []byte { return b[:2*walHeaderSize-1] }, false},
		{"empty", func([]byte) []byte { return nil }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.edit(header())
			v, ok := headerOf(b)
			if ok != tt.ok {
				t.Fatalf("told: %v, want %v", ok, tt.ok)
			}
			if ok && string(v[:]) != string(b[:walHeaderSize]) {
				t.Fatal("the Version is not the header")
			}
		})
	}
}
