// Package metrics holds the host's operational Prometheus metrics, those an
// operator alerts on, and the small functions the rest of the host calls to
// record them: storage operations, refusals, image proxy outcomes, AI calls,
// capability and background runs. Recording needs no handle to pass around:
// the vectors are the package's, and Register adds them, with the gauges read
// from the running server (websockets, subscriptions, the database pools) and
// the build's identity, to a server's registry.
//
// Every label value comes from a closed list (operation names, error codes,
// reasons, outcomes); anything else is recorded as "other", so a metric never
// grows with ids or user input.
package metrics

import (
	"database/sql"
	"errors"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"pluginhost/models"
)

// Other is the label value of anything outside a label's closed list.
const Other = "other"

// OK is the code label of an operation that succeeded.
const OK = "OK"

var (
	storageOps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_storage_operations_total",
		Help: "Plugin Local Storage operations by operation and outcome code (OK or the error code).",
	}, []string{"operation", "code"})
	refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_refusals_total",
		Help: "Requests refused for quota or permission, by kind (quota, permission) and by who asked: user (the app, GraphQL or REST), ai, host (capability host actions) or image_proxy.",
	}, []string{"kind", "by"})
	imageOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_image_proxy_requests_total",
		Help: "Image proxy requests by outcome: ok, a rejection reason, rate_limited, busy or error.",
	}, []string{"outcome"})
	aiCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_ai_calls_total",
		Help: "AI tool calls (aiInvoke) by tool (a storage tool, or capability) and outcome code.",
	}, []string{"tool", "code"})
	capabilityRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_capability_runs_total",
		Help: "Capability runs by kind (tool, skill, background) and outcome (ok, a CAPABILITY_FAILED reason, cancelled, or the error code of a refused run).",
	}, []string{"kind", "outcome"})
	capabilityDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pluginhost_capability_run_duration_seconds",
		Help:    "Wall time of capability runs by kind and outcome.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"kind", "outcome"})
	moduleDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pluginhost_capability_module_duration_seconds",
		Help:    "Time capability runs spent in the sandbox, by kind: a slot, the module's instance made ready and its code run, in every round; the rest of a run's wall time is the host's (access, snapshot, request and result, host actions).",
		Buckets: []float64{.00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"kind"})
	backgroundRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_background_runs_total",
		Help: "Scheduled background runs started by this replica, by outcome (as for pluginhost_capability_runs_total).",
	}, []string{"outcome"})
	fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_capability_fetches_total",
		Help: "Requests capabilities had the host make, by outcome: ok (any HTTP status), or the error the module was given (timeout, connection_refused, tls, dns, body_too_large, error).",
	}, []string{"outcome"})
	fetchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pluginhost_capability_fetch_duration_seconds",
		Help:    "Wall time of the requests capabilities had the host make, by outcome.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"outcome"})
	fetchRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_capability_fetch_refusals_total",
		Help: "Fetch rounds the host refused, failing their run, by reason (network_denied, connection_required).",
	}, []string{"reason"})
	signInRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_signin_refusals_total",
		Help: "Sign-in attempts refused (a bearer token or JWT, HTTP Basic, the sign-in form, the identity provider's return), by reason: invalid (the credential was refused), limited_address (too many failures from the client's address), limited_overall (too many failures from all addresses).",
	}, []string{"reason"})
	issuerKeyFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pluginhost_oidc_key_fetches_total",
		Help: "Fetches of the identity provider's discovery document and keys (JWKS), by outcome: ok or error.",
	}, []string{"outcome"})
)

// Reasons a sign-in attempt is refused.
var signInReasons = []string{"invalid", "limited_address", "limited_overall"}

// SignInRefused records a refused sign-in attempt: invalid, limited_address
// or limited_overall.
func SignInRefused(reason string) {
	signInRefusals.WithLabelValues(bounded(reason, signInReasons)).Inc()
}

// IssuerKeyFetch records a fetch of the identity provider's discovery
// document or keys.
func IssuerKeyFetch(err error) {
	o := "ok"
	if err != nil {
		o = "error"
	}
	issuerKeyFetches.WithLabelValues(o).Inc()
}

// FetchOutcomes are the outcomes of a fetch the host made.
var FetchOutcomes = []string{"ok", "timeout", "connection_refused", "tls", "dns", "body_too_large", "error"}

// Fetch records one request a capability had the host make.
func Fetch(outcome string, took time.Duration) {
	o := bounded(outcome, FetchOutcomes)
	fetches.WithLabelValues(o).Inc()
	fetchDuration.WithLabelValues(o).Observe(took.Seconds())
}

// FetchRefused records a fetch round the host refused.
func FetchRefused(reason string) {
	fetchRefusals.WithLabelValues(bounded(reason, fetchRefusalReasons)).Inc()
}

var fetchRefusalReasons = []string{"network_denied", "connection_required"}

