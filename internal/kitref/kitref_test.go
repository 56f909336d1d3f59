package kitref_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/internal/kitref"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// docs/kit.md is what the kit's code makes (CI's generate step checks it
// too).
func TestReferenceIsCurrent(t *testing.T) {
	want, err := kitref.Markdown("../../kit")
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../docs/kit.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Fatal(kitref.ErrStale)
	}
	for _, want := range []string{"func Reply(summary string, data map[string]any) *Result", "func (r *Request) Args(v any) error",
		"type Fetch struct {", "Connection   string            `json:\"connection,omitempty\"`", "## The C ABI", "#### (Request) Args"} {
		if !strings.Contains(string(have), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}

// A name of the kit without an example is an error that names it.
func TestEveryNameHasAnExample(t *testing.T) {
	dir := t.TempDir()
	files, _ := filepath.Glob("../../kit/*_test.go")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "reference_example_test.go" {
			// Without the example of Request.Args.
			start := strings.Index(string(b), "func ExampleRequest_Args()")
			end := strings.Index(string(b), "func ExampleRequest_Items()")
			b = append(b[:start:start], b[end:]...)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	_, err := kitref.Markdown(dir)
	if err == nil || !strings.Contains(err.Error(), "without an example") || !strings.Contains(err.Error(), "Request.Args") {
		t.Fatalf("got %v, want the missing Request.Args named", err)
	}
}

// The reference's C module, built with clang and wasi-libc and run in the
// sandbox, answers what the Go example it mirrors writes.
func TestCExampleWritesTheGoExamplesOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reply.c")
	if err := os.WriteFile(file, []byte(kitref.CExample), 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := wasmtest.C(t, file, true)
	ctx := context.Background()
	e, err := sandbox.New(ctx, t.TempDir(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release(m)
	res, _, err := e.Run(ctx, sandbox.Job{Capability: models.Capability{ID: "notes.summary", Kind: models.KindTool}, Module: m, Request: sandbox.Request{Capability: "notes.summary", Kind: models.KindTool,
		Trigger: sandbox.TriggerInvoke, Arguments: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := os.ReadFile("../../docs/kit.md")
	_, after, _ := strings.Cut(string(ref), "### func Reply")
	_, after, _ = strings.Cut(after, "Output:\n\n```\n")
	goOutput, _, _ := strings.Cut(after, "\n```")
	var want struct {
		Summary string
		Data    json.RawMessage
	}
	if err := json.Unmarshal([]byte(goOutput), &want); err != nil {
		t.Fatalf("the Go example's output %q: %v", goOutput, err)
	}
	if res.Summary != want.Summary || string(res.Data) != string(want.Data) {
		t.Fatalf("the C module answered %q %s; the Go example writes %s", res.Summary, res.Data, goOutput)
	}
}
