package capability_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"pluginhost/capability"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/tlstest"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// BenchmarkFetchRound measures what one fetch round adds to a run, beyond
// the fetch itself: the same Go reactor run through the host on SQLite
// with no round, and with one round of one GET to a local HTTPS server
// (kept-alive connections, as the host's client keeps them), and that GET
// made directly by a client. The host's overhead per round is
// with-round minus no-round minus the direct GET (target under 2 ms).
//
//	go test -run '^$' -bench FetchRound -benchtime 2000x ./capability
func BenchmarkFetchRound(b *testing.B) {
	ca := tlstest.NewCA(b, "bench CA")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"temperature": 21.5}`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(b, "localhost", "127.0.0.1")}}
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	host := fmt.Sprintf("localhost:%d", port)

	env := fixture.New(b, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/bench.db"},
		fixture.Egress([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, ca.PEMFile))
	u := env.User(b, "alice")
	m := fixture.Manifest("com.bench.fetch", fixture.NS("n", 1024))
	m["permissions"] = []any{"storage", "network"}
	m["network"] = map[string]any{"hosts": []any{host}}
	m["capabilities"] = []any{map[string]any{"id": "f.run", "kind": "tool", "description": "fetch", "module": "capabilities/fetch.wasm"}}
	installed, err := env.Life.Install(context.Background(), u, env.Package(b, m, map[string][]byte{"capabilities/fetch.wasm": wasmtest.Reactor(b, "../sandbox/testdata/reactors", "fetch")}))
	if err != nil {
		b.Fatal(err)
	}
	inst := env.Instance(b, u, installed)
	if _, err := env.Life.SetInstanceGrant(context.Background(), u, inst.ID, models.PermissionNetwork, true); err != nil {
		b.Fatal(err)
	}
	url := fmt.Sprintf("https://%s/now", host)
	call := func(rounds int) capability.Call {
		args := fmt.Sprintf(`{"rounds":%d,"requests":[{"id":"now","method":"GET","url":%q}]}`, rounds, url)
		return capability.Call{Caller: models.Caller{UserID: u.ID}, InstanceID: inst.ID, Capability: "f.run", Arguments: models.JSON(args), Trigger: sandbox.TriggerInvoke}
	}
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	get := func() {
		resp, err := direct.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	run := func(rounds int) {
		if _, err := env.Runs.Run(context.Background(), call(rounds)); err != nil {
			b.Fatal(err)
		}
	}
	for range 20 { // warm: the module compiled, connections open
		run(0)
		run(1)
		get()
	}
	var none, one, fetch []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		run(0)
		t1 := time.Now()
		run(1)
		t2 := time.Now()
		get()
		t3 := time.Now()
		none, one, fetch = append(none, t1.Sub(t0)), append(one, t2.Sub(t1)), append(fetch, t3.Sub(t2))
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 { a, _ := wasmtest.Percentiles(ds); return a }
	n, o, f := p50(none), p50(one), p50(fetch)
	b.ReportMetric(n, "no-round-p50-ms")
	b.ReportMetric(o, "one-round-p50-ms")
	b.ReportMetric(f, "direct-get-p50-ms")
	b.ReportMetric(o-n-f, "round-overhead-ms")
}
