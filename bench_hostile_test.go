package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pluginhost/gqlhttp"
	"pluginhost/internal/fixture"
	"pluginhost/models"
)

// BenchmarkHostileLoad measures what a hostile user does to another user's
// latency and to the server's memory, with the default limits. The victim,
// alice, reads her items one request at a time, b.N times alone and then b.N
// times while mallory runs 16 clients that each send, in turn, the most
// expensive operations the limits let through (19 storage snapshots of a full
// Installation, lists nested to the cost limit, a 1 MB body of variables)
// and refused ones (lists nested five deep, 2,000 aliases, a 12 MB body).
// It reports alice's p99 alone and under attack, their ratio (the target is
// at most 2), and the peak heap in use during the attack.
//
//	go test -run '^$' -bench HostileLoad -benchtime 300x .
func BenchmarkHostileLoad(b *testing.B) {
	tuneRuntime()
	h := newLimitsHost(b, gqlhttp.Limits{})
	mallory := h.user(b, "mallory")
	ctx := context.Background()
	m, _ := h.env.Auth.Authenticate(ctx, mallory)
	inst := h.env.Instance(b, m, h.env.Install(b, m, fixture.Manifest("com.test.hostile", fixture.NS("a", 256*1024), fixture.NS("b", 256*1024))))
	for i := range 60 {
		ns := "a"
		if i%2 == 1 {
			ns = "b"
		}
		value := fmt.Sprintf(`{"text":%q}`, strings.Repeat("y", 8000))
		if _, err := h.env.Store.Create(ctx, models.Caller{UserID: m.ID}, inst.ID, ns, fmt.Sprint("k", i), models.JSON(value)); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	send := func(token, body string) (int, error) {
		req, _ := http.NewRequest("POST", h.URL+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var out struct{ Errors []any }
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, nil
	}
	query := func(q string, vars map[string]any) string {
		body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
		return string(body)
	}
	victim := query(`query($i:ID!){storageItem(instanceId:$i,namespace:"n",key:"k1"){data} viewer{id}}`, map[string]any{"i": h.instance})
	snap := fmt.Sprintf(`pluginStorageSnapshot(instanceId:%q)`, inst.ID)
	hostile := []string{
		query("{"+aliases(19, snap)+"}", nil),
		query("{installations{instances{usage{keys} installation{instances{id}}}}}", nil),
		query("{viewer{id}}", map[string]any{"v": strings.Repeat("z", 1<<20)}),
		query("{installations{instances{installation{instances{installation{instances{installation{instances{id}}}}}}}}}", nil),
		query("{"+aliases(2000, snap)+"}", nil),
		query("{viewer{id}}", map[string]any{"v": strings.Repeat("z", 12<<20)}),
	}
	measure := func(n int) []time.Duration {
		lat := make([]time.Duration, 0, n)
		for range n {
			t0 := time.Now()
			status, err := send(h.token, victim)
			if err != nil || status != 200 {
				b.Fatalf("alice's request: %d %v", status, err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return lat
	}
	p99 := func(lat []time.Duration) time.Duration { return lat[(len(lat)*99)/100] }

	measure(20) // warm up
	b.ResetTimer()
	alone := measure(b.N)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var sent, refused atomic.Int64
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; !stop.Load(); i++ {
				status, err := send(mallory, hostile[i%len(hostile)])
				if err == nil {
					sent.Add(1)
					if status != 200 {
						refused.Add(1)
					}
				}
			}
		}()
	}
	var peak atomic.Uint64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for !stop.Load() {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for sent.Load() < 16 {
		time.Sleep(time.Millisecond) // until the attack is under way
	}
	attacked := measure(b.N)
	stop.Store(true)
	wg.Wait()
	<-sampled
	b.StopTimer()

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(p99(alone)), "p99-alone-ms")
	b.ReportMetric(ms(p99(attacked)), "p99-attacked-ms")
	b.ReportMetric(float64(p99(attacked))/float64(p99(alone)), "p99-ratio")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(sent.Load()), "hostile-requests")
	b.ReportMetric(float64(refused.Load()), "hostile-refused")
}
