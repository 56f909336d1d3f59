package pluginbuild_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/internal/testenv"
	"pluginhost/pluginbuild"
	"pluginhost/sandbox"
	"pluginhost/scaffold"
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

// setManifest rewrites the example's manifest with old replaced by new.
func setManifest(t *testing.T, dir, old, new string) {
	t.Helper()
	file := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("the manifest does not hold %q", old)
	}
	if err := os.WriteFile(file, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A build applies the validator's path rules before it reads or writes
// anything: a module or a source out of the plugin folder, by .. or by a
// symbolic link, is refused with the rule, and nothing is written outside.
func TestBuildStaysInTheFolder(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, dir, outside string)
		want   string
	}{
		{"a module two levels up", func(t *testing.T, dir, outside string) {
			setManifest(t, dir, `"capabilities/summary.wasm"`, `"capabilities/../../x.wasm"`)
		}, `manifest.json /capabilities/0/module: "capabilities/../../x.wasm" is not a clean relative path`},
		{"a source out of the folder", func(t *testing.T, dir, outside string) {
			setManifest(t, dir, `"src/summary"`, `"../x"`)
		}, `manifest.json /capabilities/0/source: "../x" is not a clean relative path`},
		{"an absolute source", func(t *testing.T, dir, outside string) {
			setManifest(t, dir, `"src/summary"`, `"/tmp/x"`)
		}, `manifest.json /capabilities/0/source: "/tmp/x" is not a clean relative path`},
		{"a source that is a symbolic link out", func(t *testing.T, dir, outside string) {
			os.CopyFS(filepath.Join(outside, "x"), os.DirFS(filepath.Join(dir, "src", "summary")))
			os.RemoveAll(filepath.Join(dir, "src", "summary"))
			symlink(t, filepath.Join(outside, "x"), filepath.Join(dir, "src", "summary"))
		}, "src/summary is a symbolic link out of the plugin folder"},
		{"a source file that is a symbolic link out", func(t *testing.T, dir, outside string) {
			os.WriteFile(filepath.Join(outside, "extra.go"), []byte("package main\n"), 0o644)
			symlink(t, filepath.Join(outside, "extra.go"), filepath.Join(dir, "src", "summary", "extra.go"))
		}, "src/summary/extra.go is a symbolic link out of the plugin folder"},
		{"a module folder that is a symbolic link out", func(t *testing.T, dir, outside string) {
			symlink(t, outside, filepath.Join(dir, "capabilities"))
		}, "capabilities is a symbolic link out of the plugin folder"},
		{"a module file that is a symbolic link out", func(t *testing.T, dir, outside string) {
			os.MkdirAll(filepath.Join(dir, "capabilities"), 0o755)
			symlink(t, filepath.Join(outside, "summary.wasm"), filepath.Join(dir, "capabilities", "summary.wasm"))
		}, "capabilities/summary.wasm is a symbolic link out of the plugin folder"},
		{"a manifest that is a symbolic link out", func(t *testing.T, dir, outside string) {
			os.Rename(filepath.Join(dir, "manifest.json"), filepath.Join(outside, "manifest.json"))
			symlink(t, filepath.Join(outside, "manifest.json"), filepath.Join(dir, "manifest.json"))
		}, "manifest.json is a symbolic link out of the plugin folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "a", "b", "notes")
			if err := os.CopyFS(dir, os.DirFS("../examples/notes")); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(filepath.Join(dir, "capabilities"))
			outside := filepath.Join(base, "outside")
			os.MkdirAll(outside, 0o755)
			tt.change(t, dir, outside)
			before := listFiles(t, base)
			_, err := pluginbuild.Build(context.Background(), dir, newEngine(t), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
			if after := listFiles(t, base); after != before {
				t.Fatalf("the build wrote files:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// listFiles lists every path under dir, with its size.
func listFiles(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		fmt.Fprintf(&b, "%s:%d ", p, info.Size())
		return nil
	})
	return b.String()
}

// A Builder builds again only the sources whose files changed: an edit of
// a screen or of another source reuses the module.
func TestBuilderReuses(t *testing.T) {
	dir := copyExample(t)
	var log bytes.Buffer
	b := &pluginbuild.Builder{Engine: newEngine(t), Log: &log}
	reused := func() map[string]bool {
		t.Helper()
		built, err := b.Build(context.Background(), dir)
		if err != nil {
			t.Fatalf("build: %v\n%s", err, log.String())
		}
		out := map[string]bool{}
		for _, m := range built {
			out[m.Source] = m.Reused
		}
		return out
	}
	if got := reused(); got["src/summary"] || got["src/archive"] {
		t.Fatalf("a first build reused %v", got)
	}
	os.WriteFile(filepath.Join(dir, "ui", "main.json"), []byte(`{}`), 0o644)
	if got := reused(); !got["src/summary"] || !got["src/archive"] {
		t.Fatalf("after a screen's edit: reused %v, want both", got)
	}
	edit := filepath.Join(dir, "src", "archive", "main.go")
	src, _ := os.ReadFile(edit)
	os.WriteFile(edit, append(src, "\n// edited\n"...), 0o644)
	if got := reused(); !got["src/summary"] || got["src/archive"] {
		t.Fatalf("after an edit of src/archive: reused %v, want src/summary only", got)
	}
	// A module removed from the folder is written again.
	os.Remove(filepath.Join(dir, "capabilities", "summary.wasm"))
	if got := reused(); got["src/summary"] {
		t.Fatal("a removed module was not built again")
	}
	if _, err := os.Stat(filepath.Join(dir, "capabilities", "summary.wasm")); err != nil {
		t.Fatal(err)
	}
}

// A source of C files builds with clang and wasi-libc into a pre-initialized
// reactor, as a Go source does.
func TestBuildC(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		testenv.Missing(t, "clang (apt-get install "+pluginbuild.CPackages+")")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src", "count"), 0o755)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"id": "com.example.c", "name": "C", "version": "1.0.0", "schema_version": 2,
		"capabilities": [{"id": "c.count", "kind": "tool", "module": "capabilities/count.wasm", "source": "src/count"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "count", "count.c"), []byte(`#include <stdio.h>
#include "count.h"
static char request[1 << 16];
__attribute__((export_name("pluginhost_run"))) void run(void) {
	size_t n = fread(request, 1, sizeof request - 1, stdin);
	printf("{\"summary\":\"%d\",\"data\":{}}", twice((int)n));
	fflush(stdout);
}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "count", "count.h"), []byte("static int twice(int n) { return 2 * n; }\n"), 0o644)
	built, err := pluginbuild.Build(context.Background(), dir, newEngine(t), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "capabilities", "count.wasm"))
	if err != nil || len(built) != 1 {
		t.Fatalf("built %+v: %v", built, err)
	}
	m, facts, err := wasmbin.Check(wasm, wasmbin.Limits{})
	if err != nil || facts.Kind != wasmbin.KindReactor {
		t.Fatalf("%v %v", facts.Kind, err)
	}
	if _, ok := m.Export("_initialize"); ok {
		t.Fatal("the C module still exports _initialize: not pre-initialized")
	}
	// A C source that does not export pluginhost_run says how to.
	os.WriteFile(filepath.Join(dir, "src", "count", "count.c"), []byte("int main(void) { return 0; }\n"), 0o644)
	_, err = pluginbuild.Build(context.Background(), dir, newEngine(t), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `export_name("pluginhost_run")`) {
		t.Fatalf("got %v, want how to export pluginhost_run", err)
	}
}

// A folder made by pluginhost new builds in place, in its own module, with
// the kit the binary wrote into it; build makes that kit the binary's again
// when it differs, and leaves a kit folder the author made alone.
func TestBuildKeepsTheKitCurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	if _, err := scaffold.New(scaffold.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	kitFile := filepath.Join(dir, pluginbuild.KitDir, "kit.go")
	want, _ := os.ReadFile(kitFile)
	os.WriteFile(kitFile, append([]byte("// an old kit\n"), want...), 0o644)
	os.WriteFile(filepath.Join(dir, pluginbuild.KitDir, "gone.go"), []byte("package kit\n"), 0o644)
	if _, err := pluginbuild.Build(context.Background(), dir, newEngine(t), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(kitFile); !bytes.Equal(got, want) {
		t.Fatal("the kit was not made the binary's again")
	}
	if _, err := os.Stat(filepath.Join(dir, pluginbuild.KitDir, "gone.go")); err == nil {
		t.Fatal("a file that is not the kit's stayed in the kit folder")
	}
	// The author's own module named kit is theirs.
	os.WriteFile(filepath.Join(dir, pluginbuild.KitDir, "go.mod"), []byte("module pluginhost/kit\n\ngo 1.24\n"), 0o644)
	os.WriteFile(kitFile, append([]byte("// mine\n"), want...), 0o644)
	if _, err := pluginbuild.Build(context.Background(), dir, newEngine(t), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(kitFile); !bytes.HasPrefix(got, []byte("// mine\n")) {
		t.Fatal("build replaced a kit the author wrote")
	}
}
