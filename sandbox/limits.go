package sandbox

import (
	"cmp"
	"fmt"
	"runtime"
	"time"

	"pluginhost/bundle"
	"pluginhost/wasmbin"
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

// Limits the host adds to the contract's, so that everything a run can
// allocate, and everything compiling a module can cost, is bounded.
const (
	// DefaultStackBytes bounds a run's call stack: the frames under way,
	// each weighed by wasmbin.Module.Weight.
	DefaultStackBytes = 1 << 20
	// DefaultTotalMemoryBytes bounds the memory of all runs at once: their
	// linear memories, tables and stacks, and the instances kept ready
	// between runs.
	DefaultTotalMemoryBytes = 256 << 20
	// DefaultCompileTimeout bounds the compilation of one module.
	DefaultCompileTimeout = 2 * time.Minute
	// DefaultCompileMemoryBytes bounds the memory one compilation may use.
	DefaultCompileMemoryBytes = 1 << 30
	// DefaultReadyBytes bounds the memory of the initialized instances kept
	// between runs of reactor modules (part of the total).
	DefaultReadyBytes = 64 << 20
)

// DefaultPerUser bounds the runs at once of one user: half the processors
// (at least one), so that one user's runs, however long, leave the others
// processors to run on.
func DefaultPerUser() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// DefaultCompileConcurrency bounds the compilations at once: half the
// processors, at least one.
func DefaultCompileConcurrency() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// Limits bound every run of an Engine. A zero field takes its default.
type Limits struct {
	// Timeout is a run's wall time, from when it has a slot.
	Timeout time.Duration
	// QueueWait is how long a run waits for a slot (overall, for its user
	// and for its Instance) when the bounds are full; past it, the run is
	// busy.
	QueueWait time.Duration
	// MemoryBytes bounds the module's linear memory, from its start.
	MemoryBytes int64
	// StackBytes bounds the weight of a run's call stack.
	StackBytes int64
	// TotalMemoryBytes bounds the memory of all runs at once.
	TotalMemoryBytes int64
	// ReadyBytes bounds the memory of the instances kept ready for runs.
	ReadyBytes int64
	// OutputBytes bounds standard output; past it the run is stopped.
	OutputBytes int
	// StderrBytes is how much of standard error is kept.
	StderrBytes int
	// Concurrency bounds the runs at once overall.
	Concurrency int
	// PerInstance bounds the runs at once of one Instance.
	PerInstance int
	// PerUser bounds the runs at once of one user.
	PerUser int
	// CompileTimeout and CompileMemoryBytes bound the compilation of one
	// module; CompileConcurrency bounds the compilations at once.
	CompileTimeout     time.Duration
	CompileMemoryBytes int64
	CompileConcurrency int
	// Structure bounds a module's structure (its MemoryBytes is
	// MemoryBytes above).
	Structure wasmbin.Limits
}

func (l Limits) withDefaults() Limits {
	l.Timeout = cmp.Or(l.Timeout, DefaultTimeout)
	l.QueueWait = cmp.Or(l.QueueWait, DefaultQueueWait)
	l.MemoryBytes = cmp.Or(l.MemoryBytes, DefaultMemoryBytes)
	l.StackBytes = cmp.Or(l.StackBytes, DefaultStackBytes)
	l.TotalMemoryBytes = cmp.Or(l.TotalMemoryBytes, DefaultTotalMemoryBytes)
	l.ReadyBytes = cmp.Or(l.ReadyBytes, DefaultReadyBytes)
	l.OutputBytes = cmp.Or(l.OutputBytes, DefaultOutputBytes)
	l.StderrBytes = cmp.Or(l.StderrBytes, DefaultStderrBytes)
	l.Concurrency = cmp.Or(l.Concurrency, DefaultConcurrency)
	l.PerInstance = cmp.Or(l.PerInstance, DefaultPerInstance)
	l.PerUser = cmp.Or(l.PerUser, DefaultPerUser())
	l.CompileTimeout = cmp.Or(l.CompileTimeout, DefaultCompileTimeout)
	l.CompileMemoryBytes = cmp.Or(l.CompileMemoryBytes, DefaultCompileMemoryBytes)
	l.CompileConcurrency = cmp.Or(l.CompileConcurrency, DefaultCompileConcurrency())
	l.Structure.MemoryBytes = l.MemoryBytes
	return l
}

func (l Limits) check() error {
	switch {
	case l.Timeout < 0, l.QueueWait < 0, l.MemoryBytes < wasmbin.PageBytes, l.OutputBytes < 0, l.StderrBytes < 0,
		l.Concurrency < 1, l.PerInstance < 1, l.PerUser < 1, l.StackBytes < 1024, l.StackBytes > 1<<30,
		l.CompileTimeout < 0, l.CompileConcurrency < 1, l.ReadyBytes < 0:
		return fmt.Errorf("sandbox: limits out of range: %+v", l)
	case l.TotalMemoryBytes < l.MemoryBytes+runOverhead(l):
		return fmt.Errorf("sandbox: the memory of all runs (%d bytes) must hold at least one run's (%d bytes of memory, %d of stack)",
			l.TotalMemoryBytes, l.MemoryBytes, stackReserve(l))
	}
	return nil
}

// stackReserve is the memory a run's stack may take at its deepest: the
// engine doubles its stack as it grows and copies it, so at most three times
// the stack's own bound is held at once.
func stackReserve(l Limits) int64 { return 3 * l.StackBytes }

// runOverhead is what a run holds beyond its module's memory and tables.
func runOverhead(l Limits) int64 { return stackReserve(l) }
