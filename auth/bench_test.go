package auth_test

import (
	"context"
	"testing"
	"time"

	"pluginhost/auth"
	"pluginhost/internal/oidctest"
	"pluginhost/internal/testenv"
)

// BenchmarkBearer measures the authentication of a request's credential
// once it is remembered: the server's own token and a JWT of the identity
// provider, side by side (the rest of a request is the same for both).
//
//	go test -run '^$' -bench Bearer ./auth
func BenchmarkBearer(b *testing.B) {
	p := oidctest.Start(b)
	db := open(b, testenv.Backend{DSN: "sqlite:" + b.TempDir() + "/ph.db"})
	tokens := &auth.Service{DB: db}
	a := &auth.Authenticator{Tokens: tokens, Attempts: &auth.Attempts{},
		Issuer: &auth.Issuer{URL: p.Issuer, Audiences: []string{"pluginhost"}, DB: db, Keys: &auth.IssuerKeys{Issuer: p.Issuer}}}
	ctx := context.Background()
	token, _, err := tokens.CreateToken(ctx, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	jwt := p.Token(b, oidctest.Mint{Subject: "bench", Audience: []string{"pluginhost"}, TTL: time.Hour,
		Claims: map[string]any{"preferred_username": "bench", "email": "bench@example.com", "groups": []string{"staff", "dev"}}})
	for _, c := range []struct{ name, credential string }{{"token", token}, {"jwt", jwt}} {
		if _, err := a.Bearer(ctx, "127.0.0.1", c.credential); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Bearer(ctx, "127.0.0.1", c.credential); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
