package wasmtest

import (
	"os"
	"slices"
	"strconv"
	"strings"
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

// ReportPercentiles reports p50 and p99 of the durations as benchmark
// metrics, in milliseconds.
func ReportPercentiles(b *testing.B, ds []time.Duration) {
	p50, p99 := Percentiles(ds)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
}

// Percentiles returns p50 and p99 of the durations, in milliseconds; it
// sorts ds.
func Percentiles(ds []time.Duration) (p50, p99 float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	at := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	return at(0.50), at(0.99)
}

// ResetPeakRSS resets the kernel's record of the process's peak resident
// memory (Linux), so that RSSKiB(b, "VmHWM") reports the peak from now on.
func ResetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// RSSKiB reads a memory figure of /proc/self/status ("VmRSS", "VmHWM"), in
// KiB; the benchmark is skipped where there is none.
func RSSKiB(b *testing.B, field string) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for line := range strings.SplitSeq(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	b.Skip("no " + field)
	return 0
}

// BenchCalls resets the timer, calls call b.N times, failing on its first
// error, and reports the process's CPU time and the p50 and p99 wall time
// per call.
func BenchCalls(b *testing.B, call func() error) {
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := CPUTime()
	for range b.N {
		begun := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(begun))
	}
	ReportCPU(b, cpu)
	ReportPercentiles(b, ds)
}
