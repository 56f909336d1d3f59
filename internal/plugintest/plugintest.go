// Package plugintest gives tests the example plugins built as an author
// builds them: pluginhost build (package pluginbuild) over a copy of the
// folder, once per test binary.
package plugintest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"pluginhost/bundle"
	"pluginhost/pluginbuild"
	"pluginhost/sandbox"
)

var examples sync.Map // absolute plugin folder -> *example

type example struct {
	once sync.Once
	dir  string // the built copy
	err  error
}

// Example returns a fresh copy of an example plugin folder (such as
// ../examples/notes) with its capabilities built by pluginhost build: every
// capability naming a source, into its module, pre-initialized. The build
// happens once per test binary run; each call gets its own copy, which the
// test may change.
func Example(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := examples.LoadOrStore(abs, &example{})
	e := v.(*example)
	e.once.Do(func() { e.dir, e.err = build(abs) })
	if e.err != nil {
		t.Fatalf("pluginhost build of %s: %v", dir, e.err)
	}
	cp := filepath.Join(t.TempDir(), filepath.Base(abs))
	if err := os.CopyFS(cp, os.DirFS(e.dir)); err != nil {
		t.Fatal(err)
	}
	return cp
}

// Package returns an example plugin built as Example builds it, as a
// package holds it: its manifest, decoded, and its other files (what the
// manifest names).
func Package(t testing.TB, dir string) (map[string]any, map[string][]byte) {
	t.Helper()
	folder, err := bundle.ReadPlugin(Example(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	files := folder.Files
	var m map[string]any
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		t.Fatal(err)
	}
	delete(files, "manifest.json")
	return m, files
}

// buildPrefix begins the name of the folder each test binary builds the
// examples in, followed by its process id and a dash: a test binary has no
// hook to remove it when it ends, so each build removes those of the test
// binaries that have ended.
const buildPrefix = "pluginhost-example-"

func build(src string) (string, error) {
	removeEnded(os.TempDir())
	tmp, err := os.MkdirTemp("", buildPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, filepath.Base(src))
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		return "", err
	}
	ctx := context.Background()
	engine, err := sandbox.New(ctx, filepath.Join(tmp, "cache"), sandbox.Limits{})
	if err != nil {
		return "", err
	}
	defer engine.Close(ctx)
	_, err = pluginbuild.Build(ctx, dir, engine, io.Discard)
	return dir, err
}

// removeEnded removes the build folders in dir of the processes that are no
// longer running.
func removeEnded(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), buildPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil && ended(n) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// ended reports whether no process of that id is running.
func ended(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	defer p.Release()
	return errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}
