package kit

import (
	"bytes"
	"encoding/json"
	"runtime"
	"sync"
)

// The JSON codecs of the kit's types are built here, at initialization, so
// that they are part of the state every run starts from, instead of being
// built again by every run.
func init() {
	var req Request
	json.Unmarshal([]byte(`{"arguments":{},"query":"","instance":{},"plugin_storage":{"namespaces":{"n":[{"key":"k","value":{},"revision":1}]}},"fetched":{"f":{"headers":{}}},"carry":{}}`), &req)
	r := Reply("", map[string]any{"a": []any{1.0, "", true, nil, map[string]any{}}})
	r.Do(Create("n", "k", 1), Delete("n", Item{}))
	r.Notify(Notification{Actions: []ActionButton{{Action: Apply()}}})
	r.Cite(Evidence{})
	r.encode()
	Fetching(Get("f", "")).encode()
	// The state every run starts from holds a heap just collected, with
	// free room: a run then allocates up to the collector's goal before it
	// collects, and up to the room before it grows the module's memory.
	sink = make([]byte, headroom)
	sink = nil
	runtime.GC()
	warmSpans()
	readBuffers.Put(readBuffers.Get())
}

// readBuffers gives the buffers requests are read into: 16 KiB, so that
// the usual request is read in one or two calls of the host (each read of
// standard input is one). One is made at initialization, so that the run
// of a module finds it ready; each Serve takes one and keeps it.
var readBuffers = sync.Pool{New: func() any {
	b := new(bytes.Buffer)
	b.Grow(16 << 10)
	return b
}}

// headroom is the free heap the state every run starts from holds. Inside
// a module the heap grows 512 KiB at a time, each time by growing the
// module's memory, which no restore undoes (a memory never shrinks): the
// host then replaces the instance with a new one, which costs several times
// a run. Without room, where initialization's last growth left the heap
// decided which runs did so: the example's notes.summary over 50 notes did
// after some initializations and not after others. With it, a run grows the
// memory only when it allocates more than about a megabyte; the room costs
// nothing until a run uses it (the pages of the image no run writes are
// shared).
const headroom = 1 << 20

// smallest and largest bound the sizes of the objects warmSpans allocates:
// the sizes of nearly every allocation of a run.
const (
	smallest = 8
	largest  = 1 << 10
)

// sink keeps warmSpans's allocations from being optimized away.
var sink any

// warmSpans allocates an object of each small size, with and without
// pointers, once the heap is collected. The collection gave back every
// span the allocator had cached, so without it each run would take a span
// anew for each size it allocates, and clear and set it up, only to have
// it undone by the next run's restore; with it, the state every run
// starts from has a span ready for each. A run of the example's
// notes.summary over 10 notes then writes 75 pages of memory instead of
// 107, and takes about 200 µs instead of 270.
func warmSpans() {
	for size := smallest; size <= largest; size += 8 {
		sink = make([]byte, size)
		sink = make([]*byte, size/8)
	}
	sink = nil
}
