package auth_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"pluginhost/auth"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// The bounds of failed attempts at their limit and one past it, per
// address and overall, and the end of the window.
func TestAttempts(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &auth.Attempts{PerAddress: 3, Overall: 5, Window: 10 * time.Second, Now: func() time.Time { return now }}
	for i := range 3 {
		if l := a.Allow("a"); l != (auth.Limit{}) {
			t.Fatalf("before failure %d: %+v", i+1, l)
		}
		a.Fail("a")
		now = now.Add(time.Second)
	}
	// At the bound: held until the window that began with its first
	// failure ends.
	if l := a.Allow("a"); l.Address != 7*time.Second || l.Overall != 0 {
		t.Fatalf("at the bound: %+v", l)
	}
	if l := a.Allow("b"); l != (auth.Limit{}) {
		t.Fatalf("another address: %+v", l)
	}
	a.Fail("b")
	if l := a.Allow("b"); l != (auth.Limit{}) {
		t.Fatalf("one failure of b, four overall: %+v", l)
	}
	a.Fail("c")
	if l := a.Allow("d"); l.Overall != 7*time.Second || l.Address != 0 {
		t.Fatalf("five overall: %+v", l)
	}
	now = now.Add(7 * time.Second)
	for _, addr := range []string{"a", "b", "d"} {
		if l := a.Allow(addr); l != (auth.Limit{}) {
			t.Fatalf("%s after the window: %+v", addr, l)
		}
	}
	// A new window begins with the next failure.
	a.Fail("a")
	if l := a.Allow("a"); l != (auth.Limit{}) {
		t.Fatalf("one failure in a new window: %+v", l)
	}
	// nil bounds nothing.
	var none *auth.Attempts
	none.Fail("a")
	if l := none.Allow("a"); l != (auth.Limit{}) {
		t.Fatal("a nil Attempts held back")
	}
}

// Concurrent failures are all counted.
func TestAttemptsConcurrent(t *testing.T) {
	a := &auth.Attempts{PerAddress: 1000, Overall: 1 << 20, Window: time.Minute}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 125 {
				a.Fail("x")
				a.Allow("x")
			}
		})
	}
	wg.Wait()
	if l := a.Allow("x"); l.Address <= 0 {
		t.Fatalf("1,000 failures from one address: %+v", l)
	}
}

// The client's address: the peer's, or behind trusted proxies the nearest
// untrusted X-Forwarded-For hop; an IPv6 address as its /64.
func TestClientAddress(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tt := range []struct {
		remote, xff string
		trusted     []netip.Prefix
		want        string
	}{
		{"192.0.2.1:5000", "", nil, "192.0.2.1"},
		{"192.0.2.1:5000", "198.51.100.7", nil, "192.0.2.1"},                 // an untrusted peer's header is ignored
		{"192.0.2.1:5000", "198.51.100.7", trusted, "192.0.2.1"},             // the peer is no trusted proxy
		{"10.1.2.3:5000", "198.51.100.7", trusted, "198.51.100.7"},           // one proxy
		{"10.1.2.3:5000", "198.51.100.7, 10.9.9.9", trusted, "198.51.100.7"}, // two proxies
		{"10.1.2.3:5000", "6.6.6.6, 198.51.100.7", trusted, "198.51.100.7"},  // a client's forged hop stays behind
		{"10.1.2.3:5000", "garbage", trusted, "10.1.2.3"},
		{"10.1.2.3:5000", "", trusted, "10.1.2.3"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", nil, "2001:db8:1:2::/64"},
		{"[::1]:443", "2001:db8::9", trusted, "2001:db8::/64"},
		{"[::ffff:192.0.2.1]:80", "", nil, "192.0.2.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		if got := auth.ClientAddress(r, tt.trusted); got != tt.want {
			t.Errorf("%s with X-Forwarded-For %q: %q, want %q", tt.remote, tt.xff, got, tt.want)
		}
	}
}

// The authenticator holds back a client past its failures, the right
// token included, and past the overall bound only credentials it does not
// already know.
func TestAuthenticatorBounds(t *testing.T) {
	tokens := &auth.Service{DB: open(t, testenv.Backend{DSN: "sqlite:" + t.TempDir() + "/ph.db"})}
	ctx := context.Background()
	known, _, err := tokens.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, _ := tokens.CreateToken(ctx, "bob", false)
	a := &auth.Authenticator{Tokens: tokens, Attempts: &auth.Attempts{PerAddress: 2, Overall: 3, Window: time.Minute}}
	if _, err := a.Bearer(ctx, "x", known); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := a.Bearer(ctx, "x", "ph_wrong"); models.ErrorCode(err) != models.ErrUnauthenticated {
			t.Fatalf("a wrong token: %v", err)
		}
	}
	if _, err := a.Bearer(ctx, "x", known); models.ErrorCode(err) != models.ErrTooManyRequests {
		t.Fatalf("the right token from the held address: %v", err)
	}
	if _, err := a.Bearer(ctx, "y", "ph_wrong"); models.ErrorCode(err) != models.ErrUnauthenticated {
		t.Fatalf("the third failure overall: %v", err)
	}
	if _, err := a.Bearer(ctx, "z", fresh); models.ErrorCode(err) != models.ErrTooManyRequests {
		t.Fatalf("an unknown token past the overall bound: %v", err)
	}
	if id, err := a.Bearer(ctx, "z", known); err != nil || id.User.Name != "alice" {
		t.Fatalf("a known token past the overall bound: %v", err)
	}
}
