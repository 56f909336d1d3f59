// Command loadsubs measures live delivery under load: it starts a pluginhost
// server, with its default limits, on a fresh SQLite database, opens N idle
// websocket subscribers spread over K Instances and over as many users as
// the per-user socket bound needs (each user with a storage-only plugin and
// Instances of its own), reports the server's memory per idle subscriber,
// then sends a burst of writes and reports the delay from sending a write to
// each subscriber receiving its change (p50, p90, p99, max).
//
// Run it from the repository root:
//
//	go run ./cmd/loadsubs -subscribers 10000
//
// The server runs in its own process, so its memory is not mixed with the
// load client's.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	subscribers := flag.Int("subscribers", 10000, "idle websocket subscribers, one subscription each")
	instances := flag.Int("instances", 100, "Instances the subscribers are spread over")
	writes := flag.Int("writes", 1000, "writes in the burst, spread over the Instances")
	writers := flag.Int("writers", 16, "concurrent writers of the burst")
	perUser := flag.Int("per-user", 32, "subscribers (one websocket each) per user: at most the server's --max-websockets-per-user")
	flag.StringVar(&serverFlags, "server-flags", "", "more flags of pluginhost serve, separated by spaces (for example --max-websockets-per-user 20000)")
	binary := flag.String("binary", "", "pluginhost binary (default: go build it)")
	heapProfile = flag.String("heapprofile", "", "write the server's heap profile with the subscribers idle to this file")
	flag.Parse()
	if err := run(*subscribers, *instances, *writes, *writers, *perUser, *binary); err != nil {
		fmt.Fprintln(os.Stderr, "loadsubs:", err)
		os.Exit(1)
	}
}

var heapProfile *string

var serverFlags string

