package auth_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"pluginhost/auth"
	"pluginhost/database"
	"pluginhost/internal/testenv"
	"pluginhost/migrations"
	"pluginhost/models"
)

func open(t testing.TB, b testenv.Backend) *database.DB {
	t.Helper()
	db, err := database.Open(b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Apply(context.Background(), db, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return db
}

func wantCode(t *testing.T, err error, code models.Code) {
	t.Helper()
	if models.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// TestTokenTTL: a time to live is at least a second and at most MaxTTL; none
// never expires.
func TestTokenTTL(t *testing.T) {
	s := &auth.Service{DB: open(t, testenv.Backend{DSN: "sqlite:" + t.TempDir() + "/ph.db"})}
	tests := []struct {
		ttl     time.Duration
		code    models.Code // "" succeeds
		expires bool
	}{
		{0, "", false},
		{time.Second, "", true},
		{time.Second - time.Millisecond, models.ErrBadUserInput, false},
		{-time.Second, models.ErrBadUserInput, false},
		{auth.MaxTTL, "", true},
		{auth.MaxTTL + time.Second, models.ErrBadUserInput, false},
	}
	for _, tt := range tests {
		_, info, err := s.Create(context.Background(), auth.NewToken{User: "alice", TTL: tt.ttl})
		if tt.code != "" {
			wantCode(t, err, tt.code)
			continue
		}
		if err != nil {
			t.Fatalf("ttl %v: %v", tt.ttl, err)
		}
		if (info.ExpiresAt != nil) != tt.expires {
			t.Fatalf("ttl %v: expires at %v", tt.ttl, info.ExpiresAt)
		}
	}
}

// TestTokenLifecycle: a token works until it expires or is revoked; a
// revocation is seen at once by the replica that made it, and by another
// replica once its cached authentication runs out; its last use is recorded.
func TestTokenLifecycle(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		db := open(t, b)
		here, other := &auth.Service{DB: db}, &auth.Service{DB: db}
		token, info, err := here.Create(ctx, auth.NewToken{User: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if info.LastUsedAt != nil || !info.Active(time.Now()) {
			t.Fatalf("new token %+v: want active and never used", info)
		}
		for _, s := range []*auth.Service{here, other} {
			if u, err := s.Authenticate(ctx, token); err != nil || u.Name != "alice" {
				t.Fatalf("authenticate: %v %v", u, err)
			}
		}
		page, err := here.Tokens(ctx, "alice", models.PageArgs{})
		list := page.Nodes()
		if err != nil || len(list) != 1 || list[0].ID != info.ID || list[0].LastUsedAt == nil {
			t.Fatalf("tokens after use: %+v %v; want one, with its last use", list, err)
		}

		revoked, err := here.Revoke(ctx, info.ID)
		if err != nil || revoked.RevokedAt == nil || revoked.Active(time.Now()) {
			t.Fatalf("revoke: %+v %v", revoked, err)
		}
		_, err = here.Authenticate(ctx, token)
		wantCode(t, err, models.ErrUnauthenticated)
		// The other replica remembers the token for up to CacheTTL; a replica
		// that has to read it refuses it.
		if _, err := other.Authenticate(ctx, token); err != nil {
			t.Fatalf("another replica within CacheTTL: %v", err)
		}
		_, err = (&auth.Service{DB: db}).Authenticate(ctx, token)
		wantCode(t, err, models.ErrUnauthenticated)
		again, err := here.Revoke(ctx, info.ID)
		if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Fatalf("revoking twice: %+v %v; want the first revocation kept", again, err)
		}

		// An expired token is refused.
		expiring, info2, err := here.Create(ctx, auth.NewToken{User: "alice", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := here.Authenticate(ctx, expiring); err != nil {
			t.Fatal(err)
		}
		if err := db.Write.Exec("UPDATE tokens SET expires_at = ? WHERE id = ?", time.Now().Add(-time.Second).UnixMicro(), info2.ID).Error; err != nil {
			t.Fatal(err)
		}
		_, err = (&auth.Service{DB: db}).Authenticate(ctx, expiring)
		wantCode(t, err, models.ErrUnauthenticated)

		page, err = here.Tokens(ctx, "alice", models.PageArgs{})
		list = page.Nodes()
		if err != nil || len(list) != 2 || list[0].ID != info2.ID || list[1].ID != info.ID {
			t.Fatalf("tokens: %+v %v; want both, newest first", list, err)
		}
		_, err = here.Tokens(ctx, "nobody", models.PageArgs{})
		wantCode(t, err, models.ErrBadUserInput)
		_, err = here.Revoke(ctx, "tok_unknown")
		wantCode(t, err, models.ErrBadUserInput)
	})
}

// TestCachedTokenExpires: a cached authentication never outlives the token's
// expiry.
func TestCachedTokenExpires(t *testing.T) {
	s := &auth.Service{DB: open(t, testenv.Backend{DSN: "sqlite:" + t.TempDir() + "/ph.db"})}
	token, _, err := s.Create(context.Background(), auth.NewToken{User: "alice", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the expiry, well within CacheTTL
	_, err = s.Authenticate(context.Background(), token)
	wantCode(t, err, models.ErrUnauthenticated)
}
