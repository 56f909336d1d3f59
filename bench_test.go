package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
	"testing"
	"time"

	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// benchClients is the number of users of BenchmarkStorageUpdate, each with
// one client updating its own key.
const benchClients = 32

// BenchmarkStorageUpdate measures storageUpdate on SQLite with 32 users, each
// with one client that updates its own key at the revision of its previous
// write, three ways in the same run:
//
//   - direct: through the storage service, in this process;
//   - http: over HTTP + GraphQL to `pluginhost serve` in its own process,
//     built from this tree, with its default limits (the per-user bounds on);
//   - pocketbase: the peer, PocketBase's examples/base in its own process, a
//     record PATCH of a JSON field, one record per client. Its binary is
//     $PB_BIN, or `pocketbase` or `base` on PATH or in $(go env GOPATH)/bin
//     (GOTOOLCHAIN=go1.27.3 go install
//     github.com/pocketbase/pocketbase/examples/base@v0.40.4); without it
//     the sub-benchmark is skipped.
//
// One load client, in this process, drives the three. Each reports
// updates/s with p50 and p99; http and pocketbase also the CPU time of the
// server's process per update (a figure that depends less on what else the
// machine runs) and of the load client. http reports its rate as a share of
// direct's (%-of-direct), pocketbase http's rate and p99 against its own
// (http-x, http-p99-x: the target is over 4 and under 1).
//
//	go test -run '^$' -bench StorageUpdate -benchtime 60000x .
//
// Repeat the command rather than pass -count, which runs each target's runs
// back to back, so that http-x would compare every PocketBase run with the
// last http run.
//
// With PLUGINHOST_BENCH_SERVER_PROFILE=FILE, the http run also writes the
// server's CPU profile of its first 15 seconds to FILE (through the admin's
// /debug/pprof/profile): make the run last longer than that.
func BenchmarkStorageUpdate(b *testing.B) {
	var direct, overHTTP *result
	b.Run("direct", func(b *testing.B) { direct = startDirect(b).run(b) })
	b.Run("http", func(b *testing.B) {
		overHTTP = startPluginhost(b).run(b)
		if direct != nil {
			b.ReportMetric(100*overHTTP.rate/direct.rate, "%-of-direct")
		}
	})
	b.Run("pocketbase", func(b *testing.B) {
		peer := startPocketBase(b).run(b)
		if overHTTP != nil {
			b.ReportMetric(overHTTP.rate/peer.rate, "http-x")
			b.ReportMetric(overHTTP.p99/peer.p99, "http-p99-x")
		}
	})
}

// result is what a target's run measured: updates/s and p99 in
// milliseconds.
type result struct{ rate, p99 float64 }

// target is what BenchmarkStorageUpdate's clients update: update sends
// client c's n-th update, whose key is at revision rev, and returns the
// revision after it.
type target struct {
	update func(c int, rev int64, n int) (int64, error)
	// profile, when set, starts the server's CPU profile as the updates
	// start; the returned function waits for it to be written.
	profile func() (wait func())
	pid     int // the server's process, whose CPU time is reported; 0: this one
	revs    []int64
}

// run sends b.N updates from benchClients clients and reports them.
func (tg *target) run(b *testing.B) *result {
	if tg.revs == nil {
		tg.revs = make([]int64, benchClients)
		for i := range tg.revs {
			tg.revs[i] = 1
		}
	}
	lat := make([][]time.Duration, benchClients)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	cpu0, client0 := processCPU(tg.pid), processCPU(0)
	wait := func() {}
	if tg.profile != nil {
		wait = tg.profile()
	}
	defer wait()
	b.ResetTimer()
	start := time.Now()
	for c := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				t0 := time.Now()
				rev, err := tg.update(c, tg.revs[c], int(n))
				if err != nil {
					failed.Store(err)
					return
				}
				tg.revs[c] = rev
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu, client := processCPU(tg.pid)-cpu0, processCPU(0)-client0
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
	r := &result{rate: float64(len(all)) / elapsed.Seconds(), p99: pct(0.99)}
	b.ReportMetric(r.rate, "updates/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(r.p99, "p99-ms")
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(all)) }
	if tg.pid == 0 {
		// The whole process: the storage service and its clients.
		b.ReportMetric(perOp(cpu), "cpu-µs/op")
	} else {
		b.ReportMetric(perOp(cpu), "server-cpu-µs/op")
		b.ReportMetric(perOp(client), "client-cpu-µs/op")
	}
	return r
}

