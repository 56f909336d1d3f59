package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadmeWalkthrough runs the README's walk-through as written, in a copy of
// the repository, and checks what each step prints.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary from a copy of the repository")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- walkthrough:start -->\n```sh\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- walkthrough:end -->")
	if !ok || !ok2 {
		t.Fatal("README has no walk-through block between its markers")
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:8080"); err != nil {
		t.Fatalf("the walk-through uses 127.0.0.1:8080, which is taken: %v", err)
	} else {
		ln.Close()
	}
	repo := t.TempDir()
	files, err := exec.Command("git", "-C", "..", "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(files)) {
		src := filepath.Join("..", f)
		b, err := os.ReadFile(src)
		if err != nil {
			continue // deleted in the work tree
		}
		dst := filepath.Join(repo, f)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = repo
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the walk-through did not finish in 5 minutes")
	}
	text := string(out)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(repo, "server.log"))
		t.Fatalf("walk-through failed: %v\n%s\nserver log:\n%s", err, text, log)
	}
	for _, want := range []string{
		"wrote keys/me.key",
		"packaged com.example.notes 1.0.0",
		`"pluginId":"com.example.notes"`,
		`"createInstance":{"id":"inst_`,
		`Created \"groceries\" in namespace \"notes\" at revision 1`,
		`Updated \"groceries\" in namespace \"notes\" to revision 2`,
		`"value":{"text":"milk, eggs"}`,
		`"code":"PLUGIN_STORAGE_CONFLICT"`,
		`"deleted_items":1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("walk-through output lacks %s:\n%s", want, text)
		}
	}
}
