// Package wasmtest builds the WebAssembly test modules of a package from their
// Go sources, as a plugin author would: GOOS=wasip1 GOARCH=wasm go build. Each
// folder of Go sources is built once per test binary run.
package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var built sync.Map // absolute source folder -> *build

type build struct {
	once sync.Once
	wasm map[string][]byte
	err  error
	out  []byte
}

// Modules builds every main package below dir (each a folder of Go sources,
// such as testdata/modules/echo) to a wasip1 module and returns the modules by
// folder name. A failed build fails the test.
func Modules(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := built.LoadOrStore(abs, &build{})
	b := v.(*build)
	b.once.Do(func() { b.wasm, b.out, b.err = compile(abs) })
	if b.err != nil {
		t.Fatalf("build the test modules of %s: %v\n%s", dir, b.err, b.out)
	}
	return b.wasm
}

// Reactors builds every main package below dir as a reactor module
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared: it exports
// _initialize and the functions the package exports with go:wasmexport) and
// returns the modules by folder name.
func Reactors(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := built.LoadOrStore("reactors:"+abs, &build{})
	b := v.(*build)
	b.once.Do(func() { b.wasm, b.out, b.err = compileEach(abs, "-buildmode=c-shared") })
	if b.err != nil {
		t.Fatalf("build the reactor modules of %s: %v\n%s", dir, b.err, b.out)
	}
	return b.wasm
}

// Reactor returns one reactor module built from dir/name.
func Reactor(t testing.TB, dir, name string) []byte {
	t.Helper()
	m, ok := Reactors(t, dir)[name]
	if !ok {
		t.Fatalf("no reactor module %s in %s", name, dir)
	}
	return m
}

// compileEach builds each folder of dir on its own (a c-shared build takes
// one main package), with the given build flags.
func compileEach(dir string, flags ...string) (map[string][]byte, []byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	out, err := os.MkdirTemp("", "pluginhost-wasm-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(out)
	mods := map[string][]byte{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		file := filepath.Join(out, e.Name()+".wasm")
		args := append(append([]string{"build"}, flags...), "-o", file, ".")
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(dir, e.Name())
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, msg, err
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		mods[e.Name()] = b
	}
	return mods, nil, nil
}

// Module returns one module built from dir/name.
func Module(t testing.TB, dir, name string) []byte {
	t.Helper()
	m, ok := Modules(t, dir)[name]
	if !ok {
		t.Fatalf("no test module %s in %s", name, dir)
	}
	return m
}

func compile(dir string) (map[string][]byte, []byte, error) {
	out, err := os.MkdirTemp("", "pluginhost-wasm-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(out)
	cmd := exec.Command("go", "build", "-o", out+string(filepath.Separator), "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, msg, err
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, nil, err
	}
	mods := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			return nil, nil, err
		}
		mods[e.Name()] = b
	}
	return mods, nil, nil
}
