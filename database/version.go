package database

import (
	"encoding/binary"
	"sync"
)

// Version is the committed state of an SQLite database as its write-ahead
// log's index header names it: every transaction that commits, in this
// process or any other, writes a new header, so two equal Versions read at
// two moments mean that nothing was committed between them.
type Version [walHeaderSize]byte

// Version returns the database's Version now. ok is false when it cannot
// be told without asking the database (MySQL, a header being written, the
// index file replaced): the caller then reads the database itself.
//
// A reader that keeps what it read reads the Version first and keeps it
// with the result; the result is still the database's as long as the
// Version read later is the same.
func (db *DB) Version() (v Version, ok bool) {
	if db.wal == nil {
		return v, false
	}
	return db.wal.version()
}

// The header of the write-ahead log's index (the -shm file): two copies of
// 48 bytes, the second written first, then the first; each ends with a
// checksum of its first 40 bytes. Its fields are SQLite's file format
// (https://sqlite.org/walformat.html): the counter of commits at 8, the
// flag that the header is initialized at 12, the last frame, the page
// count, the frames' checksum and the log's salt after it.
const (
	walHeaderSize   = 48
	walChecksummed  = 40
	walIsInitOffset = 12
)

// walIndex reads the header of an SQLite database's write-ahead log index.
type walIndex struct {
	path string

	mu     sync.RWMutex
	fd     int // -1: not open
	closed bool
}

// headerOf returns the header in b (both copies, as read), or false when
// the copies differ, the header is not initialized, or its checksum is
// wrong: a writer was writing it, or there is none yet.
func headerOf(b []byte) (v Version, ok bool) {
	if len(b) < 2*walHeaderSize || b[walIsInitOffset] != 1 {
		return v, false
	}
	first, second := b[:walHeaderSize], b[walHeaderSize:2*walHeaderSize]
	if string(first) != string(second) {
		return v, false
	}
	s1, s2 := walChecksum(first[:walChecksummed])
	if s1 != binary.NativeEndian.Uint32(first[walChecksummed:]) || s2 != binary.NativeEndian.Uint32(first[walChecksummed+4:]) {
		return v, false
	}
	copy(v[:], first)
	return v, true
}

// walChecksum is SQLite's checksum of the header, over its words in the
// machine's byte order (the index is memory shared on one machine, and
// SQLite checksums its header as the machine's words).
func walChecksum(b []byte) (s1, s2 uint32) {
	for i := 0; i+8 <= len(b); i += 8 {
		s1 += binary.NativeEndian.Uint32(b[i:]) + s2
		s2 += binary.NativeEndian.Uint32(b[i+4:]) + s1
	}
	return s1, s2
}
