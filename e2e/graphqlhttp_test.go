package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"pluginhost/internal/testenv"
)

// TestGraphQLOverHTTPAudit runs the server audits of graphql-http (the npm
// package, written by others to check the GraphQL over HTTP specification)
// against a real server: every MUST and every SHOULD must pass.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	node := nodeWith(t, "graphqlhttp", "graphql-http")
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	cmd := exec.Command(node, "audit.mjs", h.URL, alice.Token)
	cmd.Dir = "graphqlhttp"
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit: %v\n%s", err, out)
	}
	var ran, must, should int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var r struct {
			ID, Name, Status, Reason string
			HTTPStatus               int
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit output %q: %v", sc.Text(), err)
		}
		ran++
		switch {
		case strings.HasPrefix(r.Name, "MUST"):
			must++
		case strings.HasPrefix(r.Name, "SHOULD"):
			should++
		default:
			if r.Status != "ok" {
				t.Logf("%s %s: %s (HTTP %d), a MAY", r.ID, r.Name, r.Reason, r.HTTPStatus)
			}
			continue
		}
		if r.Status != "ok" {
			t.Errorf("%s %s: %s: %s (HTTP %d)", r.ID, r.Name, r.Status, r.Reason, r.HTTPStatus)
		}
	}
	// The package's audit list: a run that checked next to nothing fails.
	if must < 10 || should < 20 {
		t.Fatalf("the audit ran %d audits, %d MUST and %d SHOULD; expected the full list", ran, must, should)
	}
	t.Logf("graphql-http audit: %d audits, %d MUST and %d SHOULD all ok", ran, must, should)
}
