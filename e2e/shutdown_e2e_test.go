package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
)

// goroutines reads the server's go_goroutines gauge from /metrics.
func goroutines(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	t.Fatal("no go_goroutines in /metrics")
	return 0
}

// TestNoGoroutineLeak: 10,000 connect, subscribe, disconnect cycles leave no
// goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	const cycles, workers = 10000, 16
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.leak", ns("n", 100)), 1)
	// Warm up, then measure.
	cycle := func(i int) error {
		proto := transportWS
		start := "subscribe"
		if i%2 == 1 {
			proto, start = legacyWS, "start"
		}
		d := websocket.Dialer{Subprotocols: []string{proto}}
		c, _, err := d.Dial(strings.Replace(h.URL, "http://", "ws://", 1)+"/graphql", nil)
		if err != nil {
			return err
		}
		defer c.Close()
		c.WriteJSON(wsMsg{Type: "connection_init", Payload: mustJSON(map[string]any{"Authorization": "Bearer " + alice.Token})})
		c.WriteJSON(wsMsg{ID: "1", Type: start, Payload: mustJSON(map[string]any{"query": changedQuery, "variables": map[string]any{"i": ids[0]}})})
		for {
			var m wsMsg
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := c.ReadJSON(&m); err != nil {
				return err
			}
			if m.ID == "1" {
				break // the snapshot
			}
		}
		switch i % 3 { // leave in different ways
		case 0:
			return nil // drop the TCP connection
		case 1:
			c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
		case 2:
			stop := "complete"
			if proto == legacyWS {
				stop = "stop"
			}
			c.WriteJSON(wsMsg{ID: "1", Type: stop})
			c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
		}
		return nil
	}
	for i := 0; i < 50; i++ {
		if err := cycle(i); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	before := goroutines(t, h.URL)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int, cycles)
	for i := 0; i < cycles; i++ {
		next <- i
	}
	close(next)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := cycle(i); err != nil {
					errs <- fmt.Errorf("cycle %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	took := time.Since(start)
	var after int
	for i := 0; i < 50; i++ { // connections close asynchronously
		time.Sleep(100 * time.Millisecond)
		if after = goroutines(t, h.URL); after <= before+2 {
			break
		}
	}
	if after > before+2 {
		t.Fatalf("%d goroutines before %d cycles, %d after", before, cycles, after)
	}
	t.Logf("%d cycles in %v; goroutines %d before, %d after", cycles, took.Round(time.Millisecond), before, after)
}

// TestShutdownClosesSubscriptions: on SIGTERM, subscribers get the protocol's
// "going away" close (1001), which tells them to reconnect, and no error (an
// error would end the subscription for good, and the reason is not theirs);
// the server exits promptly and cleanly.
func TestShutdownClosesSubscriptions(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.stop", ns("n", 100)), 1)
	var clients []*WS
	for _, proto := range []string{transportWS, legacyWS} {
		ws := DialWS(t, h.URL, proto)
		ws.Init(alice.Token)
		ws.Subscribe("s", ids[0])
		ws.Change("s")
		clients = append(clients, ws)
	}
	start := time.Now()
	h.cmd.Process.Signal(syscall.SIGTERM)
	for _, ws := range clients {
		err := ws.Closed(10 * time.Second)
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("%s closed with %v, want 1001 going away", ws.proto, err)
		}
		q := ws.queue("s")
		for len(q) > 0 {
			if m := <-q; m.Type != "next" && m.Type != "data" {
				t.Fatalf("%s: got %s %s before the close; want nothing but the close", ws.proto, m.Type, m.Payload)
			}
		}
	}
	select {
	case <-h.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not exit")
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(h.Log(), `msg=stopped`) {
		t.Fatalf("no clean stop in the log:\n%s", h.Log())
	}
	t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// TestShutdownUnderLoad: SIGTERM while clients keep sending requests and one
// request is still uploading its body. Every request the server accepted is
// answered in full: the upload finishes after the drain began and gets its
// answer, a client learns of the drain from "Connection: close" on a
// response (then stops, as a load balancer would send it elsewhere), /readyz
// answers 503 while draining, and no client sees a reset or cut connection.
// Nothing is timed: clients run until the server tells them, and the
// upload is finished only once the server logged that it is draining.
func TestShutdownUnderLoad(t *testing.T) {
	pub := NewPublisher(t)
	h := &host{Server: Start(t, "sqlite:"+t.TempDir()+"/ph.db", pub.Dir, "--shutdown-delay", "3s", "--shutdown-grace", "1m"), pub: pub}
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.load", ns("n", 100000)), 1)

	// The upload: the server is reading its body when SIGTERM comes.
	body := `{"query":"mutation($i:ID!){storageCreate(instanceId:$i,namespace:\"n\",key:\"late\",value:{done:true}){summary}}","variables":{"i":"` + ids[0] + `"}}`
	up := startUpload(t, h.URL, alice.Token, len(body))

	const clients = 8
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		answered, closed int
		failures         []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	started := make(chan struct{}, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for n := 0; ; n++ {
				var req *http.Request
				if n%4 == 3 {
					req, _ = http.NewRequest("GET", h.URL+"/readyz", nil)
				} else {
					b, _ := json.Marshal(map[string]any{"query": `query($i:ID!){storageItems(instanceId:$i,namespace:"n",limit:5){summary}}`,
						"variables": map[string]any{"i": ids[0]}})
					req, _ = http.NewRequest("POST", h.URL+"/graphql", bytes.NewReader(b))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+alice.Token)
				}
				resp, err := c.Do(req)
				if err != nil {
					if errors.Is(err, syscall.ECONNREFUSED) {
						return // the listener is closed: nothing was sent
					}
					fail("client %d, request %d: %v", i, n, err)
					return
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					fail("client %d, request %d: body cut: %v", i, n, err)
					return
				case req.URL.Path == "/readyz" && resp.Close && resp.StatusCode != http.StatusServiceUnavailable:
					fail("client %d: /readyz answered %d while draining, want 503", i, resp.StatusCode)
				case req.URL.Path == "/readyz" && !resp.Close && resp.StatusCode != http.StatusOK:
					fail("client %d: /readyz answered %d before draining, want 200", i, resp.StatusCode)
				case req.URL.Path == "/graphql" && (resp.StatusCode != 200 || !strings.Contains(string(raw), `"summary"`)):
					fail("client %d, request %d: status %d: %s", i, n, resp.StatusCode, raw)
				}
				mu.Lock()
				answered++
				if resp.Close {
					closed++
				}
				mu.Unlock()
				if n == 10 {
					started <- struct{}{}
				}
				if resp.Close {
					return // draining: a load balancer would send it elsewhere now
				}
			}
		}(i)
	}
	for i := 0; i < clients; i++ {
		<-started
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	for !strings.Contains(h.Log(), "msg=draining") {
		select {
		case <-h.done:
			t.Fatalf("the server exited without draining:\n%s", h.Log())
		case <-time.After(10 * time.Millisecond):
		}
	}
	status, answer, err := up.finish(body)
	if err != nil || status != 200 || !strings.Contains(answer, `"summary"`) {
		t.Fatalf("the request under way when SIGTERM came: %d %s %v", status, answer, err)
	}
	wg.Wait()
	<-h.done
	for _, f := range failures {
		t.Error(f)
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	var stored struct {
		StorageItem struct{ Data json.RawMessage }
	}
	h2 := Start(t, h.DSN, pub.Dir)
	(&Client{URL: h2.URL, Token: alice.Token}).Must(t, `query($i:ID!){storageItem(instanceId:$i,namespace:"n",key:"late"){data}}`, map[string]any{"i": ids[0]}, &stored)
	if !strings.Contains(string(stored.StorageItem.Data), `"done":true`) {
		t.Fatalf("the upload's write is not stored: %s", stored.StorageItem.Data)
	}
	t.Logf("%d requests answered, %d of them with Connection: close", answered, closed)
}

// TestShutdownGraceEnds: a request that does not finish within
// --shutdown-grace is cut, and the server stops anyway, saying so.
func TestShutdownGraceEnds(t *testing.T) {
	pub := NewPublisher(t)
	h := &host{Server: Start(t, "sqlite:"+t.TempDir()+"/ph.db", pub.Dir, "--shutdown-grace", "1s"), pub: pub}
	alice := h.user(t, "alice", false)
	stuck := startUpload(t, h.URL, alice.Token, 1000)
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server waited past its grace period")
	}
	if _, _, err := stuck.finish(strings.Repeat(" ", 1000)); err == nil {
		t.Fatal("the stuck request was answered in full")
	}
	if !strings.Contains(h.Log(), "shutdown grace period over") || !strings.Contains(h.Log(), "msg=stopped") {
		t.Fatalf("log:\n%s", h.Log())
	}
}

// upload is a POST /graphql whose body the server is waiting for.
type upload struct {
	conn net.Conn
	r    *bufio.Reader
}

// startUpload sends the headers of a POST /graphql with a body of n bytes
// and "Expect: 100-continue", and returns once the server answered
// "100 Continue": its handler is then reading the body, a request under way.
func startUpload(t *testing.T, url, token string, n int) *upload {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: pluginhost\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", token, n)
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("want 100 Continue, got %q %v", line, err)
	}
	if blank, err := r.ReadString('\n'); err != nil || blank != "\r\n" {
		t.Fatalf("after 100 Continue: %q %v", blank, err)
	}
	return &upload{conn: conn, r: r}
}

