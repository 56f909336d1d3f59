package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

const modules = "testdata/modules"

// cacheDir is the compilation cache the engines of this test binary share, as
// the engines of one server's restarts do.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pluginhost-sandbox-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newEngine(t testing.TB, l Limits) *Engine {
	t.Helper()
	e, err := New(context.Background(), cacheDir, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func compile(t testing.TB, e *Engine, name string) *Module {
	t.Helper()
	m, err := e.Compile(context.Background(), wasmtest.Module(t, modules, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Release(m) })
	return m
}

func job(m *Module, c models.Capability, args string) Job {
	if c.ID == "" {
		c.ID, c.Kind = "test.run", models.KindTool
	}
	return Job{Capability: c, Module: m, Request: Request{
		Capability: c.ID, Kind: c.Kind, Trigger: TriggerInvoke, Arguments: json.RawMessage(args),
		Instance: Instance{ID: "inst_1", InstallationID: "inl_1", Generation: 1},
	}}
}

func failure(t *testing.T, err error) *models.Error {
	t.Helper()
	var e *models.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v, want an application error", err)
	}
	return e
}

// Each way a run can fail has its reason, and returns nothing of the output.
func TestRunFailures(t *testing.T) {
	e := newEngine(t, Limits{Timeout: 4 * time.Second})
	schema := models.Capability{ID: "test.schema", Kind: models.KindTool,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`)}
	tests := []struct {
		name, module string
		capability   models.Capability
		args         string
		reason       string
		exitCode     int
		path         string
	}{
		{name: "an endless loop is stopped at its wall time", module: "loop", reason: models.ReasonTimeout},
		{name: "an hour of sleep is stopped at its wall time", module: "sleep", reason: models.ReasonTimeout},
		{name: "memory that grows without end is refused past 64 MiB", module: "memory", reason: models.ReasonMemory},
		{name: "os.Exit(3) fails with its code, its output unused", module: "exit3", reason: models.ReasonExit, exitCode: 3},
		{name: "garbage on standard output", module: "garbage", reason: models.ReasonBadOutput},
		{name: "300 KiB of output", module: "big", reason: models.ReasonOutputTooLarge},
		{name: "data that breaks the output schema, with the pointer", module: "echo", capability: schema, args: `{"count":"many"}`,
			reason: models.ReasonOutputSchema, path: "/count"},
		{name: "data missing a required member", module: "echo", capability: schema, args: `{}`, reason: models.ReasonOutputSchema, path: "/count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, rep, err := e.Run(context.Background(), job(compile(t, e, tt.module), tt.capability, tt.args))
			if res != nil {
				t.Fatalf("a failed run returned a result: %+v", res)
			}
			f := failure(t, err)
			if f.Code != models.ErrCapabilityFailed || f.Reason != tt.reason {
				t.Fatalf("got %s/%s (%s), want CAPABILITY_FAILED/%s", f.Code, f.Reason, f.Message, tt.reason)
			}
			if tt.exitCode != 0 {
				if f.ExitCode == nil || *f.ExitCode != tt.exitCode {
					t.Fatalf("exit code %v, want %d", f.ExitCode, tt.exitCode)
				}
				if !strings.Contains(string(rep.Stderr), "giving up with code 3") {
					t.Errorf("standard error not kept: %q", rep.Stderr)
				}
			}
			if tt.reason == models.ReasonOutputSchema {
				if len(f.Problems) == 0 || f.Problems[0].Path != tt.path {
					t.Fatalf("problems %+v, want one at %q", f.Problems, tt.path)
				}
			}
		})
	}
}

// A capability without a module cannot run.
func TestRunNoModule(t *testing.T) {
	e := newEngine(t, Limits{})
	_, _, err := e.Run(context.Background(), job(nil, models.Capability{}, `{}`))
	if f := failure(t, err); f.Reason != models.ReasonNoModule {
		t.Fatalf("got %v, want no_module", err)
	}
}

// Arguments that break input_schema never reach the module.
func TestRunInputSchema(t *testing.T) {
	e := newEngine(t, Limits{})
	c := models.Capability{ID: "test.in", Kind: models.KindTool,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","maximum":10}}}`)}
	m := compile(t, e, "echo")
	for _, tt := range []struct{ args, path string }{{`{"limit":11}`, "/limit"}, {`{"limit":"x"}`, "/limit"}, {`[1]`, ""}} {
		_, _, err := e.Run(context.Background(), job(m, c, tt.args))
		f := failure(t, err)
		if f.Code != models.ErrBadUserInput {
			t.Fatalf("%s: got %v, want BAD_USER_INPUT", tt.args, err)
		}
		if tt.path != "" && (len(f.Problems) == 0 || f.Problems[0].Path != tt.path) {
			t.Fatalf("%s: problems %+v, want one at %s", tt.args, f.Problems, tt.path)
		}
	}
	res, _, err := e.Run(context.Background(), job(m, c, `{"limit":10}`))
	if err != nil || string(res.Data) != `{"limit":10}` {
		t.Fatalf("arguments at the limit: %v %s", err, res.Data)
	}
}

