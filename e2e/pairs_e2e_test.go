package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pluginhost/internal/testenv"
)

// benchDir is ../shared/bench beside the repository, where the load tool
// bench/pairs.sh runs lives; the test skips without it.
func benchDir(t *testing.T) string {
	dir, err := filepath.Abs("../../shared/bench")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "load", "main.go")); err != nil {
		t.Skipf("skipped: no load tool in %s (bench/pairs.sh runs the shared bench's)", dir)
	}
	return dir
}

// bench/pairs.sh runs the storage comparison round by round: in each, a
// fresh server for every binary it is given, loaded in turn, then its
// median for each; a round of two binaries compares a build before and
// after a change.
func TestPairsScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "base64", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool+" (bench/pairs.sh runs it)")
		}
	}
	bench := benchDir(t)
	load := filepath.Join(t.TempDir(), "load")
	build := exec.Command("go", "build", "-o", load, ".")
	build.Dir = filepath.Join(bench, "load")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the load tool: %v\n%s", err, out)
	}
	// pairs runs the script; code is its exit status.
	pairs := func(env []string, args ...string) (out, stderr string, code int) {
		cmd := exec.Command("bash", append([]string{"../bench/pairs.sh"}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"BENCH_DIR=" + bench, "LOAD_BIN=" + load, "DURATION=1s", "CLIENTS=4"}, env...)...)
		var errOut strings.Builder
		cmd.Stderr = &errOut
		stdout, _ := cmd.Output()
		code = -1 // not started
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return string(stdout), errOut.String(), code
	}

	t.Run("two builds", func(t *testing.T) {
		out, stderr, code := pairs([]string{"PEER=none", "PH_BINS=" + binary + " " + binary}, "1")
		if code != 0 {
			t.Fatalf("pairs.sh exited %d\n%s\n%s", code, out, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		round := regexp.MustCompile(`^round 1: (\S+) (\d+)/s p99 [\d.]+ ms · (\S+) (\d+)/s p99 [\d.]+ ms$`)
		m := round.FindStringSubmatch(lines[0])
		if len(lines) != 3 || m == nil || m[1] != binary || m[3] != binary {
			t.Fatalf("pairs.sh printed\n%s\nwant a round of both builds, then a median for each", out)
		}
		for i, line := range lines[1:] {
			rate, _ := strconv.Atoi(m[2+2*i])
			if want := binary + ": median " + strconv.Itoa(rate) + " updates/s"; line != want || rate == 0 {
				t.Errorf("summary %d: %q, want %q with a rate above 0", i, line, want)
			}
		}
	})

	t.Run("stops with a reason", func(t *testing.T) {
		for _, c := range []struct {
			name, want string
			code       int
			env        []string
			args       []string
		}{
			{"rounds not a number", `ROUNDS must be a positive number, not "six"`, 2, []string{"PEER=none"}, []string{"six"}},
			{"no rounds", `ROUNDS must be a positive number, not "0"`, 2, []string{"PEER=none"}, []string{"0"}},
			{"no peer", "PocketBase missing: set PB_BIN", 2, []string{"PB_BIN=" + filepath.Join(t.TempDir(), "none")}, []string{"1"}},
			// The server started, the load failed: the rounds stop there.
			{"load tool failing", "the load tool said: nothing (its exit status was not 0)", 1, []string{"PEER=none", "PH_BINS=" + binary, "LOAD_BIN=/bin/false"}, []string{"2"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				out, stderr, code := pairs(c.env, c.args...)
				if code != c.code || !strings.Contains(stderr, c.want) || strings.Contains(out, "round") {
					t.Errorf("pairs.sh exited %d printing %q and saying %q, want %d, no round and %q", code, out, stderr, c.code, c.want)
				}
			})
		}
	})

	t.Run("against PocketBase", func(t *testing.T) {
		pb := os.Getenv("PB_BIN")
		if pb == "" {
			t.Skip("skipped: PocketBase, the peer, is not installed: set PB_BIN to its examples/base")
		}
		out, stderr, code := pairs([]string{"PH_BINS=" + binary}, "1")
		if code != 0 {
			t.Fatalf("pairs.sh exited %d\n%s\n%s", code, out, stderr)
		}
		summary := regexp.MustCompile(`(?m)^\S+: median \d+ updates/s; against PocketBase (\d+\.\d\d)x \(4x or more in [01] of 1\)$`)
		if !regexp.MustCompile(`(?m)^round 1: \S+ \d+/s p99 [\d.]+ ms · pocketbase \d+/s p99 [\d.]+ ms$`).MatchString(out) || !summary.MatchString(out) {
			t.Fatalf("pairs.sh printed\n%s\nwant a round with PocketBase, then the ratio", out)
		}
	})
}