func run(nSubs, nInst, nWrites, nWriters, perUser int, binary string) error {
	dir, err := os.MkdirTemp("", "loadsubs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if binary == "" {
		binary = filepath.Join(dir, "pluginhost")
		step("building pluginhost")
		if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
			return fmt.Errorf("go build (run from the repository root): %v\n%s", err, out)
		}
	}
	db := "sqlite:" + filepath.Join(dir, "load.db")
	keys := filepath.Join(dir, "keys")
	os.MkdirAll(keys, 0o700)
	cli := func(args ...string) (string, error) {
		out, err := exec.Command(binary, args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	if _, err := cli("keygen", "--out", filepath.Join(keys, "load")); err != nil {
		return fmt.Errorf("keygen: %v", err)
	}
	// A storage-only plugin, installed by every user.
	plugin := filepath.Join(dir, "plugin")
	os.MkdirAll(plugin, 0o700)
	manifest := `{"id":"com.example.load","name":"Load","version":"1.0.0","schema_version":2,"permissions":["storage"],` +
		`"data_policy":"purge","storage":{"version":1,"namespaces":[{"id":"notes","max_bytes":65536}]}}`
	if err := os.WriteFile(filepath.Join(plugin, "manifest.json"), []byte(manifest), 0o600); err != nil {
		return err
	}
	pkgFile := filepath.Join(dir, "load.phpkg")
	if _, err := cli("package", "--dir", plugin, "--key", filepath.Join(keys, "load.key"), "--out", pkgFile); err != nil {
		return fmt.Errorf("package the load plugin: %v", err)
	}
	pkg, _ := os.ReadFile(pkgFile)
	nUsers := (nSubs + perUser - 1) / perUser
	nInst = max(nInst, nUsers) // every user has an Instance
	tokens := make([]string, nUsers)
	for u := range tokens {
		if tokens[u], err = cli("token", "create", "--user", fmt.Sprint("load", u), "--db", db); err != nil {
			return fmt.Errorf("token: %v", err)
		}
	}
	admin, err := cli("token", "create", "--user", "admin", "--admin", "--db", db)
	if err != nil {
		return fmt.Errorf("token: %v", err)
	}

	step("starting the server")
	srv := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--data-dir", dir, "--trusted-keys", keys, "--log-level", "info"},
		strings.Fields(serverFlags)...)...)
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	base, err := serverAddr(stderr)
	if err != nil {
		return err
	}
	c := &client{base: base, token: admin}
	step(fmt.Sprintf("%d users, each installing the plugin; %d Instances", nUsers, nInst))
	owner := make([]int, nInst) // Instance -> its user
	ids := make([]string, nInst)
	installs := make([]string, nUsers)
	for u := range tokens {
		uc := &client{base: base, token: tokens[u]}
		var in struct{ InstallPlugin struct{ ID string } }
		if err := uc.gql(`mutation($p:String!){installPlugin(package:$p){id}}`, map[string]any{"p": base64.StdEncoding.EncodeToString(pkg)}, &in); err != nil {
			return err
		}
		installs[u] = in.InstallPlugin.ID
	}
	for i := range ids {
		u := i % nUsers
		uc := &client{base: base, token: tokens[u]}
		var out struct{ CreateInstance struct{ ID string } }
		if err := uc.gql(`mutation($i:ID!){createInstance(installationId:$i){id}}`, map[string]any{"i": installs[u]}, &out); err != nil {
			return err
		}
		ids[i], owner[i] = out.CreateInstance.ID, u
	}

	before, err := c.metrics()
	if err != nil {
		return err
	}
	step(fmt.Sprintf("connecting %d subscribers over %d Instances", nSubs, nInst))
	perInst := make([]int, nInst)
	subs := make([]*sub, nSubs)
	sendTimes := make([][]atomic.Int64, nInst) // per Instance, per revision: unix nanoseconds
	for i := range sendTimes {
		sendTimes[i] = make([]atomic.Int64, nWrites/nInst+nWriters+2)
	}
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 128)
	start := time.Now()
	for i := range subs {
		perInst[i%nInst]++
		subs[i] = &sub{inst: i % nInst, sendTimes: sendTimes[i%nInst]}
		wg.Add(1)
		sem <- struct{}{}
		go func(s *sub) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.connect(base, tokens[owner[s.inst]], ids[s.inst]); err != nil {
				failed.Store(err)
			}
		}(subs[i])
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	step(fmt.Sprintf("%d subscribers connected in %v; idle for 5 s", nSubs, time.Since(start).Round(time.Millisecond)))
	time.Sleep(5 * time.Second)
	idle, err := c.metrics()
	if err != nil {
		return err
	}
	if *heapProfile != "" {
		if err := c.save("/debug/pprof/heap?gc=1", *heapProfile); err != nil {
			return err
		}
	}

	step(fmt.Sprintf("burst of %d writes by %d writers", nWrites, nWriters))
	burst := time.Now()
	for w := 0; w < nWriters && w < nInst; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// Writer w owns Instances w, w+writers, w+2*writers, ... so each
			// Instance's writes are sequential and its j-th write makes
			// storage revision j.
			var own []int
			for i := w; i < nInst; i += nWriters {
				own = append(own, i)
			}
			count := make([]int, nInst)
			for n := w; n < nWrites; n += min(nWriters, nInst) {
				i := own[(n/min(nWriters, nInst))%len(own)]
				count[i]++
				sendTimes[i][count[i]].Store(time.Now().UnixNano())
				wc := &client{base: base, token: tokens[owner[i]]}
				if err := wc.gql(`mutation($i:ID!,$k:String!){storageCreate(instanceId:$i,namespace:"notes",key:$k,value:{text:"x"}){summary}}`,
					map[string]any{"i": ids[i], "k": fmt.Sprint("k", count[i])}, nil); err != nil {
					failed.Store(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	writeTime := time.Since(burst)
	// Wait for the subscribers to receive every revision written.
	want := make([]int64, nInst)
	for i := range sendTimes {
		for r := len(sendTimes[i]) - 1; r > 0; r-- {
			if sendTimes[i][r].Load() != 0 {
				want[i] = int64(r)
				break
			}
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := true
		for _, s := range subs {
			if s.last.Load() < want[s.inst] {
				done = false
				break
			}
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lat []time.Duration
	missing, skipped := 0, 0
	for _, s := range subs {
		s.mu.Lock()
		lat = append(lat, s.latencies...)
		skipped += s.skipped
		s.mu.Unlock()
		if s.last.Load() < want[s.inst] {
			missing++
		}
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(float64(len(lat)-1)*p)]
	}
	mem := func(m, b map[string]float64, k string) float64 { return (m[k] - b[k]) / float64(nSubs) / 1024 }
	fmt.Printf("\nsubscribers            %d over %d Instances of %d users\n", nSubs, nInst, nUsers)
	live := func(m map[string]float64) float64 {
		return m["go_memstats_heap_inuse_bytes"] + m["go_memstats_stack_inuse_bytes"]
	}
	fmt.Printf("idle memory / sub      %.1f KiB live after GC (%.1f KiB heap in use + %.1f KiB goroutine stacks), %.1f KiB RSS, %.2f goroutines\n",
		(live(idle)-live(before))/float64(nSubs)/1024, mem(idle, before, "go_memstats_heap_inuse_bytes"), mem(idle, before, "go_memstats_stack_inuse_bytes"),
		mem(idle, before, "process_resident_memory_bytes"), (idle["go_goroutines"]-before["go_goroutines"])/float64(nSubs))
	fmt.Printf("burst                  %d writes in %v (%.0f writes/s)\n", nWrites, writeTime.Round(time.Millisecond), float64(nWrites)/writeTime.Seconds())
	fmt.Printf("deliveries             %d (%d coalesced into later ones, %d subscribers short of the last revision)\n", len(lat), skipped, missing)
	fmt.Printf("write-to-client delay  p50 %v  p90 %v  p99 %v  max %v\n", pct(0.5).Round(time.Microsecond), pct(0.9).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond))
	if missing > 0 {
		return fmt.Errorf("%d subscribers did not reach the last revision", missing)
	}
	return nil
}

func step(s string) { fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), s) }

var servingLine = regexp.MustCompile(`msg="pluginhost serving" addr=(\S+)`)

func serverAddr(stderr io.Reader) (string, error) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return "http://" + m[1], nil
		}
	}
	return "", fmt.Errorf("the server did not start")
}

