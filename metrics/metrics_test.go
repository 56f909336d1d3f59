package metrics

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"pluginhost/models"
)

// TestLabelsBounded: each recording hook keeps its labels to their closed
// lists; anything else, such as an id or a plugin's capability name, is
// "other", so a series never names a user's data.
func TestLabelsBounded(t *testing.T) {
	tests := []struct {
		name   string
		record func()
		c      prometheus.Collector
		labels []string
	}{
		{"capability run", func() { CapabilityRun("tool", "timeout", time.Second) }, capabilityRuns, []string{"tool", "timeout"}},
		{"capability run, unknown outcome", func() { CapabilityRun("tool", "inst_4kq2", time.Second) }, capabilityRuns, []string{"tool", Other}},
		{"capability run, unknown kind", func() { CapabilityRun("com.example.weather", "ok", time.Second) }, capabilityRuns, []string{Other, "ok"}},
		{"background run", func() { BackgroundRun("ok") }, backgroundRuns, []string{"ok"}},
		{"background run, unknown outcome", func() { BackgroundRun("my secret") }, backgroundRuns, []string{Other}},
		{"storage operation", func() { StorageOperation("get", "", nil) }, storageOps, []string{"get", OK}},
		{"storage operation, unknown name", func() { StorageOperation("drop table", "", nil) }, storageOps, []string{Other, OK}},
		{"storage operation, plain error", func() { StorageOperation("get", "", errPlain{}) }, storageOps, []string{"get", string(models.ErrInternal)}},
		{"quota refusal", func() { StorageOperation("create", "", models.Errorf(models.ErrQuotaExceeded, "full")) }, refusals, []string{"quota", "user"}},
		{"host refusal", func() {
			StorageOperation("apply_capability_result", "host", models.Errorf(models.ErrPermissionDenied, "no"))
		}, refusals, []string{"permission", "host"}},
		{"AI call of a storage tool", func() { AICall(models.ToolGet, nil) }, aiCalls, []string{"get", OK}},
		{"AI call of a capability", func() { AICall("weather.forecast", nil) }, aiCalls, []string{"capability", OK}},
		{"image outcome", func() { ImageProxy("blocked_address") }, imageOutcomes, []string{"blocked_address"}},
		{"image outcome, unknown", func() { ImageProxy("https://example.com/") }, imageOutcomes, []string{Other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vec := tt.c.(interface {
				WithLabelValues(...string) prometheus.Counter
			})
			before := value(vec.WithLabelValues(tt.labels...))
			tt.record()
			if got := value(vec.WithLabelValues(tt.labels...)); got != before+1 {
				t.Fatalf("%v: %v, want %v", tt.labels, got, before+1)
			}
		})
	}
}

type errPlain struct{}

func (errPlain) Error() string { return "disk on fire" }

func value(c prometheus.Counter) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}

// TestRegister: a registry gets the build's identity and the run histogram.
func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, Sources{Version: "1.2.3", Revision: "abc"}); err != nil {
		t.Fatal(err)
	}
	CapabilityRun("skill", "ok", 300*time.Millisecond)
	ModuleTime("com.example.weather", time.Millisecond) // not a kind: other
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			found[f.GetName()] += strings.Join(labels, ",") + ";"
		}
	}
	if got, want := found["pluginhost_build_info"], "goversion="+runtime.Version()+",revision=abc,version=1.2.3;"; got != want {
		t.Errorf("build info %q, want %q", got, want)
	}
	if !strings.Contains(found["pluginhost_capability_run_duration_seconds"], "kind=skill,outcome=ok") {
		t.Errorf("run durations: %q", found["pluginhost_capability_run_duration_seconds"])
	}
	// Every family is there with its known label sets, whether or not
	// anything happened yet.
	for family, series := range map[string]string{
		"pluginhost_storage_operations_total":           "code=PLUGIN_STORAGE_QUOTA_EXCEEDED,operation=update;",
		"pluginhost_refusals_total":                     "by=image_proxy,kind=permission;",
		"pluginhost_image_proxy_requests_total":         "outcome=blocked_address;",
		"pluginhost_ai_calls_total":                     "code=OK,tool=capability;",
		"pluginhost_capability_runs_total":              "kind=background,outcome=crash;",
		"pluginhost_capability_run_duration_seconds":    "kind=tool,outcome=ok;",
		"pluginhost_capability_module_duration_seconds": "kind=background;kind=other;kind=skill;kind=tool;",
		"pluginhost_background_runs_total":              "outcome=timeout;",
	} {
		if !strings.Contains(found[family], series) {
			t.Errorf("%s lacks %s at registration: %q", family, series, found[family])
		}
	}
}
