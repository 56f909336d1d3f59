package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pluginhost/gqlhttp"
	"pluginhost/internal/fixture"
	"pluginhost/internal/oidctest"
	"pluginhost/internal/testenv"
	"pluginhost/server"
)

// BenchmarkIdentity measures one authenticated GraphQL query over HTTP
// against the real handler on a loopback listener, side by side with the
// server's own token and with a JWT of the identity provider (a real one,
// run in the test). A verified JWT is remembered until its exp, as a token
// is for auth.CacheTTL, so after the first request neither costs a
// signature check or a database read; the target is a JWT within 10% of a
// token.
//
//	go test -run '^$' -bench Identity -count 5 .
func BenchmarkIdentity(b *testing.B) {
	tuneRuntime() // as serve does
	p := oidctest.Start(b)
	backend := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + b.TempDir() + "/bench.db"}
	lifted := gqlhttp.Limits{MaxInFlightPerUser: 64, MaxInFlight: 64, UserWorkPerSecond: 1 << 30}
	env := fixture.New(b, backend, fixture.Limits(lifted),
		fixture.OIDC(server.OIDC{Issuer: p.Issuer, Audiences: []string{"pluginhost"}, AdminClaim: "groups", AdminValue: "admins"}))
	token, _, err := env.Auth.CreateToken(context.Background(), "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	jwt := p.Token(b, oidctest.Mint{Subject: "bench", Audience: []string{"pluginhost"}, TTL: time.Hour,
		Claims: map[string]any{"preferred_username": "bench", "email": "bench@example.com", "groups": []string{"staff", "dev"}}})
	srv := httptest.NewServer(env.Server.Handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const body = `{"query":"{viewer{id name admin}}"}`
	query := func(b *testing.B, credential string) {
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+credential)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(out), `"name":"bench"`) {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
	query(b, token) // the first request verifies and remembers
	query(b, jwt)
	// Interleaved: each iteration sends one request with each credential,
	// in turn first, and times each, so that both see the same load on a
	// shared machine; jwt/token is the ratio of their times.
	b.Run("interleaved", func(b *testing.B) {
		var took [2]time.Duration
		creds := [2]string{token, jwt}
		for i := 0; b.Loop(); i++ {
			for k := range 2 {
				c := (i + k) % 2
				start := time.Now()
				query(b, creds[c])
				took[c] += time.Since(start)
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(took[0].Nanoseconds())/n, "token-ns/req")
		b.ReportMetric(float64(took[1].Nanoseconds())/n, "jwt-ns/req")
		b.ReportMetric(float64(took[1])/float64(took[0]), "jwt/token")
	})
	// The same, through the handler in the process (no connection, no
	// client): the server's own cost of each.
	b.Run("handler", func(b *testing.B) {
		var took [2]time.Duration
		creds := [2]string{token, jwt}
		h := env.Server.Handler
		for i := 0; b.Loop(); i++ {
			for k := range 2 {
				c := (i + k) % 2
				req := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+creds[c])
				w := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(w, req)
				took[c] += time.Since(start)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(took[0].Nanoseconds())/n, "token-ns/req")
		b.ReportMetric(float64(took[1].Nanoseconds())/n, "jwt-ns/req")
		b.ReportMetric(float64(took[1])/float64(took[0]), "jwt/token")
	})
	for _, c := range []struct{ name, credential string }{{"token", token}, {"jwt", jwt}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					query(b, c.credential)
				}
			})
		})
	}
}
