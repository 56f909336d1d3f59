package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/internal/plugintest"
	"pluginhost/internal/wasmtest"
	"pluginhost/weatherserver"
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

// pluginhost run makes a capability's fetch rounds to the manifest's hosts,
// through the flags' egress, with the key --api-key gives a connection.
func TestRunCommandFetches(t *testing.T) {
	service, err := weatherserver.Start("127.0.0.1:0", "wk_run_test")
	if err != nil {
		t.Fatal(err)
	}
	defer service.Close()
	dir := plugintest.Example(t, "../examples/weather")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, service.CA.PEM(), 0o644)
	port := strings.TrimPrefix(service.URL, "https://localhost:")
	manifest, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(strings.ReplaceAll(string(manifest), "localhost:8443", "localhost:"+port)), 0o644)
	storage := filepath.Join(t.TempDir(), "storage.json")
	os.WriteFile(storage, []byte(`{"storage_revision": 1, "namespaces": {"settings": [{"key": "service", "value": "`+service.URL+`", "revision": 1}]}}`), 0o644)
	base := []string{"run", "--dir", dir, "--storage", storage, "--arguments", `{"city": "Oslo"}`, "--cache-dir=" + filepath.Join(t.TempDir(), "cache")}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a lookup", []string{"--capability", "weather.lookup", "--egress-allow-private", "127.0.0.0/8,::1", "--egress-ca", ca}, 0, `"city": "Oslo"`},
		{"loopback not opened", []string{"--capability", "weather.lookup", "--egress-ca", ca}, 1, `"reason": "network_denied"`},
		{"the CA not trusted", []string{"--capability", "weather.lookup", "--egress-allow-private", "127.0.0.0/8,::1"}, 1, `"reason": "exit"`},
		{"the forecast without a key", []string{"--capability", "weather.forecast", "--egress-allow-private", "127.0.0.0/8,::1", "--egress-ca", ca}, 1, `"reason": "connection_required"`},
		{"the forecast with the key", []string{"--capability", "weather.forecast", "--egress-allow-private", "127.0.0.0/8,::1", "--egress-ca", ca, "--api-key", "weatherkey=wk_run_test"}, 0, `"days"`},
	} {
		code, out, errs := sh(t, append(base, tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("%s: exit %d (want %d)\n%s\n%s", tt.name, code, tt.code, out, errs)
		}
	}
}

// The author's commands work on the current folder when --dir is left out,
// and an empty --dir is a usage error that names it.
func TestFolderDefaultsToCurrent(t *testing.T) {
	notes := plugintest.Example(t, "../examples/notes")
	work := t.TempDir()
	if code, out, errs := sh(t, "keygen", "--out", filepath.Join(work, "me")); code != 0 {
		t.Fatalf("keygen: exit %d %s %s", code, out, errs)
	}
	cache := "--cache-dir=" + filepath.Join(work, "cache")
	t.Chdir(notes)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"run", []string{"run", "--capability", "notes.summary", cache}, 0, `"summary": "0 notes, 0 words"`},
		{"package", []string{"package", "--key", filepath.Join(work, "me.key"), "--out", filepath.Join(work, "notes.phpkg")}, 0, "packaged com.example.notes"},
		{"run, --dir empty", []string{"run", "--dir", "", "--capability", "notes.summary", cache}, 2, ""},
		{"package, --dir empty", []string{"package", "--dir", "", "--key", filepath.Join(work, "me.key"), "--out", filepath.Join(work, "x.phpkg")}, 2, ""},
		{"build, --dir empty", []string{"build", "--dir", "", cache}, 2, ""},
	}
	for _, tt := range tests {
		code, out, errs := sh(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) || (tt.code == 2 && !strings.Contains(errs, "--dir")) {
			t.Errorf("%s: exit %d (want %d)\n%s\n%s", tt.name, code, tt.code, out, errs)
		}
	}
}
