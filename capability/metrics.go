package capability

import (
	"sort"
	"sync"
	"time"

	"pluginhost/metrics"
	"pluginhost/sandbox"
)

// Metrics count capability runs by trigger (invoke, ai, schedule) and
// outcome (ok or the failure), and time them, for Snapshot; every run is
// also recorded in the server's /metrics (package metrics).
type Metrics struct {
	mu     sync.Mutex
	counts map[[2]string]RunCount
}

// RunCount is the runs of one trigger that ended with one outcome.
type RunCount struct {
	Trigger string
	Outcome string
	Runs    uint64
	Seconds float64 // their wall time, added up
}

// NewMetrics returns empty run metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		counts: map[[2]string]RunCount{},
	}
}

func (m *Metrics) observe(trigger, kind, outcome string, d time.Duration) {
	metrics.CapabilityRun(kind, outcome, d)
	if trigger == sandbox.TriggerSchedule {
		metrics.BackgroundRun(outcome)
	}
	m.mu.Lock()
	k := [2]string{trigger, outcome}
	c := m.counts[k]
	c.Trigger, c.Outcome = trigger, outcome
	c.Runs++
	c.Seconds += d.Seconds()
	m.counts[k] = c
	m.mu.Unlock()
}

// Snapshot returns the counts so far, by trigger then outcome.
func (m *Metrics) Snapshot() []RunCount {
	m.mu.Lock()
	out := make([]RunCount, 0, len(m.counts))
	for _, c := range m.counts {
		out = append(out, c)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Trigger != out[j].Trigger {
			return out[i].Trigger < out[j].Trigger
		}
		return out[i].Outcome < out[j].Outcome
	})
	return out
}