// The module reads the request and answers; host actions come back for the
// caller to apply.
func TestRunRequestAndResult(t *testing.T) {
	e := newEngine(t, Limits{})
	j := job(compile(t, e, "request"), models.Capability{}, `{"host_actions":[{"type":"plugin_storage_delete","namespace":"n","key":"k","revision":1}]}`)
	q := "milk"
	j.Request.Query = &q
	j.Request.PluginStorage = &PluginStorage{StorageRevision: 7, Namespaces: map[string][]Item{"n": {{Key: "k", Value: json.RawMessage(`{"a":1}`), Revision: 1}}}}
	res, rep, err := e.Run(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Request Request `json:"request"`
	}
	if err := json.Unmarshal(res.Data, &data); err != nil {
		t.Fatal(err)
	}
	got := data.Request
	if got.Capability != "test.run" || got.Trigger != TriggerInvoke || *got.Query != "milk" || got.Instance.Generation != 1 ||
		got.PluginStorage.StorageRevision != 7 || got.PluginStorage.Namespaces["n"][0].Revision != 1 {
		t.Fatalf("the module read %+v", got)
	}
	if !strings.Contains(string(res.HostActions), "plugin_storage_delete") {
		t.Fatalf("host actions %s", res.HostActions)
	}
	if strings.TrimSpace(string(rep.Stderr)) != "request read" {
		t.Fatalf("stderr %q", rep.Stderr)
	}
}

// A module that tries to read or write a file, list a folder, dial a socket
// or read the environment gets an error inside the module, and nothing
// outside is touched.
func TestRunSandbox(t *testing.T) {
	e := newEngine(t, Limits{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("host data"), 0o600)
	target := filepath.Join(t.TempDir(), "escaped.txt")
	t.Setenv("PLUGINHOST_SANDBOX_CANARY", "visible")
	args, _ := json.Marshal(map[string]string{"read": secret, "write": target, "dial": ln.Addr().String()})
	res, _, err := e.Run(context.Background(), job(compile(t, e, "escape"), models.Capability{}, string(args)))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Read, Write, List, Dial string
		Environ, Args           []string
	}
	json.Unmarshal(res.Data, &got)
	for what, msg := range map[string]string{"read": got.Read, "write": got.Write, "list": got.List, "dial": got.Dial} {
		if msg == "" {
			t.Errorf("%s succeeded inside the sandbox", what)
		}
	}
	if len(got.Environ) != 0 || len(got.Args) != 0 {
		t.Errorf("the module saw environment %v and arguments %v", got.Environ, got.Args)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the module wrote a file outside: %v", err)
	}
	select {
	case <-accepted:
		t.Error("the module connected to a socket of the host")
	default:
	}
}

