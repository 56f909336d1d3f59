package e2e

import (
	"crypto/rand"
	"encoding/base64"
	leb "encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
)

// withCustomSection returns a module with a custom section of n random bytes
// appended: still the same valid module, n bytes bigger, incompressible.
func withCustomSection(module []byte, n int) []byte {
	name := "pluginhost.padding"
	payload := make([]byte, n)
	rand.Read(payload)
	body := leb.AppendUvarint(nil, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	out := append([]byte{}, module...)
	out = append(out, 0) // custom section
	out = leb.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}

// padTo pads a module to exactly size bytes with a custom section.
func padTo(module []byte, size int) []byte {
	for n := size - len(module) - 30; ; n++ {
		if m := withCustomSection(module, n); len(m) >= size {
			return m
		}
	}
}

// A plugin's Go capabilities, built to wasip1, in a package of about 14 MiB
// installed over GraphQL: invoke runs them, each failure has its reason, the
// server answers while a module loops, the AI lists and runs tools, and the
// Instance shows its background runs.
func TestCapabilitiesE2E(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		pub := NewPublisher(t)
		h := &host{Server: Start(t, b.DSN, pub.Dir, "--run-timeout", "2s", "--background=false", "--run-concurrency-per-user", "2"), pub: pub}
		c := h.user(t, "alice", false)
		mods := wasmtest.Modules(t, "../sandbox/testdata/modules")
		m := manifest("com.example.e2e.runs", map[string]any{"id": "notes", "max_bytes": 4096, "ai_access": "read_write"})
		m["permissions"] = []any{"storage", "ai_storage"}
		m["min_host_version"] = "1.7.12"
		m["capabilities"] = []any{
			map[string]any{"id": "notes.echo", "kind": "tool", "description": "echo", "module": "capabilities/echo.wasm",
				"input_schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 5}}}},
			map[string]any{"id": "notes.loop", "kind": "tool", "description": "loops", "module": "capabilities/loop.wasm"},
			map[string]any{"id": "notes.exit", "kind": "tool", "description": "exits 3", "module": "capabilities/exit3.wasm"},
			map[string]any{"id": "notes.request", "kind": "background", "description": "bg", "module": "capabilities/request.wasm", "schedule_seconds": 60},
			map[string]any{"id": "notes.none", "kind": "tool", "description": "no module"},
		}
		// Two modules at the 8 MiB limit, with incompressible padding: the
		// package is about 14 MiB, its base64 about 19.
		files := map[string]string{
			"capabilities/echo.wasm":    string(padTo(mods["echo"], 8<<20)),
			"capabilities/loop.wasm":    string(padTo(mods["loop"], 8<<20)),
			"capabilities/exit3.wasm":   string(mods["exit3"]),
			"capabilities/request.wasm": string(mods["request"]),
		}
		var inst struct {
			InstallPlugin struct{ ID string } `json:"installPlugin"`
		}
		pkg := pub.Sign(t, m, files)
		if len(pkg) < 18<<20 {
			t.Fatalf("the package's base64 has only %d bytes", len(pkg))
		}
		c.Must(t, installMutation, map[string]any{"p": pkg}, &inst)
		var created struct {
			CreateInstance struct{ ID string } `json:"createInstance"`
		}
		c.Must(t, instanceMutation, map[string]any{"i": inst.InstallPlugin.ID, "n": "Work"}, &created)
		id := created.CreateInstance.ID
		const invoke = `mutation($i:ID!,$c:String!,$a:JSON,$g:Int){invoke(instanceId:$i,capability:$c,arguments:$a,generation:$g){summary data evidence{key}}}`

		var echoed struct {
			Invoke struct {
				Summary string
				Data    map[string]any
			}
		}
		// The install compiles the package's modules in the background; a run
		// that comes first waits for its module, and a client tries again
		// while the answer is busy.
		data, errs := retryWhileCompiling(t, c, invoke, map[string]any{"i": id, "c": "notes.echo", "a": map[string]any{"n": 5}, "g": 1})
		if len(errs) > 0 {
			t.Fatalf("echo: %+v", errs)
		}
		if err := json.Unmarshal(data["invoke"], &echoed.Invoke); err != nil {
			t.Fatal(err)
		}
		if echoed.Invoke.Summary != "echo" || echoed.Invoke.Data["n"] != float64(5) {
			t.Fatalf("echo answered %+v", echoed)
		}

		// While a module loops, the server answers other requests and runs.
		var wg sync.WaitGroup
		wg.Add(1)
		var loopErrs []GQLError
		go func() {
			defer wg.Done()
			_, loopErrs = retryWhileCompiling(t, c, invoke, map[string]any{"i": id, "c": "notes.loop"})
		}()
		c.Must(t, invoke, map[string]any{"i": id, "c": "notes.echo", "a": map[string]any{"n": 1}}, &echoed)
		c.Must(t, `{viewer{id}}`, nil, nil)
		wg.Wait()
		if len(loopErrs) != 1 || loopErrs[0].Code() != "CAPABILITY_FAILED" || loopErrs[0].Extensions["reason"] != "timeout" {
			t.Fatalf("loop: %+v", loopErrs)
		}

		for _, tt := range []struct {
			capability string
			args       map[string]any
			generation any
			code       string
			reason     string
		}{
			{"notes.exit", nil, nil, "CAPABILITY_FAILED", "exit"},
			{"notes.none", nil, nil, "CAPABILITY_FAILED", "no_module"},
			{"notes.echo", map[string]any{"n": 6}, nil, "BAD_USER_INPUT", ""},
			{"notes.echo", nil, 2, "PLUGIN_STORAGE_CONFLICT", ""},
		} {
			_, errs := retryWhileCompiling(t, c, invoke, map[string]any{"i": id, "c": tt.capability, "a": tt.args, "g": tt.generation})
			if len(errs) != 1 || errs[0].Code() != tt.code {
				t.Fatalf("%s: %+v, want %s", tt.capability, errs, tt.code)
			}
			e := errs[0]
			if tt.reason != "" && e.Extensions["reason"] != tt.reason {
				t.Fatalf("%s: %+v", tt.capability, e)
			}
			if tt.reason == "exit" && e.Extensions["exitCode"] != float64(3) {
				t.Fatalf("exit code: %+v", e)
			}
			if tt.code == "BAD_USER_INPUT" && e.Extensions["problems"] == nil {
				t.Fatalf("input problems missing: %+v", e)
			}
		}

		// The AI lists runnable tools and runs them by handle.
		var tools struct {
			AiTools []struct{ Handle, Capability string }
		}
		c.Must(t, `{aiTools{handle capability}}`, nil, &tools)
		handle := ""
		for _, tool := range tools.AiTools {
			if tool.Capability == "notes.echo" {
				handle = tool.Handle
			}
		}
		if handle == "" {
			t.Fatalf("aiTools: %+v", tools)
		}
		var ai struct {
			AiInvoke struct{ Data map[string]any }
		}
		c.Must(t, `mutation($h:String!,$a:JSON){aiInvoke(handle:$h,arguments:$a){data}}`, map[string]any{"h": handle, "a": map[string]any{"n": 2}}, &ai)
		if ai.AiInvoke.Data["n"] != float64(2) {
			t.Fatalf("aiInvoke: %+v", ai)
		}
		c.Fail(t, "PLUGIN_STORAGE_INVALID", `mutation($h:String!,$a:JSON){aiInvoke(handle:$h,arguments:$a){data}}`,
			map[string]any{"h": handle, "a": map[string]any{"instance_id": id}})

		var runs struct {
			Instance struct {
				BackgroundRuns struct {
					Nodes []struct {
						Capability      string
						ScheduleSeconds int
						NextRunAt       string
					}
				}
			}
		}
		c.Must(t, `query($i:ID!){instance(id:$i){backgroundRuns{nodes{capability scheduleSeconds nextRunAt lastRunAt lastOutcome failures}}}}`, map[string]any{"i": id}, &runs)
		if len(runs.Instance.BackgroundRuns.Nodes) != 1 || runs.Instance.BackgroundRuns.Nodes[0].ScheduleSeconds != 60 {
			t.Fatalf("backgroundRuns %+v", runs)
		}

		resp, err := http.Get(h.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !regexp.MustCompile(`(?m)^pluginhost_capability_runs_total\{kind="(tool|data|skill)",outcome="timeout"\} 1$`).Match(body) {
			t.Fatalf("metrics lack the runs:\n%s", body)
		}
	})
}

// Two servers on one MariaDB database run the example's notes.archive (every
// 30 s) for an Instance: the audit trail holds one run per period, never two
// runs of one period.
func TestBackgroundAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for three background periods")
	}
	dsn := testenv.FreshMySQL(t)
	pub := NewPublisher(t)
	pkgFile := t.TempDir() + "/notes.phpkg"
	run(t, "package", "--dir", plugintest.Example(t, "../examples/notes"), "--key", pub.Prefix+".key", "--out", pkgFile)
	a := Start(t, dsn, pub.Dir)
	b := Start(t, dsn, pub.Dir)
	alice := &Client{URL: a.URL, Token: Token(t, dsn, "alice", false)}
	pkg, err := os.ReadFile(pkgFile)
	if err != nil {
		t.Fatal(err)
	}
	var inst struct {
		InstallPlugin struct{ ID string } `json:"installPlugin"`
	}
	alice.Must(t, installMutation, map[string]any{"p": base64.StdEncoding.EncodeToString(pkg)}, &inst)
	var created struct {
		CreateInstance struct{ ID string } `json:"createInstance"`
	}
	alice.Must(t, instanceMutation, map[string]any{"i": inst.InstallPlugin.ID, "n": "Work"}, &created)
	// Both replicas run notes.archive once on demand, so that each has its
	// module compiled: from then on a run takes a fraction of its period, and
	// the gaps between the ends of runs are the gaps between their periods.
	for _, c := range []*Client{alice, {URL: b.URL, Token: alice.Token}} {
		warmCapability(t, c, created.CreateInstance.ID, "notes.archive")
	}
	warm := time.Now()

	type entry struct{ Capability, Operation, Outcome, At string }
	var runs []entry
	for deadline := time.Now().Add(5 * time.Minute); len(runs) < 4; time.Sleep(2 * time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d background runs in 5 minutes after both replicas were ready: %+v", len(runs), runs)
		}
		var page struct {
			StorageAudit struct{ Nodes []entry }
		}
		alice.Must(t, `{storageAudit(actor:"background",first:100){nodes{capability operation outcome at}}}`, nil, &page)
		runs = runs[:0]
		for _, e := range page.StorageAudit.Nodes {
			if at, _ := time.Parse(time.RFC3339Nano, e.At); e.Operation == "run" && e.Capability == "notes.archive" && at.After(warm) {
				runs = append(runs, e)
			}
		}
	}
	b.Stop(t)
	a.Stop(t)
	// Newest first: each run is a period after the one before it (a period
	// starts at most a tick late, so two runs of one period would be
	// seconds apart). A run is recorded when it ends; the oldest one may
	// have begun before both replicas were ready, so the gaps are judged
	// from the second run on.
	for i := 0; i+2 < len(runs); i++ {
		later, _ := time.Parse(time.RFC3339Nano, runs[i].At)
		earlier, _ := time.Parse(time.RFC3339Nano, runs[i+1].At)
		if gap := later.Sub(earlier); gap < 25*time.Second {
			t.Fatalf("two runs %s apart: one period ran twice: %+v", gap, runs)
		}
		if runs[i].Outcome != "ok" {
			t.Fatalf("a run failed: %+v", runs[i])
		}
	}
}
