package sandbox

import (
	"cmp"
	"fmt"
	"time"

	"pluginhost/bundle"
)

// Limits of a run, from the contract ("Capabilities that run"): "5 s of wall
// time, 64 MiB of memory, 256 KiB of output, 4 KiB of standard error kept; a
// module file at most 8 MiB (a package may then hold up to 16 MiB); runs at
// once bounded overall and per Instance."
const (
	DefaultTimeout     = 5 * time.Second
	DefaultMemoryBytes = 64 << 20
	DefaultOutputBytes = 256 << 10
	DefaultStderrBytes = 4 << 10
	DefaultConcurrency = 16
	DefaultPerInstance = 4
	// DefaultQueueWait is how long a run waits for a slot before it is busy.
	DefaultQueueWait = time.Second
	// MaxModuleBytes bounds a module file.
	MaxModuleBytes = bundle.MaxModuleBytes
)

// Limits bound every run of an Engine. A zero field takes its default.
type Limits struct {
	// Timeout is a run's wall time, from when it has a slot.
	Timeout time.Duration
	// QueueWait is how long a run waits for a slot (overall and for its
	// Instance) when the bounds are full; past it, the run is busy.
	QueueWait time.Duration
	// MemoryBytes bounds the module's linear memory.
	MemoryBytes int64
	// OutputBytes bounds standard output; past it the run is stopped.
	OutputBytes int
	// StderrBytes is how much of standard error is kept.
	StderrBytes int
	// Concurrency bounds the runs at once overall.
	Concurrency int
	// PerInstance bounds the runs at once of one Instance.
	PerInstance int
}

func (l Limits) withDefaults() Limits {
	l.Timeout = cmp.Or(l.Timeout, DefaultTimeout)
	l.QueueWait = cmp.Or(l.QueueWait, DefaultQueueWait)
	l.MemoryBytes = cmp.Or(l.MemoryBytes, DefaultMemoryBytes)
	l.OutputBytes = cmp.Or(l.OutputBytes, DefaultOutputBytes)
	l.StderrBytes = cmp.Or(l.StderrBytes, DefaultStderrBytes)
	l.Concurrency = cmp.Or(l.Concurrency, DefaultConcurrency)
	l.PerInstance = cmp.Or(l.PerInstance, DefaultPerInstance)
	return l
}

func (l Limits) check() error {
	switch {
	case l.Timeout < 0, l.QueueWait < 0, l.MemoryBytes < pageBytes, l.OutputBytes < 0, l.StderrBytes < 0, l.Concurrency < 1, l.PerInstance < 1:
		return fmt.Errorf("sandbox: limits out of range: %+v", l)
	}
	return nil
}