// While an endless loop runs, other runs go on; with the bound full, a run
// that gets no slot before its deadline is busy.
func TestRunConcurrency(t *testing.T) {
	e := newEngine(t, Limits{Timeout: 4 * time.Second, QueueWait: 500 * time.Millisecond, Concurrency: 2, PerInstance: 1})
	loop, echo := compile(t, e, "loop"), compile(t, e, "echo")
	var wg sync.WaitGroup
	wg.Add(1)
	started := make(chan struct{})
	go func() {
		defer wg.Done()
		close(started)
		e.Run(context.Background(), job(loop, models.Capability{}, `{}`))
	}()
	<-started
	// Wait until the loop holds its slot.
	for {
		e.mu.Lock()
		n := e.running["iinst_1"]
		e.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	other := job(echo, models.Capability{}, `{"a":1}`)
	other.Request.Instance.ID = "inst_2"
	if _, _, err := e.Run(context.Background(), other); err != nil {
		t.Fatalf("another Instance's run while a loop runs: %v", err)
	}
	_, _, err := e.Run(context.Background(), job(echo, models.Capability{}, `{}`))
	if f := failure(t, err); f.Reason != models.ReasonBusy {
		t.Fatalf("got %v, want busy", err)
	}
	// The same with the caller's deadline sooner than the queue wait.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err = e.Run(ctx, job(echo, models.Capability{}, `{}`))
	if f := failure(t, err); f.Reason != models.ReasonBusy {
		t.Fatalf("got %v, want busy", err)
	}
	wg.Wait()
}

// Output exactly at the limit is fine; one byte past it is output_too_large.
func TestRunOutputLimit(t *testing.T) {
	// {"summary":"echo","data":{"s":"..."}} plus a newline
	overhead := len(`{"data":{"s":""},"summary":"echo"}`) + 1
	for _, tt := range []struct {
		size int
		ok   bool
	}{{DefaultOutputBytes, true}, {DefaultOutputBytes + 1, false}} {
		e := newEngine(t, Limits{OutputBytes: 0})
		args, _ := json.Marshal(map[string]string{"s": strings.Repeat("a", tt.size-overhead)})
		_, _, err := e.Run(context.Background(), job(compile(t, e, "echo"), models.Capability{}, string(args)))
		if tt.ok && err != nil {
			t.Fatalf("%d bytes: %v", tt.size, err)
		}
		if !tt.ok {
			if f := failure(t, err); f.Reason != models.ReasonOutputTooLarge {
				t.Fatalf("%d bytes: %v", tt.size, err)
			}
		}
	}
}

// A module that is not WebAssembly, or not a command, is refused at compile.
func TestCompileRefuses(t *testing.T) {
	e := newEngine(t, Limits{})
	for name, wasm := range map[string][]byte{
		"not wasm":   []byte("hello"),
		"no _start":  {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00},
		"over 8 MiB": make([]byte, MaxModuleBytes+1),
	} {
		if _, err := e.Compile(context.Background(), wasm); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// A compilation goes on when its caller gives up (a request's deadline), and
// the module is kept for the next caller instead of compiled again.
func TestCompileOutlivesItsCaller(t *testing.T) {
	// No compilation cache on disk: the compilation takes a while.
	e, err := New(context.Background(), "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	wasm := wasmtest.Module(t, modules, "echo")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Compile(ctx, wasm); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that gave up got %v", err)
	}
	sum := sha256.Sum256(wasm)
	for {
		e.mu.Lock()
		_, compiling := e.pending[sum]
		m, kept := e.compiled[sum]
		e.mu.Unlock()
		if kept {
			if m.refs != 0 {
				t.Fatalf("the module kept for nobody has %d users", m.refs)
			}
			break
		}
		if !compiling {
			t.Fatal("the compilation stopped with its caller")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m, err := e.Compile(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release(m)
	if e.compiled[sum] != m {
		t.Fatal("the next caller compiled the module again")
	}
}

// TestCloseWaitsForCompilations: closing the engine while a compilation
// goes on in the background (its caller gone) waits for it instead of
// pulling the runtime from under it, and a closed engine compiles nothing.
func TestCloseWaitsForCompilations(t *testing.T) {
	e, err := New(context.Background(), "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	wasm := wasmtest.Module(t, modules, "echo")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Compile(gone, wasm); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that gave up got %v", err)
	}
	e.mu.Lock()
	compiling := len(e.pending)
	e.mu.Unlock()
	if compiling == 0 {
		t.Fatal("no compilation under way to close the engine under")
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Compile(context.Background(), wasm); !errors.Is(err, ErrClosed) {
		t.Fatalf("a closed engine compiled: %v", err)
	}
}