// Storage operation names: the storage tools, and the operations beyond them.
var storageOperations = []string{"list", "get", "create", "update", "delete", "reset", "apply_capability_result", "snapshot"}

// Error codes a storage operation or AI call can end with.
var errorCodes = []string{
	OK, string(models.ErrPermissionDenied), string(models.ErrNotFound), string(models.ErrQuotaExceeded),
	string(models.ErrConflict), string(models.ErrInvalid), string(models.ErrUnauthenticated),
	string(models.ErrForbidden), string(models.ErrBadUserInput), string(models.ErrCapabilityFailed), string(models.ErrInternal),
}

// Image proxy outcomes beyond the rejection reasons.
var imageOutcomeValues = []string{
	"ok", "rate_limited", "busy", "error",
	"invalid_url", "not_https", "blocked_address", "redirect", "upstream_status", "timeout",
	"too_large", "unsupported_format", "format_mismatch", "dimensions", "frames", "pixels",
}

// Capability run outcomes: ok, a CAPABILITY_FAILED reason of the contract,
// cancelled (the caller went away), or the code of a run refused before it
// began or of host actions storage refused.
var runOutcomes = append([]string{"ok", models.ReasonNoModule, models.ReasonTimeout, models.ReasonMemory, models.ReasonExit,
	models.ReasonBadOutput, models.ReasonOutputTooLarge, models.ReasonOutputSchema, models.ReasonBusy, models.ReasonCrash,
	models.ReasonNetworkDenied, models.ReasonConnectionRequired, "cancelled"}, errorCodes[1:]...)

// AI tools: the storage tools by their short name, a capability, or a
// handle that did not open.
var aiTools = []string{"list", "get", "create", "update", "delete", "capability", Other}

// zero creates every series of the known label sets at zero, so that
// dashboards and alerts see each family from the start rather than from
// its first event. The run duration histograms start with outcome ok only:
// a full set would be hundreds of series for one family.
func zero() {
	for _, op := range storageOperations {
		for _, c := range errorCodes {
			storageOps.WithLabelValues(op, c)
		}
	}
	for _, kind := range []string{"quota", "permission"} {
		for _, by := range askers {
			refusals.WithLabelValues(kind, by)
		}
	}
	for _, o := range imageOutcomeValues {
		imageOutcomes.WithLabelValues(o)
	}
	for _, t := range aiTools {
		for _, c := range errorCodes {
			aiCalls.WithLabelValues(t, c)
		}
	}
	for _, k := range runKinds {
		for _, o := range runOutcomes {
			capabilityRuns.WithLabelValues(k, o)
		}
		capabilityDuration.WithLabelValues(k, "ok")
		moduleDuration.WithLabelValues(k)
	}
	for _, o := range runOutcomes {
		backgroundRuns.WithLabelValues(o)
	}
	for _, o := range FetchOutcomes {
		fetches.WithLabelValues(o)
	}
	fetchDuration.WithLabelValues("ok")
	for _, r := range fetchRefusalReasons {
		fetchRefusals.WithLabelValues(r)
	}
	for _, r := range signInReasons {
		signInRefusals.WithLabelValues(r)
	}
	for _, o := range []string{"ok", "error"} {
		issuerKeyFetches.WithLabelValues(o)
	}
}

// Capability kinds that run.
var runKinds = []string{"tool", "skill", "background"}

func bounded(v string, allowed []string) string {
	if slices.Contains(allowed, v) {
		return v
	}
	return Other
}

// code returns the code label of an outcome.
func code(err error) string {
	if err == nil {
		return OK
	}
	return bounded(string(models.ErrorCode(err)), errorCodes)
}

// refusal counts err as a refusal of a request by who when it is one.
func refusal(by string, err error) {
	switch models.ErrorCode(err) {
	case models.ErrQuotaExceeded:
		refusals.WithLabelValues("quota", by).Inc()
	case models.ErrPermissionDenied, models.ErrImageDenied:
		refusals.WithLabelValues("permission", by).Inc()
	}
}

// Who asked: the values of the refusals' "by" label.
var askers = []string{"user", "ai", "host", "image_proxy"}

// StorageOperation records one storage operation (list, get, create,
// update, delete, reset, apply_capability_result or snapshot) and how it
// ended; quota and permission refusals are counted as refusals too, by actor:
// "" is the user, "ai" the AI, "host" capability host actions.
func StorageOperation(operation, actor string, err error) {
	storageOps.WithLabelValues(bounded(operation, storageOperations), code(err)).Inc()
	if actor == "" {
		actor = "user"
	}
	refusal(bounded(actor, askers), err)
}

// AICall records one aiInvoke: tool is the storage tool called
// (host.storage.get is counted as get), anything else is a capability, ""
// a handle that did not open (a refusal of the AI's). Refusals of the storage
// operation it ran are counted by StorageOperation.
func AICall(tool string, err error) {
	t := strings.TrimPrefix(tool, "host.storage.")
	switch {
	case tool == "":
		t = Other // the handle did not open
	case !slices.Contains(models.StorageTools, tool):
		t = "capability"
	}
	aiCalls.WithLabelValues(bounded(t, aiTools), code(err)).Inc()
	if tool == "" {
		refusal("ai", err) // refused before any storage operation
	}
}