// processCPU returns the CPU time a process has used: this one's when pid is
// 0.
func processCPU(pid int) time.Duration {
	if pid == 0 {
		return wasmtest.CPUTime()
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the line, in clock ticks of 1/100 s.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// startDirect makes benchClients users, each with an Instance and a key, on
// an in-process host, and updates through the storage service.
func startDirect(b *testing.B) *target {
	tuneRuntime() // as serve does
	env := fixture.New(b, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/bench.db"})
	ctx := context.Background()
	callers := make([]models.Caller, benchClients)
	instances := make([]string, benchClients)
	for i := range benchClients {
		u := env.User(b, fmt.Sprint("bench", i))
		callers[i] = models.Caller{UserID: u.ID}
		instances[i] = env.Instance(b, u, env.Install(b, u, fixture.Manifest("com.bench.notes", fixture.NS("n", 65536)))).ID
		if _, err := env.Store.Create(ctx, callers[i], instances[i], "n", "k", models.JSON(`{"count":0}`)); err != nil {
			b.Fatal(err)
		}
	}
	return &target{update: func(c int, rev int64, n int) (int64, error) {
		_, err := env.Store.Update(ctx, callers[c], instances[c], "n", "k", models.JSON(fmt.Sprintf(`{"count":%d}`, n)), rev)
		return rev + 1, err
	}}
}

// startPluginhost builds pluginhost, starts `pluginhost serve` on a fresh
// SQLite database with its default limits, makes benchClients users, each
// with a token, an Instance and a key, and updates over HTTP + GraphQL.
func startPluginhost(b *testing.B) *target {
	dir := b.TempDir()
	bin := filepath.Join(dir, "pluginhost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cli := func(args ...string) string {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			b.Fatalf("pluginhost %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	db := "sqlite:" + filepath.Join(dir, "bench.db")
	keys, plugin := filepath.Join(dir, "keys"), filepath.Join(dir, "plugin")
	os.Mkdir(keys, 0o700)
	os.Mkdir(plugin, 0o700)
	cli("keygen", "--out", filepath.Join(keys, "bench"))
	manifest, _ := json.Marshal(fixture.Manifest("com.bench.notes", fixture.NS("n", 65536)))
	os.WriteFile(filepath.Join(plugin, "manifest.json"), manifest, 0o600)
	cli("package", "--dir", plugin, "--key", filepath.Join(keys, "bench.key"), "--out", filepath.Join(dir, "bench.phpkg"))
	pkg, _ := os.ReadFile(filepath.Join(dir, "bench.phpkg"))
	tokens := make([]string, benchClients)
	for i := range tokens {
		tokens[i] = cli("token", "create", "--user", fmt.Sprint("bench", i), "--db", db)
	}

	srv := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--data-dir", dir, "--trusted-keys", keys)
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	base := servingAddr(b, stderr)
	gql := func(token, query string, vars map[string]any) map[string]any {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		var out struct {
			Data   map[string]any
			Errors []any
		}
		if err := postJSON(base+"/graphql", "Bearer "+token, body, &out); err != nil || len(out.Errors) > 0 {
			b.Fatalf("%s: %v %v", query, err, out.Errors)
		}
		return out.Data
	}
	instances := make([]string, benchClients)
	for i, tok := range tokens {
		in := gql(tok, `mutation($p:String!){installPlugin(package:$p){id}}`, map[string]any{"p": base64.StdEncoding.EncodeToString(pkg)})
		ci := gql(tok, `mutation($i:ID!){createInstance(installationId:$i){id}}`, map[string]any{"i": in["installPlugin"].(map[string]any)["id"]})
		instances[i] = ci["createInstance"].(map[string]any)["id"].(string)
		gql(tok, `mutation($i:ID!){storageCreate(instanceId:$i,namespace:"n",key:"k",value:{count:0}){summary}}`, map[string]any{"i": instances[i]})
	}

	var profile func() func()
	if out := os.Getenv("PLUGINHOST_BENCH_SERVER_PROFILE"); out != "" {
		admin := cli("token", "create", "--user", "benchadmin", "--admin", "--db", db)
		profile = func() func() {
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequest("GET", base+"/debug/pprof/profile?seconds=15", nil)
				req.Header.Set("Authorization", "Bearer "+admin)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Errorf("server profile: %v", err)
					return
				}
				defer resp.Body.Close()
				f, err := os.Create(out)
				if err == nil {
					_, err = io.Copy(f, resp.Body)
					f.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					b.Errorf("server profile: status %d, %v", resp.StatusCode, err)
				}
			}()
			return func() { <-done }
		}
	}

	// The request of ../shared/bench's load tool: the key and value as
	// variables, the namespace left to its default, the item's data asked
	// for.
	const query = `mutation($i:ID!,$k:String!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,key:$k,value:$v,revision:$r){data}}`
	prefix := []byte(`{"query":` + strconv.Quote(query) + `,"variables":{"k":"k","i":"`)
	conns := loadConns(b, strings.TrimPrefix(base, "http://"))
	return &target{pid: srv.Process.Pid, profile: profile, update: func(c int, rev int64, n int) (int64, error) {
		// The load client shares the machine with the server, so it is kept
		// lean: bodies are appended from fixed parts.
		body := append(prefix[:len(prefix):len(prefix)], instances[c]...)
		body = append(body, `","v":{"count":`...)
		body = strconv.AppendInt(body, int64(n), 10)
		body = append(body, `},"r":`...)
		body = strconv.AppendInt(body, rev, 10)
		body = append(body, `}}`...)
		return rev + 1, conns[c].send("POST", "/graphql", "Bearer "+tokens[c], body, true)
	}}
}

var servingLine = regexp.MustCompile(`msg="pluginhost serving" addr=(\S+)`)

// servingAddr reads the server's log up to the line that says where it
// listens, and discards the rest.
func servingAddr(b *testing.B, stderr io.Reader) string {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return "http://" + m[1]
		}
	}
	b.Fatal("the server did not start")
	return ""
}

