package wasmtest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime returns the CPU time the process has used so far (user and
// system). On a machine shared with other work, a benchmark's CPU time per
// operation says more than its wall time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the process's CPU time per operation since begun.
func ReportCPU(b *testing.B, begun time.Duration) {
	b.ReportMetric(float64((CPUTime()-begun).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
