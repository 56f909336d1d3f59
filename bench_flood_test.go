package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"pluginhost/gqlhttp"
	"pluginhost/internal/fixture"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// BenchmarkRunFlood measures what one user's flood of capability runs does
// to another user's invoke, with the default limits. alice invokes a Go
// reactor capability that echoes its arguments, one request at a time, b.N
// times alone and then b.N times while mallory keeps 16 HTTP clients and 8
// websockets each sending invoke of a capability that loops until its wall
// time is up. It reports alice's p50 and p99 alone and under the flood,
// the p99 ratio (the target is at most 2), and mallory's runs and refusals.
//
//	go test -run '^$' -bench RunFlood -benchtime 300x .
func BenchmarkRunFlood(b *testing.B) {
	tuneRuntime()
	h := newLimitsHost(b, gqlhttp.Limits{})
	mallory := h.user(b, "mallory")
	ctx := context.Background()
	as := func(token string) *models.User {
		u, err := h.env.Auth.Authenticate(ctx, token)
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	install := func(u *models.User, id, capability, module string, wasm []byte) string {
		m := fixture.Manifest(id, fixture.NS("n", 1024))
		m["capabilities"] = []any{map[string]any{"id": capability, "kind": "tool", "description": capability, "module": module}}
		intl, err := h.env.Life.Install(ctx, u, h.env.Package(b, m, map[string][]byte{module: wasm}))
		if err != nil {
			b.Fatal(err)
		}
		return h.env.Instance(b, u, intl).ID
	}
	aliceInst := install(as(h.token), "com.test.echo", "echo.run", "capabilities/echo.wasm", wasmtest.Reactor(b, "sandbox/testdata/reactors", "echo"))
	malloryInst := install(as(mallory), "com.test.loop", "loop.run", "capabilities/loop.wasm", wasmtest.Module(b, "sandbox/testdata/modules", "loop"))

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	invoke := func(inst, capability string) string {
		body, _ := json.Marshal(map[string]any{"query": `mutation($i:ID!,$c:String!){invoke(instanceId:$i,capability:$c,arguments:{a:1}){summary}}`,
			"variables": map[string]any{"i": inst, "c": capability}})
		return string(body)
	}
	send := func(token, body string) (int, []byte, error) {
		req, _ := http.NewRequest("POST", h.URL+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var out json.RawMessage
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, nil
	}
	victim := invoke(aliceInst, "echo.run")
	measure := func(n int) []time.Duration {
		lat := make([]time.Duration, 0, n)
		for range n {
			t0 := time.Now()
			status, out, err := send(h.token, victim)
			if err != nil || status != 200 || strings.Contains(string(out), `"errors"`) {
				b.Fatalf("alice's invoke: %d %v %s", status, err, out)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return lat
	}
	at := func(lat []time.Duration, p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	// Compile both modules and warm alice's instance.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, out, err := send(mallory, invoke(malloryInst, "loop.run"))
		if err == nil && strings.Contains(string(out), `"timeout"`) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("mallory's loop never ran: %s", out)
		}
	}
	measure(20)
	b.ResetTimer()
	alone := measure(b.N)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var runs, refused atomic.Int64
	flood := invoke(malloryInst, "loop.run")
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				status, out, err := send(mallory, flood)
				switch {
				case err != nil:
				case status != 200 || !strings.Contains(string(out), `"timeout"`):
					refused.Add(1)
				default:
					runs.Add(1)
				}
			}
		}()
	}
	var sockets []*websocket.Conn
	for range 8 {
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		c, _, err := d.Dial("ws"+strings.TrimPrefix(h.URL, "http")+"/graphql", nil)
		if err != nil {
			b.Fatal(err)
		}
		sockets = append(sockets, c)
		c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + mallory}})
		wg.Add(1)
		go func() { // read everything, to keep the socket flowing
			defer wg.Done()
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var payload map[string]any
			json.Unmarshal([]byte(flood), &payload)
			for i := 0; !stop.Load(); i++ {
				if err := c.WriteJSON(map[string]any{"type": "subscribe", "id": string(rune('a'+i%26)) + time.Now().String(), "payload": payload}); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second) // the flood is under way
	attacked := measure(b.N)
	stop.Store(true)
	for _, c := range sockets {
		c.Close()
	}
	wg.Wait()
	b.StopTimer()

	b.ReportMetric(at(alone, 0.5), "p50-alone-ms")
	b.ReportMetric(at(alone, 0.99), "p99-alone-ms")
	b.ReportMetric(at(attacked, 0.5), "p50-flooded-ms")
	b.ReportMetric(at(attacked, 0.99), "p99-flooded-ms")
	b.ReportMetric(at(attacked, 0.99)/at(alone, 0.99), "p99-ratio")
	b.ReportMetric(float64(runs.Load()), "flood-runs")
	b.ReportMetric(float64(refused.Load()), "flood-refused")
}
