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

// TestReferenceJSClient subscribes with graphql-ws from npm, a client this
// project did not write, and sees the snapshot and the changes.
func TestReferenceJSClient(t *testing.T) {
	node := nodeWith(t, "jsclient", "graphql-ws")
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.js", ns("n", 1000)), 1)
	cmd := exec.Command(node, "subscribe.mjs", h.URL, alice.Token, ids[0], "4")
	cmd.Dir = "jsclient"
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var got []string
	read := func() {
		if !lines.Scan() {
			t.Fatalf("the client ended after %v", got)
		}
		var r struct {
			Data        struct{ StorageChanged Change }
			Errors      []GQLError
			ClientError string
		}
		json.Unmarshal(lines.Bytes(), &r)
		if r.ClientError != "" || len(r.Errors) > 0 {
			t.Fatalf("client: %s", lines.Text())
		}
		got = append(got, describe(r.Data.StorageChanged))
	}
	read() // the snapshot arrives before any write
	alice.Must(t, createQ, map[string]any{"i": ids[0], "k": "a", "v": 1}, nil)
	alice.Must(t, updateQ, map[string]any{"i": ids[0], "k": "a", "v": 2, "r": 1}, nil)
	alice.Must(t, deleteQ, map[string]any{"i": ids[0], "k": "a", "r": 2}, nil)
	for i := 0; i < 3; i++ {
		read()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client exit: %v", err)
	}
	want := "0 snapshot ,1 create n a,2 update n a,3 delete n a"
	if strings.Join(got, ",") != want {
		t.Fatalf("events = %v, want %s", got, want)
	}
}
