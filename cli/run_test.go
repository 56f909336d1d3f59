package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/internal/plugintest"
	"pluginhost/internal/wasmtest"
)

// pluginhost run runs a capability of a plugin folder with the server's
// limits and prints its result, or its error and exit 1.
func TestRunCommand(t *testing.T) {
	notes := plugintest.Example(t, "../examples/notes")
	storage := filepath.Join(t.TempDir(), "storage.json")
	os.WriteFile(storage, []byte(`{"storage_revision": 2, "namespaces": {"notes": [
		{"key": "a", "value": {"text": "one two three"}, "revision": 1},
		{"key": "b", "value": {"text": "done", "done": true}, "revision": 4}]}}`), 0o644)
	cache := "--cache-dir=" + filepath.Join(t.TempDir(), "cache")

	code, out, errs := sh(t, "run", "--dir", notes, "--capability", "notes.summary", "--storage", storage, cache)
	if code != 0 || !strings.Contains(out, `"summary": "2 notes, 4 words"`) {
		t.Fatalf("run summary: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = sh(t, "run", "--dir", notes, "--capability", "notes.archive", "--storage", storage, "--trigger", "schedule", cache)
	var res struct {
		Data struct {
			HostActions []map[string]any `json:"host_actions"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Data.HostActions) != 2 || res.Data.HostActions[1]["revision"] != float64(4) {
		t.Fatalf("run archive: exit %d %v\n%s\n%s", code, err, out, errs)
	}

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"arguments that break input_schema", []string{"--capability", "notes.summary", "--arguments", `{"limit": 0}`}, 1, `"code": "BAD_USER_INPUT"`},
		{"an undeclared capability", []string{"--capability", "notes.nope"}, 1, ""},
		{"arguments that are not JSON", []string{"--capability", "notes.summary", "--arguments", `{`}, 2, ""},
		{"no capability", nil, 2, ""},
	}
	for _, tt := range tests {
		code, out, errs := sh(t, append([]string{"run", "--dir", notes, cache}, tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("%s: exit %d (want %d)\n%s\n%s", tt.name, code, tt.code, out, errs)
		}
	}

	// A module that fails prints the error with its reason, and its standard
	// error.
	os.WriteFile(filepath.Join(notes, "capabilities", "summary.wasm"), wasmtest.Module(t, "../sandbox/testdata/modules", "exit3"), 0o644)
	code, out, errs = sh(t, "run", "--dir", notes, "--capability", "notes.summary", cache)
	if code != 1 || !strings.Contains(out, `"reason": "exit"`) || !strings.Contains(out, `"exitCode": 3`) || !strings.Contains(errs, "giving up with code 3") {
		t.Fatalf("a failing module: exit %d\n%s\n%s", code, out, errs)
	}
}
