package capability_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pluginhost/capability"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/metrics"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

const modules = "../sandbox/testdata/modules"

// host is a wired host with one user, the test plugin installed and one
// Instance of it.
type host struct {
	env  *fixture.Env
	runs *capability.Service
	user *models.User
	inst *models.Instance
	intl *models.Installation
}

func testManifest() map[string]any {
	m := fixture.Manifest("com.example.runs",
		map[string]any{"id": "notes", "max_bytes": 65536, "ai_access": "read_write"},
		map[string]any{"id": "private", "max_bytes": 65536, "ai_access": "read"})
	m["min_host_version"] = "1.7.12"
	m["capabilities"] = []any{
		map[string]any{"id": "notes.echo", "kind": "tool", "description": "echo", "module": "capabilities/echo.wasm"},
		map[string]any{"id": "notes.request", "kind": "skill", "description": "request", "module": "capabilities/request.wasm"},
		map[string]any{"id": "notes.exit", "kind": "tool", "description": "exit 3", "module": "capabilities/exit3.wasm"},
		map[string]any{"id": "notes.schema", "kind": "tool", "description": "schema", "module": "capabilities/request.wasm",
			"input_schema":  map[string]any{"type": "object", "properties": map[string]any{"limit": map[string]any{"type": "integer", "maximum": 10}}},
			"output_schema": map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer"}}, "required": []any{"count"}}},
		map[string]any{"id": "notes.data", "kind": "data", "description": "data", "module": "capabilities/request.wasm"},
		map[string]any{"id": "notes.bg", "kind": "background", "description": "bg", "module": "capabilities/request.wasm", "schedule_seconds": 30},
		map[string]any{"id": "notes.none", "kind": "tool", "description": "no module"},
	}
	return m
}

func newHost(t *testing.T, b testenv.Backend) *host { return newHostTB(t, b) }

func newHostTB(t testing.TB, b testenv.Backend) *host {
	t.Helper()
	env := fixture.New(t, b, fixture.RunLimits(sandbox.Limits{Timeout: 3 * time.Second}))
	h := &host{env: env, runs: env.Runs}
	h.user = env.User(t, "alice")
	files := map[string][]byte{}
	for _, name := range []string{"echo", "request", "exit3"} {
		files["capabilities/"+name+".wasm"] = wasmtest.Module(t, modules, name)
	}
	var err error
	h.intl, err = env.Life.Install(context.Background(), h.user, env.Package(t, testManifest(), files))
	if err != nil {
		t.Fatal(err)
	}
	h.inst = env.Instance(t, h.user, h.intl)
	return h
}

func (h *host) run(capabilityID, args string) (*models.ExtensionResult, error) {
	return h.runs.Run(context.Background(), capability.Call{Caller: models.Caller{UserID: h.user.ID}, InstanceID: h.inst.ID, Capability: capabilityID,
		Arguments: models.JSON(args), Trigger: sandbox.TriggerInvoke})
}

func (h *host) revision(t *testing.T) int64 {
	t.Helper()
	snap, err := h.env.Store.Snapshot(context.Background(), models.Caller{UserID: h.user.ID}, h.inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	return snap.StorageRevision
}

func codeOf(err error) (models.Code, string) {
	var e *models.Error
	if errors.As(err, &e) {
		return e.Code, e.Reason
	}
	return "", ""
}

func set(ns, key, value string, revision ...int) string {
	a := map[string]any{"type": "plugin_storage_set", "namespace": ns, "key": key, "value": json.RawMessage(value)}
	if len(revision) > 0 {
		a["revision"] = revision[0]
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// A run reads the request, and its host actions are applied in one
// transaction: the result carries evidence, storage holds the values, and
// subscribers get the change.
func TestRunAppliesHostActions(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		sub := h.env.Changes(t, h.user, h.inst.ID)
		res, err := h.run("notes.request", `{"host_actions":[`+set("notes", "a", `{"t":1}`)+`,`+set("notes", "b", `2`)+`]}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Evidence) != 2 || res.Evidence[0].Key != "a" || res.Evidence[0].Revision != 1 {
			t.Fatalf("evidence %+v", res.Evidence)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, ok := sub.Next(ctx); !ok || c.Key == nil || *c.Key != "a" || c.Operation != models.OpCreate {
			t.Fatalf("subscriber got %+v", c)
		}
		// The next run reads what the last one wrote, in its snapshot.
		res, err = h.run("notes.request", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Request sandbox.Request `json:"request"`
		}
		json.Unmarshal(res.Data, &data)
		ps := data.Request.PluginStorage
		if ps == nil || ps.StorageRevision != 2 || len(ps.Namespaces["notes"]) != 2 || string(ps.Namespaces["notes"][0].Value) != `{"t":1}` {
			t.Fatalf("snapshot %+v", ps)
		}
		if data.Request.Instance.Generation != 1 || data.Request.Trigger != sandbox.TriggerInvoke || data.Request.Kind != "skill" {
			t.Fatalf("request %+v", data.Request)
		}
		// Both runs are audited, with their actor and outcome.
		trail, err := h.env.Store.Audit(context.Background(), h.user.ID, storage.AuditQuery{Actor: models.ActorCapability})
		entries := trail.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		for _, e := range entries {
			if e.Operation == storage.OperationRun && e.Outcome == "ok" && e.Capability == "notes.request" {
				runs++
			}
		}
		if runs != 2 {
			t.Fatalf("audited runs %d, want 2: %+v", runs, entries)
		}
	})
}

// A run that fails applies nothing, whatever it returned.
func TestFailedRunAppliesNothing(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		if _, err := h.run("notes.request", `{"host_actions":[`+set("notes", "kept", `1`)+`]}`); err != nil {
			t.Fatal(err)
		}
		before := h.revision(t)
		tests := []struct {
			name, capability, args string
			code                   models.Code
			reason                 string
		}{
			{"the module exits with code 3", "notes.exit", `{}`, models.ErrCapabilityFailed, models.ReasonExit},
			{"data breaks output_schema", "notes.schema", `{"host_actions":[` + set("notes", "x", `1`) + `]}`, models.ErrCapabilityFailed, models.ReasonOutputSchema},
			{"the second host action is stale", "notes.request", `{"host_actions":[` + set("notes", "new", `1`) + `,` + set("notes", "kept", `2`, 7) + `]}`, models.ErrConflict, ""},
			{"a host action creates a key that exists", "notes.request", `{"host_actions":[` + set("notes", "new2", `1`) + `,` + set("notes", "kept", `2`) + `]}`, models.ErrConflict, ""},
			{"a host action names an undeclared namespace", "notes.request", `{"host_actions":[` + set("nope", "k", `1`) + `]}`, models.ErrPermissionDenied, ""},
			{"a data capability returns host actions", "notes.data", `{"host_actions":[` + set("notes", "d", `1`) + `]}`, models.ErrPermissionDenied, ""},
			{"a credential key", "notes.request", `{"host_actions":[` + set("notes", "apiKey", `1`) + `]}`, models.ErrInvalid, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res, err := h.run(tt.capability, tt.args)
				code, reason := codeOf(err)
				if res != nil || code != tt.code || reason != tt.reason {
					t.Fatalf("got %v (%v), want %s %s", err, res, tt.code, tt.reason)
				}
				if got := h.revision(t); got != before {
					t.Fatalf("storage revision %d after a failed run, want %d", got, before)
				}
			})
		}
	})
}

// The rules of every run: whose Instance, enabled, at which generation,
// which capability, which arguments.
func TestRunRules(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		bob := h.env.User(t, "bob")
		ctx := context.Background()
		countedBefore := runsByOutcome(t)
		tests := []struct {
			name   string
			call   capability.Call
			code   models.Code
			reason string
		}{
			{"another user's Instance", capability.Call{Caller: models.Caller{UserID: bob.ID}, Capability: "notes.echo"}, models.ErrPermissionDenied, ""},
			{"an unknown Instance", capability.Call{InstanceID: "inst_nope", Capability: "notes.echo"}, models.ErrPermissionDenied, ""},
			{"a stale generation", capability.Call{Caller: models.Caller{Generation: 2}, Capability: "notes.echo"}, models.ErrConflict, ""},
			{"an undeclared capability", capability.Call{Capability: "notes.nope"}, models.ErrInvalid, ""},
			{"a capability without a module", capability.Call{Capability: "notes.none"}, models.ErrCapabilityFailed, models.ReasonNoModule},
			{"arguments that break input_schema", capability.Call{Capability: "notes.schema", Arguments: models.JSON(`{"limit":11}`)}, models.ErrBadUserInput, ""},
			{"arguments that are not an object", capability.Call{Capability: "notes.echo", Arguments: models.JSON(`[]`)}, models.ErrBadUserInput, ""},
			{"the current generation", capability.Call{Caller: models.Caller{Generation: 1}, Capability: "notes.echo"}, "", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := tt.call
				if c.Caller.UserID == "" {
					c.Caller.UserID = h.user.ID
				}
				if c.InstanceID == "" {
					c.InstanceID = h.inst.ID
				}
				c.Trigger = sandbox.TriggerInvoke
				_, err := h.runs.Run(ctx, c)
				if code, reason := codeOf(err); code != tt.code || reason != tt.reason || (tt.code == "" && err != nil) {
					t.Fatalf("got %v, want %s %s", err, tt.code, tt.reason)
				}
			})
		}
		if _, err := h.env.Life.SetInstanceEnabled(ctx, h.user, h.inst.ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := h.run("notes.echo", `{}`); !strings.Contains(err.Error(), "disabled") {
			t.Fatalf("a disabled Instance's capability ran: %v", err)
		}
		// Each outcome is counted in /metrics.
		counted := runsByOutcome(t)
		for outcome, want := range map[string]float64{"ok": 1, models.ReasonNoModule: 1, string(models.ErrPermissionDenied): 3} {
			if got := counted[outcome] - countedBefore[outcome]; got != want {
				t.Fatalf("%s runs counted: %v, want %v (%v before, %v after)", outcome, got, want, countedBefore, counted)
			}
		}
	})
}

// The AI sees each runnable tool and skill with a handle; their host actions
// apply only with the consent and read_write access on every namespace they
// touch.
func TestAICapabilities(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		ctx := context.Background()
		tools, err := h.env.AI.Tools(ctx, h.user)
		if err != nil {
			t.Fatal(err)
		}
		handles := map[string]string{}
		for _, tool := range tools {
			handles[tool.Capability] = tool.Handle
		}
		for _, want := range []string{"notes.echo", "notes.request", "notes.exit", "notes.schema"} {
			if handles[want] == "" {
				t.Errorf("aiTools lacks %s: %+v", want, tools)
			}
		}
		for _, not := range []string{"notes.data", "notes.bg", "notes.none", models.ToolList} {
			if handles[not] != "" {
				t.Errorf("aiTools lists %s without consent or runnable tool", not)
			}
		}
		handle := handles["notes.request"]
		before := h.revision(t)
		call := func(args string) error {
			_, err := h.env.AI.Invoke(ctx, h.user, handle, models.JSON(args))
			return err
		}
		if err := call(`{}`); err != nil {
			t.Fatalf("a run without host actions needs no consent: %v", err)
		}
		tests := []struct {
			name    string
			consent bool
			args    string
			code    models.Code
		}{
			{"host actions without the consent", false, `{"host_actions":[` + set("notes", "a", `1`) + `]}`, models.ErrPermissionDenied},
			{"a scope field in the arguments", true, `{"instance_id":"x"}`, models.ErrInvalid},
			{"a namespace the AI may only read", true, `{"host_actions":[` + set("private", "a", `1`) + `]}`, models.ErrPermissionDenied},
			{"read_write on one namespace but read on another", true, `{"host_actions":[` + set("notes", "a", `1`) + `,` + set("private", "a", `1`) + `]}`, models.ErrPermissionDenied},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := h.env.Life.SetAIConsent(ctx, h.user, h.intl.ID, tt.consent); err != nil {
					t.Fatal(err)
				}
				if code, _ := codeOf(call(tt.args)); code != tt.code {
					t.Fatalf("got %s, want %s", code, tt.code)
				}
				if h.revision(t) != before {
					t.Fatal("a refused AI run changed storage")
				}
			})
		}
		if err := call(`{"host_actions":[` + set("notes", "a", `1`) + `]}`); err != nil {
			t.Fatalf("with consent and read_write: %v", err)
		}
		if h.revision(t) != before+1 {
			t.Fatal("the AI run's host action was not applied")
		}
		trail, _ := h.env.Store.Audit(ctx, h.user.ID, storage.AuditQuery{Actor: models.ActorAI})
		entries := trail.Nodes()
		if len(entries) == 0 || entries[0].Operation != storage.OperationRun || entries[0].Outcome != "ok" {
			t.Fatalf("AI runs not audited: %+v", entries)
		}
	})
}

// runsByOutcome reads the capability runs /metrics counts so far, by outcome.
func runsByOutcome(t *testing.T) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg, metrics.Sources{}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "pluginhost_capability_runs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// A package whose module passes the structural limits but not its
// compilation budget is refused at install, naming the budget; one beyond a
// structural limit is refused naming the limit; nothing of either is
// installed.
func TestInstallCompilesModules(t *testing.T) {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"},
		fixture.RunLimits(sandbox.Limits{CompileTimeout: 50 * time.Millisecond}))
	user := env.User(t, "alice")
	for _, tt := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"past the compilation budget", wasmtest.ManyBlockFunctions(40, 4000), "compilation time budget"},
		{"past a structural limit", wasmtest.LiveLocals(1000, 1000), "locals times blocks of a function"},
		{"starting with too much memory", wasmtest.BigMemory(2000, false), "memory an instance starts with"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := fixture.Manifest("com.example.bomb", fixture.NS("notes", 1024))
			m["capabilities"] = []any{map[string]any{"id": "bomb.run", "kind": "tool", "description": "bomb", "module": "capabilities/bomb.wasm"}}
			_, err := env.Life.Install(context.Background(), user, env.Package(t, m, map[string][]byte{"capabilities/bomb.wasm": tt.wasm}))
			if models.ErrorCode(err) != models.ErrPackageRejected || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want PACKAGE_REJECTED naming %q", err, tt.want)
			}
			list, err := env.Life.Installations(context.Background(), user)
			if err != nil || len(list) != 0 {
				t.Fatalf("installed anyway: %v %v", list, err)
			}
		})
	}
}
