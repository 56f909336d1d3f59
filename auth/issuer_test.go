package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"pluginhost/auth"
	"pluginhost/internal/oidctest"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// issuerEnv is an Issuer of a real provider, on a fresh database.
func issuerEnv(t *testing.T, p *oidctest.Provider) *auth.Issuer {
	t.Helper()
	return &auth.Issuer{URL: p.Issuer, Audiences: []string{"pluginhost", "console"}, AdminClaim: "groups", AdminValue: "pluginhost-admins",
		DB: open(t, testenv.Backend{DSN: "sqlite:" + t.TempDir() + "/ph.db"}), Keys: &auth.IssuerKeys{Issuer: p.Issuer}}
}

// Every rule of a JWT, against tokens of a real provider and hostile ones
// made with its keys: the rule, the token, and what is refused.
func TestIssuerTokenRules(t *testing.T) {
	p := oidctest.Start(t)
	iss := issuerEnv(t, p)
	ctx := context.Background()
	pub, kid := p.Store.PublicKey()
	der, _ := x509.MarshalPKIXPublicKey(pub)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	jwk, _ := json.Marshal(jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: "RS256", Use: "sig"})
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	ecPriv, ecKid := p.Store.AddKey(t, jose.ES256)
	edPriv, edKid := p.Store.AddKey(t, jose.EdDSA)
	claims := func(change func(map[string]any)) map[string]any {
		c := p.Claims("sub-1", []string{"pluginhost"}, 5*time.Minute)
		if change != nil {
			change(c)
		}
		return c
	}
	now := time.Now()
	tests := []struct {
		rule  string
		token string
		want  string // "" accepted; else a part of the refusal
	}{
		{"a token of the provider's token endpoint", p.Token(t, oidctest.Mint{Subject: "sub-1", Audience: []string{"pluginhost"}}), ""},
		{"aud may be one of several and list others", p.Token(t, oidctest.Mint{Subject: "sub-1", Audience: []string{"other", "console"}}), ""},
		{"aud as a string", p.Sign(t, nil, claims(func(c map[string]any) { c["aud"] = "console" })), ""},
		{"ES256 by a P-256 key the issuer publishes", oidctest.SignWith(t, ecPriv, jose.ES256, ecKid, nil, claims(nil)), ""},
		{"EdDSA by an Ed25519 key the issuer publishes", oidctest.SignWith(t, edPriv, jose.EdDSA, edKid, nil, claims(nil)), ""},
		{"RS256 under the issuer's EC kid", oidctest.SignWith(t, other, jose.RS256, ecKid, nil, claims(nil)), "does not fit"},
		{"ES256 under the issuer's Ed25519 kid", oidctest.SignWith(t, ecKey, jose.ES256, edKid, nil, claims(nil)), "does not fit"},
		{"EdDSA by another key under the issuer's Ed25519 kid", oidctest.SignWith(t, edKey, jose.EdDSA, edKid, nil, claims(nil)), "signature"},
		{"wrong audience", p.Token(t, oidctest.Mint{Subject: "sub-1", Audience: []string{"someone-else"}}), "audience"},
		{"no audience", p.Sign(t, nil, claims(func(c map[string]any) { delete(c, "aud") })), "audience"},
		{"expired 2 minutes ago (past the 60 s leeway)", p.Token(t, oidctest.Mint{Subject: "sub-1", Audience: []string{"pluginhost"}, TTL: -2 * time.Minute}), "expired"},
		{"expired 50 s ago (within the leeway)", p.Sign(t, nil, claims(func(c map[string]any) { c["exp"] = now.Add(-50 * time.Second).Unix() })), ""},
		{"expired 70 s ago (past the leeway)", p.Sign(t, nil, claims(func(c map[string]any) { c["exp"] = now.Add(-70 * time.Second).Unix() })), "expired"},
		{"no exp", p.Sign(t, nil, claims(func(c map[string]any) { delete(c, "exp") })), "no expiry"},
		{"exp not a number", p.Sign(t, nil, claims(func(c map[string]any) { c["exp"] = "soon" })), "exp"},
		{"not valid for 5 minutes (nbf)", p.Sign(t, nil, claims(func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() })), "not valid before"},
		{"nbf 50 s ahead (within the leeway)", p.Sign(t, nil, claims(func(c map[string]any) { c["nbf"] = now.Add(50 * time.Second).Unix() })), ""},
		{"issued 5 minutes in the future (iat)", p.Sign(t, nil, claims(func(c map[string]any) { c["iat"] = now.Add(5 * time.Minute).Unix() })), "future"},
		{"wrong issuer", p.Sign(t, nil, claims(func(c map[string]any) { c["iss"] = "https://evil.example" })), "issuer"},
		{"issuer with a trailing slash", p.Sign(t, nil, claims(func(c map[string]any) { c["iss"] = p.Issuer + "/" })), "issuer"},
		{"no subject", p.Sign(t, nil, claims(func(c map[string]any) { delete(c, "sub") })), "subject"},
		{"alg none", oidctest.Unsigned(claims(nil)), `algorithm "none"`},
		{"alg none with the provider's kid", oidctest.Unsigned(claims(nil)) + "", "algorithm"},
		{"HS256 with the provider's public key (PEM) as secret", oidctest.SignHMAC(map[string]any{"alg": "HS256", "kid": kid, "typ": "JWT"}, claims(nil), pemKey), `algorithm "HS256"`},
		{"HS256 with the provider's public key (DER) as secret", oidctest.SignHMAC(map[string]any{"alg": "HS256", "kid": kid}, claims(nil), der), `algorithm "HS256"`},
		{"HS256 with the provider's JWK as secret", oidctest.SignHMAC(map[string]any{"alg": "HS256"}, claims(nil), jwk), `algorithm "HS256"`},
		{"HS512", oidctest.SignHMAC(map[string]any{"alg": "HS512", "kid": kid}, claims(nil), pemKey), `algorithm "HS512"`},
		{"RS256 by a key the issuer does not publish", oidctest.SignWith(t, other, jose.RS256, "k-unknown", nil, claims(nil)), "does not publish"},
		{"RS256 by another key under the provider's kid", oidctest.SignWith(t, other, jose.RS256, kid, nil, claims(nil)), "signature"},
		{"ES256 under the provider's RSA kid", oidctest.SignWith(t, ecKey, jose.ES256, kid, nil, claims(nil)), "does not fit"},
		{"EdDSA under the provider's RSA kid", oidctest.SignWith(t, edKey, jose.EdDSA, kid, nil, claims(nil)), "does not fit"},
		{"RS384", oidctest.SignWith(t, other, jose.RS384, kid, nil, claims(nil)), `algorithm "RS384"`},
		{"PS256", oidctest.SignWith(t, other, jose.PS256, kid, nil, claims(nil)), `algorithm "PS256"`},
		{"RS256 by a 1024-bit key", oidctest.SignWith(t, small, jose.RS256, "k-small", nil, claims(nil)), "does not publish"},
		{"a critical header", p.Sign(t, map[string]any{"crit": []string{"exp"}, "exp": 1}, claims(nil)), "critical"},
		{"not a JWT", "ph_not-a-jwt", "not a JWT"},
		{"a changed payload", tamper(p.Sign(t, nil, claims(nil))), "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			id, err := iss.Verify(ctx, tt.token)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if id.User == nil || id.User.Issuer != p.Issuer || id.User.Subject != "sub-1" || id.Ends.IsZero() {
					t.Fatalf("identity %+v", id)
				}
				return
			}
			if models.ErrorCode(err) != models.ErrUnauthenticated || !strings.Contains(models.ErrorMessage(err), tt.want) {
				t.Fatalf("got %v, want UNAUTHENTICATED naming %q", err, tt.want)
			}
		})
	}
}