// loadConn is one client's connection of the load client: HTTP/1.1 kept
// alive, each request written at once and its response read on the
// client's own goroutine. The load client shares the machine's cores with
// the server it measures, so it is kept lean: net/http's Transport hands
// each request and response between goroutines of its own, which took
// about 45 µs of processor time per update where this takes about 28 (see
// client-cpu-µs/op), and left the server that much less of the machine.
type loadConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
	out  []byte       // the request being written
	body bytes.Buffer // the response's body
}

// loadConns returns benchClients connections to addr, each dialed at its
// first request and closed when the benchmark ends.
func loadConns(b *testing.B, addr string) []loadConn {
	conns := make([]loadConn, benchClients)
	for i := range conns {
		conns[i].addr = addr
	}
	b.Cleanup(func() {
		for i := range conns {
			if c := conns[i].conn; c != nil {
				c.Close()
			}
		}
	})
	return conns
}

// send sends body to path and fails unless the answer is 200 (without
// GraphQL errors when graphql is set). A connection that fails is closed;
// the next request dials again.
func (lc *loadConn) send(method, path, auth string, body []byte, graphql bool) error {
	if lc.conn == nil {
		conn, err := net.Dial("tcp", lc.addr)
		if err != nil {
			return err
		}
		lc.conn, lc.r = conn, bufio.NewReader(conn)
	}
	lc.out = fmt.Appendf(lc.out[:0], "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		method, path, lc.addr, auth, len(body))
	lc.out = append(lc.out, body...)
	resp, err := lc.roundTrip()
	if err != nil || resp.Close {
		lc.conn.Close()
		lc.conn = nil
	}
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %v", method, path, err)
	case resp.StatusCode != 200 || graphql && bytes.Contains(lc.body.Bytes(), []byte(`"errors"`)):
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, lc.body.Bytes())
	}
	return nil
}

