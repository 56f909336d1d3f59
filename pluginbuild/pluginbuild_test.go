package pluginbuild_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/pluginbuild"
	"pluginhost/sandbox"
	"pluginhost/wasmbin"
)

func newEngine(t *testing.T) *sandbox.Engine {
	e, err := sandbox.New(context.Background(), t.TempDir(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// copyExample copies examples/notes outside this repository's module, as an
// author who copied it would have it.
func copyExample(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "notes")
	if err := os.CopyFS(dir, os.DirFS("../examples/notes")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "capabilities"))
	return dir
}

// The example, copied out of the repository, builds: each capability naming
// a source into its module, a pre-initialized reactor (no _initialize left to
// run), byte for byte the same on a second build.
func TestBuildExample(t *testing.T) {
	e := newEngine(t)
	dir := copyExample(t)
	var log bytes.Buffer
	built, err := pluginbuild.Build(context.Background(), dir, e, &log)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	if len(built) != 2 {
		t.Fatalf("built %+v, want the two capabilities", built)
	}
	first := map[string][32]byte{}
	for _, b := range built {
		wasm, err := os.ReadFile(filepath.Join(dir, b.Module))
		if err != nil {
			t.Fatal(err)
		}
		m, facts, err := wasmbin.Check(wasm, wasmbin.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", b.Module, err)
		}
		if facts.Kind != wasmbin.KindReactor {
			t.Fatalf("%s is a %s, want a reactor", b.Module, facts.Kind)
		}
		if _, ok := m.Export("_initialize"); ok {
			t.Fatalf("%s still exports _initialize: not pre-initialized", b.Module)
		}
		if !strings.Contains(log.String(), "built "+b.Capabilities[0]+" from "+b.Source+" into "+b.Module) {
			t.Fatalf("the log does not report %s:\n%s", b.Module, log.String())
		}
		first[b.Module] = sha256.Sum256(wasm)
	}
	if _, err := pluginbuild.Build(context.Background(), dir, e, &log); err != nil {
		t.Fatal(err)
	}
	for module, sum := range first {
		wasm, _ := os.ReadFile(filepath.Join(dir, module))
		if sha256.Sum256(wasm) != sum {
			t.Fatalf("%s differs on a second build: the build is not reproducible", module)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"a source that is not a folder", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "src", "summary"))
		}, "its source"},
		{"a source that does not compile", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "src", "summary", "broken.go"), []byte("package main\n\nfunc broken() { undefined() }\n"), 0o644)
		}, "undefined: undefined"},
		{"a source without the kit's entry", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "src", "summary"))
			os.MkdirAll(filepath.Join(dir, "src", "summary"), 0o755)
			os.WriteFile(filepath.Join(dir, "src", "summary", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
		}, "kit.Handle"},
		{"a manifest that is not JSON", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{"), 0o644)
		}, "pluginhost validate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyExample(t)
			tt.change(t, dir)
			_, err := pluginbuild.Build(context.Background(), dir, newEngine(t), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
