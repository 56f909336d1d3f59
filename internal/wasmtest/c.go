package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"pluginhost/internal/testenv"
)

// C builds the C source file with Debian's clang and wasi-libc into a WASI
// preview 1 module: a command, or with reactor a reactor
// (-mexec-model=reactor, with REACTOR defined). Without clang or wasi-libc
// the test is skipped (or fails when services are required).
func C(t testing.TB, file string, reactor bool) []byte {
	t.Helper()
	clang, err := exec.LookPath("clang")
	if err != nil {
		testenv.Missing(t, "clang (Debian: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32)")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	key := "c:" + abs
	args := []string{"--target=wasm32-wasi", "-O2", "-Wl,--strip-all"}
	if reactor {
		key += ":reactor"
		args = append(args, "-mexec-model=reactor", "-DREACTOR")
	}
	v, _ := built.LoadOrStore(key, &build{})
	b := v.(*build)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "pluginhost-c-")
		if err != nil {
			b.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "module.wasm")
		cmd := exec.Command(clang, append(args, "-o", out, abs)...)
		if b.out, b.err = cmd.CombinedOutput(); b.err == nil {
			var wasm []byte
			wasm, b.err = os.ReadFile(out)
			b.wasm = map[string][]byte{"": wasm}
		}
	})
	if b.err != nil {
		if _, err := os.Stat("/usr/include/wasm32-wasi"); err != nil {
			testenv.Missing(t, "wasi-libc (Debian: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32)")
		}
		t.Fatalf("clang %s: %v\n%s", file, b.err, b.out)
	}
	return b.wasm[""]
}
