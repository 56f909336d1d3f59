package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"pluginhost/internal/testenv"
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

// TestShutdownClosesSubscriptions: on SIGTERM, subscribers get an error and a
// close frame, and the server exits promptly.
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
		if p := ws.Failure("s"); !strings.Contains(p, "shutting down") {
			t.Fatalf("%s: %s", ws.proto, p)
		}
		err := ws.Closed(10 * time.Second)
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("%s closed with %v, want 1001 going away", ws.proto, err)
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