// tamper changes a token's payload, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	json.Unmarshal(raw, &c)
	c["sub"] = "someone-else"
	b, _ := json.Marshal(c)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
}

// A user is (issuer, sub), named by its claims; the admin claim is decided
// on every token; token users and issuer users never merge.
func TestIssuerUsers(t *testing.T) {
	p := oidctest.Start(t)
	iss := issuerEnv(t, p)
	tokens := &auth.Service{DB: iss.DB}
	ctx := context.Background()
	mint := func(claims map[string]any) auth.Identity {
		t.Helper()
		id, err := iss.Verify(ctx, p.Token(t, oidctest.Mint{Subject: "sub-7", Audience: []string{"pluginhost"}, Claims: claims}))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := mint(map[string]any{"preferred_username": "alice", "groups": []string{"staff"}})
	if first.User.Name != "alice" || first.User.Admin {
		t.Fatalf("first token: %+v", first.User)
	}
	admin := mint(map[string]any{"preferred_username": "alice", "groups": []string{"staff", "pluginhost-admins"}})
	if admin.User.ID != first.User.ID || !admin.User.Admin {
		t.Fatalf("the admin group added: %+v", admin.User)
	}
	removed := mint(map[string]any{"name": "Alice Liddell", "groups": []string{"staff"}})
	if removed.User.ID != first.User.ID || removed.User.Admin || removed.User.Name != "Alice Liddell" {
		t.Fatalf("the admin group removed, the name from name: %+v", removed.User)
	}
	// The token remembered keeps what its own claims said.
	if again, err := iss.Verify(ctx, func() string { return "" }()); err == nil {
		t.Fatalf("an empty token: %+v", again)
	}
	// A token user of the same name is another user, and stays one.
	_, tu, err := tokens.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if tu.ID == first.User.ID {
		t.Fatal("the token user alice is the issuer's alice")
	}
	_, tu2, err := tokens.CreateToken(ctx, "Alice Liddell", true)
	if err != nil || tu2.ID == first.User.ID || tu2.Issuer != "" {
		t.Fatalf("a token user named as the issuer's user: %+v %v", tu2, err)
	}
	page, err := tokens.Users(ctx, models.PageArgs{First: new(10)})
	if err != nil || len(page.Nodes()) != 3 {
		t.Fatalf("users: %+v %v", page, err)
	}
	// Names: preferred_username, name, email, else the subject.
	for _, tt := range []struct {
		claims map[string]any
		want   string
	}{
		{map[string]any{"preferred_username": "bob", "name": "Bob", "email": "bob@example.com"}, "bob"},
		{map[string]any{"name": "Bob B", "email": "bob@example.com"}, "Bob B"},
		{map[string]any{"email": "bob@example.com"}, "bob@example.com"},
		{map[string]any{"preferred_username": " \u0007 "}, "sub-9"},
		{map[string]any{}, "sub-9"},
	} {
		id, err := iss.Verify(ctx, p.Token(t, oidctest.Mint{Subject: "sub-9", Audience: []string{"pluginhost"}, Claims: tt.claims}))
		if err != nil || id.User.Name != tt.want {
			t.Fatalf("claims %v: name %q, want %q (%v)", tt.claims, id.User.Name, tt.want, err)
		}
	}
}

// The admin claim: a value, a list containing it, an object's key, or a
// dotted path into nested objects (Keycloak's realm_access.roles).
func TestAdminClaim(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		claims      string
		admin       bool
	}{
		{"groups", "admins", `{"groups": ["a", "admins"]}`, true},
		{"groups", "admins", `{"groups": ["a"]}`, false},
		{"groups", "admins", `{"groups": "admins"}`, true},
		{"groups", "admins", `{"groups": "admins2"}`, false},
		{"realm_access.roles", "admin", `{"realm_access": {"roles": ["admin"]}}`, true},
		{"realm_access.roles", "admin", `{"realm_access": {"roles": ["user"]}}`, false},
		{"https://example.com/roles", "admin", `{"https://example.com/roles": ["admin"]}`, true},
		{"urn:zitadel:iam:org:project:roles", "admin", `{"urn:zitadel:iam:org:project:roles": {"admin": {"1": "x"}}}`, true},
		{"hd", "example.com", `{"hd": "example.com"}`, true},
		{"email_verified", "true", `{"email_verified": true}`, true},
		{"groups", "admins", `{}`, false},
	} {
		var raw map[string]any
		json.Unmarshal([]byte(tt.claims), &raw)
		iss := &auth.Issuer{AdminClaim: tt.name, AdminValue: tt.value}
		if got := iss.Admin(raw); got != tt.admin {
			t.Errorf("%s=%s of %s: admin %v, want %v", tt.name, tt.value, tt.claims, got, tt.admin)
		}
	}
}

