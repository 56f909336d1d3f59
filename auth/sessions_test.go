package auth_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"pluginhost/auth"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/secret"
)

// A session signed in with the identity provider: its user as the claims
// said when it began (an admin or not), no token; signing out ends it and
// hands back the ID token that ends the provider's session; a tampered
// cookie, or a token session's cookie passed off as one, is nobody's.
func TestIssuerSessions(t *testing.T) {
	db := open(t, testenv.Backend{DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	key := make([]byte, 32)
	rand.Read(key)
	sealer, err := secret.NewSealer(key, "sessions")
	if err != nil {
		t.Fatal(err)
	}
	tokens := &auth.Service{DB: db}
	s := &auth.Sessions{Auth: tokens, Sealer: sealer}
	ctx := context.Background()
	iss := &auth.Issuer{URL: "https://id.example.com", DB: db, AdminClaim: "groups", AdminValue: "admins"}
	user, err := iss.User(ctx, &auth.Claims{Subject: "sub-1", Raw: map[string]any{"preferred_username": "alice", "groups": []any{"admins"}}})
	if err != nil {
		t.Fatal(err)
	}
	value, ends, err := s.StartIssuer(ctx, user, "the-id-token")
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Verify(ctx, value)
	if err != nil || id.User.ID != user.ID || !id.User.Admin || id.User.Subject != "sub-1" || id.Credential != "" || id.Ends.Sub(ends).Abs() > time.Millisecond {
		t.Fatalf("the session: %+v %v", id, err)
	}
	// A later token without the group makes the user no admin; the
	// session keeps what its sign-in said until it ends.
	if _, err := iss.User(ctx, &auth.Claims{Subject: "sub-1", Raw: map[string]any{"preferred_username": "alice"}}); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.Verify(ctx, value); !id.User.Admin {
		t.Fatal("the session lost the admin its sign-in had")
	}
	// Tampered, or a token session's cookie: nobody's.
	raw, _ := base64.RawURLEncoding.DecodeString(value)
	raw[len(raw)-1] ^= 1
	if _, err := s.Verify(ctx, base64.RawURLEncoding.EncodeToString(raw)); models.ErrorCode(err) != models.ErrUnauthenticated {
		t.Fatalf("a tampered cookie: %v", err)
	}
	token, _, _ := tokens.CreateToken(ctx, "bob", false)
	tokenValue, _, _, err := s.Start(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := s.Verify(ctx, tokenValue); err != nil || id.Credential != token || id.User.Name != "bob" {
		t.Fatalf("a token's session: %+v %v", id, err)
	}
	if hint, err := s.End(ctx, tokenValue); err != nil || hint != "" {
		t.Fatalf("ending a token's session: %q %v", hint, err)
	}
	// Signing out.
	hint, err := s.End(ctx, value)
	if err != nil || hint != "the-id-token" {
		t.Fatalf("signing out: %q %v", hint, err)
	}
	if _, err := s.Verify(ctx, value); models.ErrorCode(err) != models.ErrUnauthenticated {
		t.Fatalf("a signed-out session: %v", err)
	}
}
