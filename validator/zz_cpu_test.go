package validator

import (
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZCPU(t *testing.T) {
	data, _ := os.ReadFile(atLimitsFile)
	m := loadManifest(t, "manifest.json")
	for i := 0; i < 50; i++ {
		CheckUIConfig(data, m, "main")
	}
	const n = 500
	start := cpuNow()
	for i := 0; i < n; i++ {
		CheckUIConfig(data, m, "main")
	}
	el := cpuNow() - start
	start = cpuNow()
	for i := 0; i < n; i++ {
		var v any
		json.Unmarshal(data, &v)
	}
	el2 := cpuNow() - start
	start = cpuNow()
	for i := 0; i < n; i++ {
		decode(data, &checker{})
	}
	el3 := cpuNow() - start
	t.Logf("CPU per check: %v; per json.Unmarshal: %v; per decode: %v", el/n, el2/n, el3/n)
}