// ImageProxy records an image proxy request's outcome: "ok", a rejection
// reason, "rate_limited", "busy" or "error".
func ImageProxy(outcome string) {
	imageOutcomes.WithLabelValues(bounded(outcome, imageOutcomeValues)).Inc()
}

// ImageDenied records an image request refused because the Instance may not
// use the network (a permission refusal by image_proxy).
func ImageDenied() {
	refusals.WithLabelValues("permission", "image_proxy").Inc()
}

// CapabilityRun records one finished capability run, for the capability
// runner to call: kind is tool, skill or background; outcome is "ok" or the
// CAPABILITY_FAILED reason (no_module, timeout, memory, exit, bad_output,
// output_too_large, output_schema, busy), cancelled, or the error code of a
// run refused before it began or of host actions storage refused; took is
// its wall time.
func CapabilityRun(kind, outcome string, took time.Duration) {
	k, o := bounded(kind, runKinds), bounded(outcome, runOutcomes)
	capabilityRuns.WithLabelValues(k, o).Inc()
	capabilityDuration.WithLabelValues(k, o).Observe(took.Seconds())
}

// ModuleTime records the time a capability run of kind spent in the
// sandbox, whatever its outcome, for a run that reached it.
func ModuleTime(kind string, took time.Duration) {
	moduleDuration.WithLabelValues(bounded(kind, runKinds)).Observe(took.Seconds())
}

// BackgroundRun records one scheduled background run this replica started
// (after winning its lease), for the scheduler to call, with its outcome as
// for CapabilityRun.
func BackgroundRun(outcome string) {
	backgroundRuns.WithLabelValues(bounded(outcome, runOutcomes)).Inc()
}

// Sources are the running server's parts whose state is read at each scrape.
type Sources struct {
	// WebsocketConnections returns the open websockets.
	WebsocketConnections func() int
	// Subscriptions returns the open subscriptions.
	Subscriptions func() int
	// DBPools names the database pools ("write", "read"); the same pool under
	// two names is reported once.
	DBPools map[string]*sql.DB
	// RunMemory returns the bytes charged to the memory of all capability
	// runs; CompiledModules the modules compiled and kept.
	RunMemory       func() int64
	CompiledModules func() int
	// InstancesReplaced returns how many kept instances of reactor modules
	// were replaced because a run grew their memory.
	InstancesReplaced func() int64
	// Version and Revision identify the build.
	Version, Revision string
}

// Register adds the host's operational metrics to reg, every known label
// set at zero.
func Register(reg prometheus.Registerer, src Sources) error {
	zero()
	cs := []prometheus.Collector{storageOps, refusals, imageOutcomes, aiCalls, capabilityRuns, capabilityDuration, moduleDuration, backgroundRuns,
		fetches, fetchDuration, fetchRefusals, signInRefusals, issuerKeyFetches}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "pluginhost_build_info",
		Help:        "Always 1; the labels say which build runs: version, revision (vcs, shortened) and Go version.",
		ConstLabels: prometheus.Labels{"version": src.Version, "revision": src.Revision, "goversion": runtime.Version()},
	})
	build.Set(1)
	cs = append(cs, build)
	if src.WebsocketConnections != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pluginhost_websocket_connections", Help: "Open websocket connections.",
		}, func() float64 { return float64(src.WebsocketConnections()) }))
	}
	if src.Subscriptions != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pluginhost_subscriptions", Help: "Open storageChanged subscriptions.",
		}, func() float64 { return float64(src.Subscriptions()) }))
	}
	if src.RunMemory != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pluginhost_capability_memory_bytes",
			Help: "Memory charged to capability runs at once: their linear memories, tables and stacks, and the instances kept ready (bounded by --run-memory-total-mib).",
		}, func() float64 { return float64(src.RunMemory()) }))
	}
	if src.CompiledModules != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pluginhost_capability_modules_compiled", Help: "Capability modules compiled and kept in memory.",
		}, func() float64 { return float64(src.CompiledModules()) }))
	}
	if src.InstancesReplaced != nil {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pluginhost_capability_instances_replaced_total",
			Help: "Kept instances of reactor modules replaced by new ones because a run grew their memory, which no restore undoes; a module whose runs often do pays for a new instance each time.",
		}, func() float64 { return float64(src.InstancesReplaced()) }))
	}
	seen := map[*sql.DB]bool{}
	for _, name := range []string{"write", "read"} {
		if db := src.DBPools[name]; db != nil && !seen[db] {
			seen[db] = true
			cs = append(cs, collectors.NewDBStatsCollector(db, name))
		}
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
