package wasmtest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var examples sync.Map // absolute plugin folder -> *example

type example struct {
	once sync.Once
	dir  string // the built copy
	out  []byte
	err  error
}

// Example returns a fresh copy of an example plugin folder (such as
// ../examples/notes) with its capabilities built as its README says: every
// src/NAME of the folder to capabilities/NAME.wasm with GOOS=wasip1
// GOARCH=wasm. The build happens once per test binary run; each call gets
// its own copy, which the test may change.
func Example(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := examples.LoadOrStore(abs, &example{})
	e := v.(*example)
	e.once.Do(func() { e.dir, e.out, e.err = buildExample(abs) })
	if e.err != nil {
		t.Fatalf("build the capabilities of %s: %v\n%s", dir, e.err, e.out)
	}
	cp := filepath.Join(t.TempDir(), filepath.Base(abs))
	if err := copyDir(e.dir, cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

func buildExample(src string) (string, []byte, error) {
	dir, err := os.MkdirTemp("", "pluginhost-example-")
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(dir, filepath.Base(src))
	if err := copyDir(src, dir); err != nil {
		return "", nil, err
	}
	names, _ := os.ReadDir(filepath.Join(src, "src"))
	for _, n := range names {
		if !n.IsDir() {
			continue
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "capabilities", n.Name()+".wasm"), "./src/"+n.Name())
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", out, err
		}
	}
	return dir, nil, nil
}

func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
