package e2e

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"pluginhost/internal/testenv"
)

// bench/load-server.sh starts a server for ../shared/bench's load tool and
// prints "URL TOKENS IDS PID": each token's user owns the Instance at the
// same place, and writes it with the load tool's own requests, while no user
// reaches another's Instance.
func TestLoadServerScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool+" (bench/load-server.sh runs it)")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command("bash", "../bench/load-server.sh", port)
	cmd.Env = append(os.Environ(), "PH_BIN="+binary, "LOAD_SERVER_DIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("load-server.sh: %v\n%s", err, stderr.String())
	}
	fields := strings.Fields(string(out))
	if len(fields) != 4 {
		t.Fatalf("load-server.sh printed %q, want URL TOKENS IDS PID", out)
	}
	url, tokens, ids := fields[0], strings.Split(fields[1], ","), strings.Split(fields[2], ",")
	pid, err := strconv.Atoi(fields[3])
	if err != nil {
		t.Fatalf("load-server.sh printed the pid %q", fields[3])
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if url != "http://127.0.0.1:"+port || len(tokens) != 32 || len(ids) != 32 {
		t.Fatalf("load-server.sh printed %s with %d tokens and %d Instances, want port %s, 32 and 32", url, len(tokens), len(ids), port)
	}

	// The load tool's requests: the key created, then updated at its revision.
	const create = `mutation($i:ID!,$k:String!,$v:JSON!){storageCreate(instanceId:$i,key:$k,value:$v){data}}`
	const update = `mutation($i:ID!,$k:String!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,key:$k,value:$v,revision:$r){data}}`
	for _, w := range []int{0, 31} {
		c := &Client{URL: url, Token: tokens[w]}
		c.Must(t, create, map[string]any{"i": ids[w], "k": "k0", "v": map[string]any{"n": 0}}, nil)
		c.Must(t, update, map[string]any{"i": ids[w], "k": "k0", "v": map[string]any{"n": 1}, "r": 1}, nil)
		other := ids[(w+1)%len(ids)]
		c.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", create, map[string]any{"i": other, "k": "k0", "v": map[string]any{"n": 0}})
	}
}