// The keys: fetched on first need, fetched again for an unknown kid at
// most once a RefetchInterval however many tokens name one, kept while the
// issuer is down.
func TestIssuerKeys(t *testing.T) {
	p := oidctest.Start(t)
	iss := issuerEnv(t, p)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	iss.Keys.Now = clock
	ctx := context.Background()
	valid := func() string {
		return p.Token(t, oidctest.Mint{Subject: "s", Audience: []string{"pluginhost"}})
	}
	if _, err := iss.Verify(ctx, valid()); err != nil {
		t.Fatal(err)
	}
	if n := p.KeyRequests(); n != 1 {
		t.Fatalf("%d key requests for the first token", n)
	}
	// A rotation: the new kid is fetched once.
	p.Store.Rotate(t)
	if _, err := iss.Verify(ctx, valid()); err != nil {
		t.Fatalf("after a rotation: %v", err)
	}
	if n := p.KeyRequests(); n != 2 {
		t.Fatalf("%d key requests after the rotation", n)
	}
	// 1,000 tokens naming unknown kids, 16 at once: no fetch within the
	// minute, and one after it. (Signed with Ed25519, which is quick.)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	flooding := make([]string, 1000)
	for i := range flooding {
		flooding[i] = oidctest.SignWith(t, other, jose.EdDSA, "k-flood-"+string(rune('a'+i%26))+string(rune('a'+i/26%26)), nil, p.Claims("s", []string{"pluginhost"}, time.Minute))
	}
	flood := func() {
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < 1000; i += 16 {
					if _, err := iss.Verify(ctx, flooding[i]); models.ErrorCode(err) != models.ErrUnauthenticated {
						t.Errorf("an unknown kid: %v", err)
					}
				}
			})
		}
		wg.Wait()
	}
	flood()
	if n := p.KeyRequests(); n != 2 {
		t.Fatalf("%d key requests after a flood within the minute of the last fetch, want 2", n)
	}
	now.Add(int64(auth.DefaultRefetchInterval))
	flood()
	if n := p.KeyRequests(); n != 3 {
		t.Fatalf("%d key requests after a flood a minute later, want 3 (one fetch)", n)
	}
	// The issuer down: a new token of a known key works; a new kid does
	// not, even once a fetch may be tried again.
	known := valid()
	p.Store.Rotate(t)
	unknown := valid()
	p.Down(true)
	defer p.Down(false)
	if _, err := iss.Verify(ctx, known); err != nil {
		t.Fatalf("a known key while the issuer is down: %v", err)
	}
	now.Add(int64(auth.DefaultRefetchInterval))
	if _, err := iss.Verify(ctx, unknown); models.ErrorCode(err) != models.ErrUnauthenticated || !strings.Contains(err.Error(), "does not publish") {
		t.Fatalf("a new key while the issuer is down: %v", err)
	}
	p.Down(false)
	now.Add(int64(auth.DefaultRefetchInterval))
	if _, err := iss.Verify(ctx, unknown); err != nil {
		t.Fatalf("the new key once the issuer is back: %v", err)
	}
}

// Discovery: the document must name the issuer exactly, and its endpoints
// must be https (or http on loopback); an http issuer elsewhere is refused.
func TestIssuerDiscovery(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string
	}{
		{"https://id.example.com/realms/main", ""},
		{"http://localhost:8080", ""},
		{"http://127.0.0.1:5556/dex", ""},
		{"http://[::1]:9000", ""},
		{"http://id.example.com", "loopback"},
		{"http://10.0.0.1", "loopback"},
		{"ftp://id.example.com", "https"},
		{"https://id.example.com?x=1", "not an issuer URL"},
		{"id.example.com", "not an issuer URL"},
	} {
		err := auth.CheckIssuerURL(tt.url)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.url, err, tt.want)
		}
	}
	// A discovery document that names another issuer is not used.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": "https://other.example", "jwks_uri": "http://" + r.Host + "/keys"})
	}))
	defer srv.Close()
	keys := &auth.IssuerKeys{Issuer: srv.URL}
	if _, err := keys.Discovery(context.Background()); err == nil || !strings.Contains(err.Error(), "other.example") {
		t.Fatalf("a document of another issuer: %v", err)
	}
}
