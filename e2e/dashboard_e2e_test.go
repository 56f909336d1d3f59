package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
)

// TestDashboard drives the live dashboard in headless Chromium: it lists the
// user's Instances with usage against quota, shows changes as they are
// committed, and says when an Instance's live updates end.
func TestDashboard(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.dash", ns("notes", 1000), ns("tags", 500)), 2)
	alice.Must(t, createQ, map[string]any{"i": ids[0], "n": "notes", "k": "first", "v": "hello"}, nil)

	// Without a token the page is refused.
	if status, _ := (&Client{URL: h.URL}).REST(t, "GET", "/dashboard", nil); status != 401 {
		t.Fatalf("dashboard without a token: %d", status)
	}
	p := browser.Shared(t).Open(t, h.URL+"/dashboard", map[string]string{"Authorization": "Bearer " + alice.Token})
	p.WaitFor(`window.pluginhostDashboard && window.pluginhostDashboard.state().status === "live"`)
	row := func(id string) string { return fmt.Sprintf(`document.querySelector('tr[data-instance="%s"]')`, id) }
	p.WaitFor(row(ids[0]) + ` && ` + row(ids[1]))
	// first (5) + "hello" (7) = 12 bytes in notes.
	p.WaitFor(row(ids[0]) + `.querySelector('[data-namespace="notes"]').innerText.indexOf("1 keys, 0.0 KiB of 1.0 KiB") >= 0`)
	if got := p.EvalString(row(ids[0]) + `.querySelector(".rev").innerText`); got != "1" {
		t.Fatalf("revision shown %q, want 1", got)
	}

	// Changes from any path appear as they are committed.
	for i := 0; i < 3; i++ {
		alice.Must(t, createQ, map[string]any{"i": ids[0], "n": "tags", "k": fmt.Sprint("t", i), "v": i}, nil)
	}
	p.WaitFor(row(ids[0]) + `.querySelector(".rev").innerText === "4"`)
	p.WaitFor(row(ids[0]) + `.querySelector('[data-namespace="tags"]').innerText.indexOf("3 keys") >= 0`)
	p.WaitFor(`document.querySelector("#log").innerText.indexOf("create tags/t2") >= 0`)
	if status, _ := alice.REST(t, "DELETE", "/v1/plugin-instances/"+ids[0]+"/storage", nil); status != 200 {
		t.Fatal("reset failed")
	}
	p.WaitFor(row(ids[0]) + `.querySelector(".rev").innerText === "5"`)
	p.WaitFor(row(ids[0]) + `.querySelector('[data-namespace="notes"]').innerText.indexOf("0 keys") >= 0`)
	p.WaitFor(`document.querySelector("#log").innerText.indexOf("reset") >= 0`)

	// Disabling an Instance ends its live updates, visibly.
	alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){id}}`, map[string]any{"i": ids[1]}, nil)
	p.WaitFor(row(ids[1]) + `.innerText.indexOf("live updates ended") >= 0`)
	p.WaitFor(row(ids[1]) + `.innerText.indexOf("disabled") >= 0`)

	dir := os.Getenv("PLUGINHOST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "pluginhost-e2e-artifacts")
	}
	os.MkdirAll(dir, 0o755)
	shot := filepath.Join(dir, "dashboard.png")
	p.Screenshot(shot)
	t.Logf("screenshot: %s", shot)
}