// finish sends the body and reads the answer.
func (u *upload) finish(body string) (int, string, error) {
	if _, err := io.WriteString(u.conn, body); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(u.r, nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), err
}

// TestSIGTERMDuringCompilation: SIGTERM stops the server within its grace
// period while a module that takes minutes to compile is compiling (an
// install waits for it), and the compiler's process goes with it.
func TestSIGTERMDuringCompilation(t *testing.T) {
	dsn := "sqlite:" + t.TempDir() + "/ph.db"
	pub := NewPublisher(t)
	// A cache of its own: the module must not be compiled already.
	s := Start(t, dsn, pub.Dir, "--shutdown-grace", "2s", "--compile-cache", t.TempDir(), "--compile-timeout", "30m")
	alice := &Client{URL: s.URL, Token: Token(t, dsn, "alice", false)}
	m := manifest("com.test.slowcompile", ns("n", 100))
	m["capabilities"] = []any{map[string]any{"id": "slow.run", "kind": "tool", "description": "slow to compile", "module": "capabilities/slow.wasm"}}
	pkg := pub.Sign(t, m, map[string]string{"capabilities/slow.wasm": string(wasmtest.ManyBlockFunctions(250, 4000))})
	// The install waits for the compilation; its answer does not matter.
	go alice.Send(`mutation($p:String!){installPlugin(package:$p){id}}`, map[string]any{"p": pkg})
	pid := s.cmd.Process.Pid
	var compiler int
	for deadline := time.Now().Add(time.Minute); compiler == 0; time.Sleep(20 * time.Millisecond) {
		if kids := children(pid); len(kids) > 0 {
			compiler = kids[0]
		}
		if time.Now().After(deadline) { // a safety net, not a measure
			t.Fatal("no compiler process started")
		}
	}
	begun := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute): // a safety net, not a measure
		t.Fatal("the server was still up a minute after SIGTERM")
	}
	t.Logf("the server stopped %v after SIGTERM (grace 2s)", time.Since(begun).Round(10*time.Millisecond))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(compiler, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compiler process %d outlived the server", compiler)
		}
	}
}

// children returns the processes whose parent is pid (Linux).
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
