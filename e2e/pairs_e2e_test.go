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
	pairs := func(t *testing.T, env []string, args ...string) (string, string, error) {
		cmd := exec.Command("bash", append([]string{"../bench/pairs.sh"}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"BENCH_DIR=" + bench, "LOAD_BIN=" + load, "DURATION=1s", "CLIENTS=4"}, env...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}

	t.Run("two builds", func(t *testing.T) {
		out, stderr, err := pairs(t, []string{"PEER=none", "PH_BINS=" + binary + " " + binary}, "1")
		if err != nil {
			t.Fatalf("pairs.sh: %v\n%s\n%s", err, out, stderr)
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

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			name, want string
			env        []string
			args       []string
		}{
			{"rounds not a number", `ROUNDS must be a positive number, not "six"`, []string{"PEER=none"}, []string{"six"}},
			{"no rounds", `ROUNDS must be a positive number, not "0"`, []string{"PEER=none"}, []string{"0"}},
			{"no peer", "PocketBase missing: set PB_BIN", []string{"PB_BIN=" + filepath.Join(t.TempDir(), "none")}, []string{"1"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, stderr, err := pairs(t, c.env, c.args...)
				if code := exitCode(err); code != 2 || !strings.Contains(stderr, c.want) {
					t.Errorf("pairs.sh exited %d saying %q, want 2 and %q", code, stderr, c.want)
				}
			})
		}
	})

	t.Run("against PocketBase", func(t *testing.T) {
		pb := os.Getenv("PB_BIN")
		if pb == "" {
			t.Skip("skipped: PocketBase, the peer, is not installed: set PB_BIN to its examples/base")
		}
		out, stderr, err := pairs(t, []string{"PH_BINS=" + binary}, "1")
		if err != nil {
			t.Fatalf("pairs.sh: %v\n%s\n%s", err, out, stderr)
		}
		summary := regexp.MustCompile(`(?m)^\S+: median \d+ updates/s; against PocketBase (\d+\.\d\d)x \(4x or more in [01] of 1\)$`)
		if !regexp.MustCompile(`(?m)^round 1: \S+ \d+/s p99 [\d.]+ ms · pocketbase \d+/s p99 [\d.]+ ms$`).MatchString(out) || !summary.MatchString(out) {
			t.Fatalf("pairs.sh printed\n%s\nwant a round with PocketBase, then the ratio", out)
		}
	})
}

// exitCode is the exit status err reports, 0 for none, -1 when it is not
// an exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