type client struct{ base, token string }

func (c *client) gql(query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", c.base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("%s", r.Errors[0].Message)
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

// save writes an admin endpoint's answer to a file.
func (c *client) save(path, file string) error {
	req, _ := http.NewRequest("GET", c.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// metrics reads the server's gauges from /metrics after garbage collections
// (forced through the admin's /debug/pprof/heap?gc=1), so that memory figures
// count live data, not garbage waiting to be collected. Three collections
// bring idle goroutines' stacks to their steady size: the runtime halves an
// idle stack that uses under a quarter of itself at each collection, as a
// long-idle server does over time (it collects at least every two minutes).
func (c *client) metrics() (map[string]float64, error) {
	for range 3 {
		req, _ := http.NewRequest("GET", c.base+"/debug/pprof/heap?gc=1", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			return nil, fmt.Errorf("forcing a garbage collection: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get(c.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			m[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return m, sc.Err()
}

// sub is one subscriber.
type sub struct {
	inst      int
	sendTimes []atomic.Int64
	last      atomic.Int64
	mu        sync.Mutex
	latencies []time.Duration
	skipped   int
}

func (s *sub) connect(base, token, instanceID string) error {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second,
		ReadBufferSize: 1024, WriteBufferSize: 1024}
	conn, _, err := d.DialContext(context.Background(), strings.Replace(base, "http://", "ws://", 1)+"/graphql", nil)
	if err != nil {
		return err
	}
	conn.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	conn.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($i:ID!){storageChanged(instanceId:$i){storageRevision operation}}`, "variables": map[string]any{"i": instanceID}}})
	snapshot := make(chan error, 1)
	go func() {
		first := true
		revKey := []byte(`"storageRevision":`)
		for {
			_, b, err := conn.ReadMessage()
			now := time.Now().UnixNano()
			if err != nil {
				if first {
					snapshot <- err
				}
				return
			}
			// The load client shares the machine with the server: it finds the
			// revision in the message rather than decoding the whole of it.
			if bytes.Contains(b, []byte(`"type":"ping"`)) {
				conn.WriteJSON(map[string]any{"type": "pong"})
				continue
			}
			i := bytes.Index(b, revKey)
			if i < 0 || !bytes.Contains(b, []byte(`"type":"next"`)) {
				continue
			}
			j := i + len(revKey)
			k := j
			for k < len(b) && b[k] >= '0' && b[k] <= '9' {
				k++
			}
			rev, _ := strconv.ParseInt(string(b[j:k]), 10, 64)
			if first {
				first = false
				s.last.Store(rev)
				snapshot <- nil
				continue
			}
			s.mu.Lock()
			if prev := s.last.Load(); rev > prev+1 {
				s.skipped += int(rev - prev - 1)
			}
			if rev < int64(len(s.sendTimes)) {
				if t := s.sendTimes[rev].Load(); t != 0 {
					s.latencies = append(s.latencies, time.Duration(now-t))
				}
			}
			s.mu.Unlock()
			s.last.Store(rev)
		}
	}()
	select {
	case err := <-snapshot:
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("no snapshot within 60 s")
	}
}
