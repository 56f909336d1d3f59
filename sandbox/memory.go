package sandbox

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// budget is the memory of all runs at once (Limits.TotalMemoryBytes): each
// run charges what it holds, as it takes it, and gives it back at its end.
type budget struct {
	limit int64
	used  atomic.Int64
	// reclaim, when set, frees at least n bytes if it can (by closing
	// instances kept ready) and reports whether it freed any.
	reclaim func(n int64) bool
}

// take charges n bytes, or reports false, charging nothing, when they would
// pass the limit even after reclaim.
func (b *budget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			if b.reclaim != nil && b.reclaim(used+n-b.limit) {
				continue
			}
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// Used returns the bytes charged now.
func (b *budget) Used() int64 { return b.used.Load() }

// linearMemory backs one instance's linear memory with pages mapped outside
// the Go heap, reserved up to the run's limit at once so that the memory never
// moves, and filled only as the module touches them. It refuses to grow past
// the run's limit (and remembers that it did, for the run's reason) and
// charges every growth to the budget of all runs.
type linearMemory struct {
	limit  uint64
	budget *budget

	mu       sync.Mutex
	region   []byte // the whole reservation
	size     uint64 // the module's view: region[:size]
	charged  uint64
	inUse    bool        // code is running on it: Free waits for done
	freeing  bool        // Free came while in use
	exceeded atomic.Bool // past the run's limit
	starved  atomic.Bool // past the budget of all runs
}

// memoryAllocator makes the linear memories of one instance; it keeps the
// last, so that the run can tell why a growth failed and free it.
type memoryAllocator struct {
	limit  uint64
	budget *budget
	mem    *linearMemory
}

func (a *memoryAllocator) Allocate(_, max uint64) experimental.LinearMemory {
	m := &linearMemory{limit: min(max, a.limit), budget: a.budget}
	m.region = reserve(m.limit)
	a.mem = m
	return m
}

func (m *linearMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.limit || size > uint64(len(m.region)) {
		m.exceeded.Store(true)
		return nil
	}
	if size > m.charged {
		if !m.budget.take(int64(size - m.charged)) {
			m.starved.Store(true)
			return nil
		}
		m.charged = size
	}
	m.size = size
	return m.region[:size:size]
}

// Free unmaps the memory and gives its charge back. The engine frees a
// module's memory when it closes the module, which it does from another
// goroutine when a run's time is up, while the run's code may still touch
// the memory until it notices: then the memory is unmapped when the code is
// done (use).
func (m *linearMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inUse {
		m.freeing = true
		return
	}
	m.freeLocked()
}

func (m *linearMemory) freeLocked() {
	if m.region != nil {
		release(m.region)
		m.region = nil
	}
	m.budget.give(int64(m.charged))
	m.charged, m.size = 0, 0
}

// use marks the memory as in use by running code, and returns the function
// that marks the end of that use (freeing the memory if Free came since).
func (m *linearMemory) use() (done func()) {
	m.mu.Lock()
	m.inUse = true
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		m.inUse = false
		if m.freeing {
			m.freeLocked()
		}
		m.mu.Unlock()
	}
}

// charge returns the bytes the memory holds of the budget.
func (m *linearMemory) chargeNow() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(m.charged)
}

// bytes returns the memory as the module sees it.
func (m *linearMemory) bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.region[:m.size]
}
