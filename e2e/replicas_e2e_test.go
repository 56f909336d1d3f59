package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/testenv"
)

// twoReplicas starts two servers on one fresh MariaDB database, relaying
// through redisURL, with a plugin installed and an Instance created.
func twoReplicas(t *testing.T, redisURL string) (a, b *Server, alice *Client, instanceID string) {
	dsn := testenv.FreshMySQL(t)
	pub := NewPublisher(t)
	a = Start(t, dsn, pub.Dir, "--redis", redisURL)
	b = Start(t, dsn, pub.Dir, "--redis", redisURL)
	h := &host{Server: a, pub: pub}
	alice = &Client{URL: a.URL, Token: Token(t, dsn, "alice", false)}
	_, ids := h.install(t, alice, manifest("com.test.replicas", ns("n", 65536)), 1)
	return a, b, alice, ids[0]
}

// TestReplicasShareChanges: a write on replica A reaches a subscriber on B.
func TestReplicasShareChanges(t *testing.T) {
	redisURL := testenv.Redis(t)
	a, b, alice, id := twoReplicas(t, redisURL)
	ws := DialWS(t, b.URL, transportWS)
	ws.Init(alice.Token)
	ws.Subscribe("s", id)
	if c := ws.Change("s"); c.Operation != "snapshot" || c.StorageRevision != 0 {
		t.Fatalf("snapshot = %+v", c)
	}
	onA := &Client{URL: a.URL, Token: alice.Token}
	for i := 1; i <= 20; i++ {
		onA.Must(t, createQ, map[string]any{"i": id, "n": "n", "k": fmt.Sprint("k", i), "v": i}, nil)
	}
	for i := 1; i <= 20; i++ {
		c := ws.Change("s")
		if c.StorageRevision != i || c.Operation != "create" || *c.Key != fmt.Sprint("k", i) {
			t.Fatalf("change %d on B = %s", i, describe(c))
		}
	}
	// Disabling on A ends the subscription on B.
	onA.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){id}}`, map[string]any{"i": id}, nil)
	if p := ws.Failure("s"); !strings.Contains(p, "disabled") {
		t.Fatalf("after disable on A: %s", p)
	}
}

// TestRedisRestart: Redis goes away while replica A keeps writing; once it is
// back, the subscriber on B converges on the right revision.
func TestRedisRestart(t *testing.T) {
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server (Debian's redis-server package)")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	startRedis := func() *exec.Cmd {
		cmd := exec.Command(redisServer, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				return cmd
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("redis-server did not start")
		return nil
	}
	redis := startRedis()
	t.Cleanup(func() { redis.Process.Kill(); redis.Wait() })
	a, b, alice, id := twoReplicas(t, fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	ws := DialWS(t, b.URL, transportWS)
	ws.Init(alice.Token)
	ws.Subscribe("s", id)
	ws.Change("s")
	onA := &Client{URL: a.URL, Token: alice.Token}
	onA.Must(t, createQ, map[string]any{"i": id, "n": "n", "k": "before", "v": 1}, nil)
	if c := ws.Change("s"); c.StorageRevision != 1 {
		t.Fatalf("before the restart: %s", describe(c))
	}
	redis.Process.Kill()
	redis.Wait()
	for i := 0; i < 5; i++ { // committed while Redis is away: pub/sub loses them
		onA.Must(t, createQ, map[string]any{"i": id, "n": "n", "k": fmt.Sprint("during", i), "v": i}, nil)
	}
	time.Sleep(500 * time.Millisecond)
	redis = startRedis()
	// The subscriber converges on revision 6 without any further write.
	deadline := time.Now().Add(30 * time.Second)
	last := 1
	for last < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber on B is stuck at revision %d; want 6\nA:\n%s\nB:\n%s", last, a.Log(), b.Log())
		}
		c := ws.Change("s")
		if c.StorageRevision <= last {
			t.Fatalf("revision went from %d to %d", last, c.StorageRevision)
		}
		last = c.StorageRevision
	}
	if !strings.Contains(b.Log(), "resynchronising") {
		t.Fatal("B did not log its resynchronisation")
	}
	// Relaying works again afterwards.
	onA.Must(t, createQ, map[string]any{"i": id, "n": "n", "k": "after", "v": 1}, nil)
	if c := ws.Change("s"); c.StorageRevision != 7 || c.Operation != "create" {
		t.Fatalf("after the restart: %s", describe(c))
	}
}