// roundTrip writes the request and reads the response, its body into
// lc.body.
func (lc *loadConn) roundTrip() (*http.Response, error) {
	if _, err := lc.conn.Write(lc.out); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(lc.r, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	lc.body.Reset()
	_, err = lc.body.ReadFrom(resp.Body)
	return resp, err
}

// postJSON posts body and decodes the JSON answer into out.
func postJSON(url, auth string, body []byte, out any) error {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, msg)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// pocketBase finds the peer's binary: $PB_BIN, `pocketbase` or `base` on
// PATH, or `base` where go install puts it, provided its help names
// PocketBase.
func pocketBase() (string, bool) {
	candidates := []string{os.Getenv("PB_BIN")}
	for _, name := range []string{"pocketbase", "base"} {
		if p, err := exec.LookPath(name); err == nil {
			candidates = append(candidates, p)
		}
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		candidates = append(candidates, filepath.Join(strings.TrimSpace(string(gopath)), "bin", "base"))
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if out, err := exec.Command(p, "--help").Output(); err == nil && bytes.Contains(out, []byte("PocketBase")) {
			return p, true
		}
	}
	return "", false
}

// startPocketBase starts PocketBase on a fresh data folder with a collection
// items (a text key, a JSON value) and one record per client, and PATCHes a
// client's record's value as its update.
func startPocketBase(b *testing.B) *target {
	bin, ok := pocketBase()
	if !ok {
		b.Skip("skipped: PocketBase, the peer, is not installed: set PB_BIN, or install its examples/base " +
			"(GOTOOLCHAIN=go1.27.3 go install github.com/pocketbase/pocketbase/examples/base@v0.40.4)")
	}
	dir := b.TempDir()
	if out, err := exec.Command(bin, "superuser", "upsert", "admin@example.com", "password12345", "--dir", dir).CombinedOutput(); err != nil {
		b.Fatalf("pocketbase superuser: %v\n%s", err, out)
	}
	addr := freeAddr(b)
	srv := exec.Command(bin, "serve", "--http", addr, "--dir", dir)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	base := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/api/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if i == 100 {
			b.Fatalf("pocketbase did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var auth struct{ Token string }
	if err := postJSON(base+"/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"admin@example.com","password":"password12345"}`), &auth); err != nil {
		b.Fatal(err)
	}
	var coll map[string]any
	if err := postJSON(base+"/api/collections", auth.Token,
		[]byte(`{"name":"items","type":"base","fields":[{"name":"key","type":"text"},{"name":"value","type":"json"}]}`), &coll); err != nil {
		b.Fatal(err)
	}
	records := make([]string, benchClients)
	for i := range records {
		var rec struct{ ID string }
		if err := postJSON(base+"/api/collections/items/records", auth.Token, fmt.Appendf(nil, `{"key":"k%d","value":{"count":0}}`, i), &rec); err != nil {
			b.Fatal(err)
		}
		records[i] = "/api/collections/items/records/" + rec.ID
	}
	conns := loadConns(b, addr)
	return &target{pid: srv.Process.Pid, update: func(c int, rev int64, n int) (int64, error) {
		return rev + 1, conns[c].send("PATCH", records[c], auth.Token, fmt.Appendf(nil, `{"value":{"count":%d}}`, n), false)
	}}
}

// freeAddr returns a loopback address with a port no one listens on.
func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
