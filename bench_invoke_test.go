package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"pluginhost/bundle"
	"pluginhost/internal/fixture"
	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// BenchmarkInvokeExample measures, on SQLite over HTTP against the real
// handler, a warm invoke of the example plugin's Go capability
// (notes.summary, built by pluginhost build, over 10 notes) side by side with
// a trivial query (viewer), alternating one of each b.N times. The targets
// are an invoke p50 within 4 times the query's, and a p99 under 4 ms.
//
// It also splits an invoke's mean time, from the server's /metrics: the
// engine's part (pluginhost_capability_module_duration_seconds: a slot, the
// instance made ready, the module's code) and the host's (the rest: HTTP and
// GraphQL, access, the snapshot, the request and the result).
//
//	go test -run '^$' -bench InvokeExample -benchtime 2000x .
func BenchmarkInvokeExample(b *testing.B) {
	tuneRuntime()
	ctx := context.Background()
	env := fixture.New(b, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/bench.db"})
	token, user, err := env.Auth.CreateToken(ctx, "author", false)
	if err != nil {
		b.Fatal(err)
	}
	folder, err := bundle.ReadPlugin(plugintest.Example(b, "examples/notes"))
	if err != nil {
		b.Fatal(err)
	}
	pkg, err := bundle.Build(folder.Files, env.Key)
	if err != nil {
		b.Fatal(err)
	}
	installed, err := env.Life.Install(ctx, user, pkg)
	if err != nil {
		b.Fatal(err)
	}
	inst := env.Instance(b, user, installed)
	for i := range 10 {
		note := fmt.Sprintf(`{"text":%q}`, strings.Repeat(fmt.Sprintf("word%d ", i), 10+i))
		if _, err := env.Store.Create(ctx, models.Caller{UserID: user.ID}, inst.ID, "notes", fmt.Sprint("note-", i), models.JSON(note)); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(env.Server.Handler)
	defer srv.Close()
	send := func(query string) error {
		body, _ := json.Marshal(map[string]any{"query": query})
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			Data   json.RawMessage
			Errors []json.RawMessage
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Errors) > 0 {
			return fmt.Errorf("status %d, errors %s (%v)", resp.StatusCode, out.Errors, err)
		}
		return nil
	}
	invoke := fmt.Sprintf(`mutation{invoke(instanceId:%q,capability:"notes.summary",arguments:{limit:3}){summary}}`, inst.ID)
	trivial := `{viewer{id}}`
	for range 20 { // warm: connections, the reactor's instance
		if err := send(invoke); err != nil {
			b.Fatal(err)
		}
		send(trivial)
	}
	engine := func() (sum float64, n int64) {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			name, value, _ := strings.Cut(sc.Text(), " ")
			switch name {
			case `pluginhost_capability_module_duration_seconds_sum{kind="tool"}`:
				sum, _ = strconv.ParseFloat(value, 64)
			case `pluginhost_capability_module_duration_seconds_count{kind="tool"}`:
				n, _ = strconv.ParseInt(value, 10, 64)
			}
		}
		if n == 0 {
			b.Fatal("/metrics has no module time of a tool")
		}
		return sum, n
	}
	invokes := make([]time.Duration, 0, b.N)
	queries := make([]time.Duration, 0, b.N)
	sum0, n0 := engine()
	b.ResetTimer()
	cpu := wasmtest.CPUTime()
	for range b.N {
		begun := time.Now()
		if err := send(invoke); err != nil {
			b.Fatal(err)
		}
		invokes = append(invokes, time.Since(begun))
		begun = time.Now()
		if err := send(trivial); err != nil {
			b.Fatal(err)
		}
		queries = append(queries, time.Since(begun))
	}
	b.StopTimer()
	wasmtest.ReportCPU(b, cpu)
	sum1, n1 := engine()
	var total time.Duration
	for _, d := range invokes {
		total += d
	}
	mean := total.Seconds() / float64(len(invokes))
	engineMean := (sum1 - sum0) / float64(n1-n0)
	b.ReportMetric(engineMean*1000, "engine-mean-ms")
	b.ReportMetric((mean-engineMean)*1000, "host-mean-ms")
	for name, ds := range map[string][]time.Duration{"invoke": invokes, "query": queries} {
		p50, p99 := wasmtest.Percentiles(ds)
		b.ReportMetric(p50, name+"-p50-ms")
		b.ReportMetric(p99, name+"-p99-ms")
	}
}
