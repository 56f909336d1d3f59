package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/bundle"
	"pluginhost/internal/plugintest"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// sh runs the binary's commands in-process, as the user types them.
func sh(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestPluginAuthorCommands(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "me")
	if code, out, errs := sh(t, "keygen", "--out", prefix); code != 0 || !strings.Contains(out, "me.pub (key id") {
		t.Fatalf("keygen: exit %d %s %s", code, out, errs)
	}
	if st, err := os.Stat(prefix + ".key"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key: %v %v", st, err)
	}
	notes := plugintest.Example(t, "../examples/notes")
	pkg := filepath.Join(dir, "notes.phpkg")
	code, out, errs := sh(t, "package", "--dir", notes, "--key", prefix+".key", "--out", pkg)
	if code != 0 || !strings.Contains(out, "packaged com.example.notes") {
		t.Fatalf("package: exit %d %s %s", code, out, errs)
	}
	data, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Open(data); err != nil {
		t.Fatalf("the package does not open: %v", err)
	}

	// An invalid plugin is refused with its problems, and nothing is written.
	bad := plugintest.Example(t, "../examples/notes")
	manifest, _ := os.ReadFile("../examples/notes/manifest.json")
	os.WriteFile(filepath.Join(bad, "manifest.json"), bytes.Replace(manifest, []byte(`"data_policy": "retain"`), []byte(`"data_policy": "keep"`), 1), 0o644)
	badPkg := filepath.Join(dir, "bad.phpkg")
	code, out, errs = sh(t, "package", "--dir", bad, "--key", prefix+".key", "--out", badPkg)
	if code != 1 || !strings.Contains(out, "/data_policy") || !strings.Contains(errs, "nothing was packaged") {
		t.Fatalf("package of an invalid plugin: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(badPkg); !os.IsNotExist(err) {
		t.Errorf("a package was written for an invalid plugin: %v", err)
	}

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"valid folder", []string{"validate", notes}, 0, "valid ("},
		{"valid package", []string{"validate", pkg}, 0, "valid ("},
		{"valid manifest", []string{"validate", "../examples/notes/manifest.json"}, 0, "valid ("},
		{"one UI config with its manifest", []string{"validate", "../examples/notes/ui/main.json"}, 0, "valid ("},
		{"invalid folder", []string{"validate", bad}, 1, "invalid: 1 errors"},
		{"missing path", []string{"validate", filepath.Join(dir, "nothing")}, 2, ""},
		{"no path", []string{"validate"}, 2, ""},
		{"two paths", []string{"validate", "a", "b"}, 2, ""},
	}
	for _, tt := range tests {
		code, out, errs := sh(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("%s: exit %d (want %d)\n%s\n%s", tt.name, code, tt.code, out, errs)
		}
	}

	code, out, _ = sh(t, "validate", bad, "--json")
	var report struct {
		Valid  bool
		Errors []models.Problem
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 1 || report.Valid || len(report.Errors) != 1 ||
		report.Errors[0].Path != "/data_policy" || report.Errors[0].File != "manifest.json" {
		t.Errorf("validate --json: exit %d, %v, %+v", code, err, report)
	}

	html := filepath.Join(dir, "main.html")
	code, out, errs = sh(t, "preview", "--dir", notes, "--extension", "main", "--out", html)
	if code != 0 || !strings.Contains(out, "wrote "+html) {
		t.Fatalf("preview: exit %d %s %s", code, out, errs)
	}
	if b, _ := os.ReadFile(html); !bytes.Contains(b, []byte("<html")) {
		t.Error("the preview is not an HTML page")
	}
	if code, _, _ := sh(t, "preview", "--dir", bad, "--extension", "main", "--out", filepath.Join(dir, "bad.html")); code != 1 {
		t.Errorf("preview of an invalid plugin: exit %d, want 1", code)
	}
	if code, _, _ := sh(t, "preview", "--out", html); code != 2 {
		t.Errorf("preview without --dir or --config: exit %d, want 2", code)
	}
}

func TestVersion(t *testing.T) {
	if models.CompareVersions(models.HostVersion, uicatalog.MinHostVersion) < 0 {
		t.Errorf("host version %s is older than %s, whose UI features the host renders", models.HostVersion, uicatalog.MinHostVersion)
	}
	code, out, _ := sh(t, "version")
	if code != 0 || !strings.HasPrefix(out, "pluginhost "+models.HostVersion+" (ui_schema 2,") {
		t.Errorf("version: exit %d %q", code, out)
	}
}

