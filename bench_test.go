package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pluginhost/gqlhttp"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// BenchmarkStorageUpdate measures storageUpdate with 32 concurrent clients on
// SQLite, over HTTP + GraphQL against the real handler on a loopback listener,
// and through the storage service directly, in the same run. Each client
// updates its own key with the revision of its previous write.
//
//	go test -run '^$' -bench StorageUpdate -benchtime 20000x .
func BenchmarkStorageUpdate(b *testing.B) {
	const clients = 32
	tuneRuntime() // as serve does
	backend := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/bench.db"}
	ctx := context.Background()
	// One user's throughput is measured here, so the per-user bounds that
	// keep users from crowding each other out are lifted.
	lifted := gqlhttp.Limits{MaxInFlightPerUser: clients, MaxInFlight: clients, UserWorkPerSecond: 1 << 30}
	env := fixture.New(b, backend, fixture.Limits(lifted))
	token, user, err := env.Auth.CreateToken(ctx, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	inst := env.Instance(b, user, env.Install(b, user, fixture.Manifest("com.bench.notes", fixture.NS("n", 65536))))
	caller := models.Caller{UserID: user.ID}
	for i := range clients {
		if _, err := env.Store.Create(ctx, caller, inst.ID, "n", fmt.Sprint("k", i), models.JSON(`{"count":0}`)); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(env.Server.Handler)
	defer srv.Close()
	store := env.Store

	revs := make([]int64, clients)
	for i := range revs {
		revs[i] = 1
	}
	direct := func(i int, rev int64, value string) (int64, error) {
		_, err := store.Update(ctx, caller, inst.ID, "n", fmt.Sprint("k", i), models.JSON(value), rev)
		return rev + 1, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	const query = `mutation($i:ID!,$k:String!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"n",key:$k,value:$v,revision:$r){evidence{revision}}}`
	// The load client shares the machine with the server, so it is kept lean:
	// bodies are appended from fixed parts, response buffers are reused.
	prefix := []byte(`{"query":` + strconv.Quote(query) + `,"variables":{"i":"` + inst.ID + `","k":"k`)
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	overHTTP := func(i int, rev int64, value string) (int64, error) {
		body := append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)...)
		body = append(body, `","v":`...)
		body = append(body, value...)
		body = append(body, `,"r":`...)
		body = strconv.AppendInt(body, rev, 10)
		body = append(body, `}}`...)
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return rev, err
		}
		defer resp.Body.Close()
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		buf.ReadFrom(resp.Body)
		if resp.StatusCode != 200 || bytes.Contains(buf.Bytes(), []byte(`"errors"`)) {
			return rev, fmt.Errorf("status %d: %s", resp.StatusCode, buf.Bytes())
		}
		return rev + 1, nil
	}
	for _, path := range []struct {
		name string
		do   func(int, int64, string) (int64, error)
	}{{"direct", direct}, {"http", overHTTP}} {
		b.Run(path.name, func(b *testing.B) {
			lat := make([][]time.Duration, clients)
			var next atomic.Int64
			var wg sync.WaitGroup
			var failed atomic.Value
			b.ResetTimer()
			cpu0 := wasmtest.CPUTime()
			start := time.Now()
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						t0 := time.Now()
						rev, err := path.do(c, revs[c], fmt.Sprintf(`{"count":%d}`, n))
						if err != nil {
							failed.Store(err)
							return
						}
						revs[c] = rev
						lat[c] = append(lat[c], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			cpu := wasmtest.CPUTime() - cpu0
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			all := slices.Concat(lat...)
			slices.Sort(all)
			pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "updates/s")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			// CPU time of the whole process (server and load client) per update:
			// a figure that does not depend on what else the machine runs.
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/op")
		})
	}
}