func TestTokenCreate(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "ph.db")
	code, out, errs := sh(t, "token", "create", "--user", "alice", "--db", dsn)
	if code != 0 || len(strings.TrimSpace(out)) < 20 || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "shown only once") {
		t.Fatalf("token create: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := sh(t, "token", "create", "--db", dsn); code != 2 || !strings.Contains(errs, "--user is required") {
		t.Errorf("token create without --user: exit %d %q", code, errs)
	}
	if code, _, _ := sh(t, "token"); code != 2 {
		t.Errorf("token without a subcommand: exit %d, want 2", code)
	}
}

// TestTokenListRevoke: token create --ttl, token list --user and token revoke
// as an operator uses them; errors name what is wrong.
func TestTokenListRevoke(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "ph.db")
	code, token, errs := sh(t, "token", "create", "--user", "bob", "--ttl", "720h", "--db", dsn)
	if code != 0 || !strings.Contains(errs, "expires ") {
		t.Fatalf("token create --ttl: exit %d %q", code, errs)
	}
	id := strings.Fields(strings.TrimPrefix(errs, "token "))[0]
	if code, _, errs := sh(t, "token", "create", "--user", "bob", "--db", dsn); code != 0 || !strings.Contains(errs, "never expires") {
		t.Fatalf("token create: exit %d %q", code, errs)
	}
	code, out, errs := sh(t, "token", "list", "--user", "bob", "--db", dsn)
	if code != 0 || strings.Count(out, "\n") != 3 || strings.Count(out, "active") != 2 || !strings.Contains(out, id) {
		t.Fatalf("token list: exit %d %q %q", code, out, errs)
	}
	if strings.Contains(out, strings.TrimSpace(token)) {
		t.Fatal("token list shows a token")
	}
	if code, out, errs := sh(t, "token", "revoke", id, "--db", dsn); code != 0 || !strings.Contains(out, id+" of user bob revoked") {
		t.Fatalf("token revoke: exit %d %q %q", code, out, errs)
	}
	if _, out, _ := sh(t, "token", "list", "--user", "bob", "--db", dsn); strings.Count(out, "revoked") != 1 || strings.Count(out, "active") != 1 {
		t.Fatalf("token list after revoke: %q", out)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token", "revoke", "tok_nothing", "--db", dsn}, 1, "tok_nothing"},
		{[]string{"token", "revoke", "--db", dsn}, 2, "one token id"},
		{[]string{"token", "list", "--user", "nobody", "--db", dsn}, 1, "nobody"},
		{[]string{"token", "list", "--db", dsn}, 2, "--user is required"},
		{[]string{"token", "create", "--user", "bob", "--ttl", "500ms", "--db", dsn}, 2, "--ttl"},
		{[]string{"token", "create", "--user", "bob", "--ttl", "soon", "--db", dsn}, 2, "ttl"},
	} {
		if code, _, errs := sh(t, tt.args...); code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%s: exit %d %q; want %d naming %q", strings.Join(tt.args, " "), code, errs, tt.code, tt.want)
		}
	}
}

// A UI config beside a manifest that cannot be read as one is refused with
// an error that names the manifest (exit 2), not a panic.
func TestValidateConfigBesideUnparsableManifest(t *testing.T) {
	dir := t.TempDir()
	config, err := os.ReadFile("../examples/notes/ui/main.json")
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "ui"), 0o755)
	os.WriteFile(filepath.Join(dir, "ui", "main.json"), config, 0o644)
	for _, manifest := range []string{`{"id": "com.example.notes",`, `["not", "an", "object"]`} {
		os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644)
		code, out, errs := sh(t, "validate", filepath.Join(dir, "ui", "main.json"))
		if code != 2 || !strings.Contains(errs, "manifest.json") {
			t.Errorf("manifest %s: exit %d (want 2)\n%s\n%s", manifest, code, out, errs)
		}
	}
}

// A command without positional arguments in its synopsis refuses any, before
// it runs, naming the first.
func TestNoPositionalArguments(t *testing.T) {
	out := filepath.Join(t.TempDir(), "me")
	for _, args := range [][]string{
		{"version", "extra"},
		{"health", "extra"},
		{"keygen", "--out", out, "extra"},
		{"token", "list", "--user", "u1", "extra"},
		{"preview", "--config", "c.json", "--out", out, "extra"},
		{"run", "--dir", ".", "--capability", "x", "extra"},
	} {
		code, _, errs := sh(t, args...)
		if code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
			t.Errorf("%q: exit %d (want 2)\n%s", args, code, errs)
		}
	}
	if _, err := os.Stat(out + ".key"); !os.IsNotExist(err) {
		t.Errorf("keygen ran with an extra argument: %v", err)
	}
}
