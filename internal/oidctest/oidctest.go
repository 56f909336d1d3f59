// Package oidctest runs a real OpenID Connect provider in a test's process:
// zitadel/oidc's OpenID provider (package op) over an in-memory storage of
// this package's, on a loopback port, over plain HTTP (Start) or over HTTPS
// with a certificate of a test CA (StartTLS), as a private service the host
// trusts only through --egress-ca. The provider signs what it issues with
// its own keys, which a test may rotate; tokens come from its token
// endpoint (the client credentials grant, shaped by a Mint) or from its
// authorization code flow, whose login page a browser or an HTTP client
// (SignIn) fills in; with the offline_access scope the code flow also
// issues a refresh token, and every refresh issues a new one. Where a test
// needs a token no honest provider issues (another issuer, alg none, HMAC),
// Sign makes it with the provider's keys.
//
// The provider counts the requests for its keys (KeyRequests), can be taken
// down (Down: every connection is dropped), records the authorization
// requests it saw, and records every request to its token endpoint and to
// any URL under /foreign/ (a token URL another publisher might name, which
// it refuses), so that a test can see where a client's secret went.
package oidctest

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"pluginhost/internal/tlstest"
)

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL: http://localhost:PORT, or https:// (a host
	// name, so that a browser treats it as another site than 127.0.0.1).
	Issuer string
	// Host is localhost:PORT.
	Host string
	// Store is its storage: keys, clients, users, requests.
	Store *Storage

	srv         *httptest.Server
	client      *http.Client // trusts the provider's certificate
	down        atomic.Bool
	keyRequests atomic.Int64

	mu        sync.Mutex
	authorize []url.Values // queries of the authorization requests seen
	returns   []string     // where the provider sent browsers back with a code
	tokens    []TokenRequest
}

// Start runs a provider over HTTP until the test ends, with one RS256 key.
func Start(t testing.TB) *Provider {
	t.Helper()
	return start(t, nil)
}

// StartTLS is Start over HTTPS, with a certificate for localhost of ca.
func StartTLS(t testing.TB, ca *tlstest.CA) *Provider {
	t.Helper()
	return start(t, ca)
}

func start(t testing.TB, ca *tlstest.CA) *Provider {
	srv := httptest.NewUnstartedServer(nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	scheme, client, opts := "http", http.DefaultClient, []op.Option{op.WithAllowInsecure()}
	if ca != nil {
		scheme, client, opts = "https", &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}, nil
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}}
		t.Cleanup(client.CloseIdleConnections)
	}
	p := &Provider{Host: fmt.Sprintf("localhost:%d", port), srv: srv, client: client}
	p.Issuer = scheme + "://" + p.Host
	p.Store = newStorage(p.Issuer)
	p.Store.Rotate(t)
	var key [32]byte
	rand.Read(key[:])
	provider, err := op.NewProvider(&op.Config{
		CryptoKey: key, DefaultLogoutRedirectURI: "/signed-out", CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true,
	}, p.Store, op.StaticIssuer(p.Issuer), append(opts, op.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/login", &login{store: p.Store, callback: p.Issuer + "/authorize/callback?id="})
	mux.HandleFunc("/signed-out", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "signed out") })
	mux.HandleFunc("/foreign/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client"}`)
	})
	mux.Handle("/", provider)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close() // as a dead server: the connection drops
					return
				}
			}
		}
		switch {
		case r.URL.Path == "/keys":
			p.keyRequests.Add(1)
		case r.URL.Path == "/authorize":
			p.mu.Lock()
			p.authorize = append(p.authorize, r.URL.Query())
			p.mu.Unlock()
		case r.URL.Path == tokenPath || strings.HasPrefix(r.URL.Path, "/foreign/"):
			p.record(r)
		}
		rec := &locationRecorder{ResponseWriter: w}
		mux.ServeHTTP(rec, r)
		if loc := rec.Header().Get("Location"); strings.Contains(loc, "code=") {
			p.mu.Lock()
			p.returns = append(p.returns, loc)
			p.mu.Unlock()
		}
	})
	if ca != nil {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return p
}

// locationRecorder lets the provider's wrapper read a redirect's Location.
type locationRecorder struct{ http.ResponseWriter }

// Down takes the provider down (every connection is dropped) or up again.
func (p *Provider) Down(down bool) { p.down.Store(down) }

// KeyRequests is how many times its keys (JWKS) were asked for.
func (p *Provider) KeyRequests() int64 { return p.keyRequests.Load() }

// Authorizations are the queries of the authorization requests it saw.
func (p *Provider) Authorizations() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.authorize...)
}

// Returns are the URLs it sent browsers back to with a code.
func (p *Provider) Returns() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.returns...)
}

// Mint shapes a token of the client credentials grant.
type Mint struct {
	Subject  string
	Audience []string
	// TTL sets exp from now (negative: already expired); zero is 5 minutes.
	TTL time.Duration
	// Claims are added to the token (preferred_username, groups, ...).
	Claims map[string]any
}

// Token asks the provider's token endpoint for a JWT access token shaped by
// m (client credentials grant of the minting client).
func (p *Provider) Token(t testing.TB, m Mint) string {
	t.Helper()
	tok, err := p.TryToken(m)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TryToken is Token, returning its error.
func (p *Provider) TryToken(m Mint) (string, error) {
	id := p.Store.addMint(&m)
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"mint:" + id}}
	req, _ := http.NewRequest("POST", p.TokenURL(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(minterID, minterSecret)
	resp, err := p.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &out); err != nil || out.AccessToken == "" {
		return "", fmt.Errorf("token endpoint: %d %s", resp.StatusCode, body)
	}
	return out.AccessToken, nil
}

// Sign signs claims with the provider's current key, with the header
// given (alg and kid are the key's unless the header sets them): a token as
// the provider would make it, or as no honest provider would.
func (p *Provider) Sign(t testing.TB, header, claims map[string]any) string {
	t.Helper()
	k := p.Store.current()
	return SignWith(t, k.priv, k.alg, k.id, header, claims)
}

// SignWith signs claims with a private key of the algorithm, as a compact
// JWS whose header holds alg, kid (when not "") and typ, then header's
// entries.
func SignWith(t testing.TB, priv any, alg jose.SignatureAlgorithm, kid string, header, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	for k, v := range header {
		opts = opts.WithHeader(jose.HeaderKey(k), v)
	}
	key := jose.SigningKey{Algorithm: alg, Key: priv}
	if kid != "" {
		key.Key = jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: string(alg)}
	}
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SignHMAC signs header.claims with HMAC-SHA256 under secret, whatever alg
// the header names: the algorithm confusion attack, with a provider's public
// key as the secret.
func SignHMAC(header, claims map[string]any, secret []byte) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	in := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(in))
	return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Claims are standard claims of the provider for a subject and audience,
// valid for ttl from now.
func (p *Provider) Claims(sub string, aud []string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"iss": p.Issuer, "sub": sub, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(ttl).Unix()}
}

// Unsigned makes a token of alg none: header and claims, no signature.
func Unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none", "typ": "JWT"})
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

// The client the provider mints tokens for (client credentials).
const (
	minterID     = "minter"
	minterSecret = "minter-secret"
)

// AddClient registers a web client for the authorization code flow and
// its refresh tokens.
func (p *Provider) AddClient(id, secret string, redirects, postLogout []string) {
	p.Store.mu.Lock()
	defer p.Store.mu.Unlock()
	p.Store.clients[id] = &client{id: id, secret: secret, redirects: redirects, postLogout: postLogout,
		grants: []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}}
}

// User is a person who signs in at the provider.
type User struct {
	Subject, Username, Password, Name, Email string
	Groups                                   []string
}

// AddUser registers a user, or changes one (by username).
func (p *Provider) AddUser(u User) {
	p.Store.mu.Lock()
	defer p.Store.mu.Unlock()
	p.Store.users[u.Username] = &u
}

// Terminated is how many provider sessions end_session ended.
func (p *Provider) Terminated() int {
	p.Store.mu.Lock()
	defer p.Store.mu.Unlock()
	return p.Store.terminated
}

// randomID returns a random identifier.
func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// login is the provider's own sign-in page: the form, or at once when the
// browser holds a live session of the provider's.
type login struct {
	store    *Storage
	callback string
}

const sessionCookie = "op_session"

var loginPage = template.Must(template.New("login").Parse(`<!doctype html><html><head><title>Provider sign-in</title></head><body>
<h1>Sign in at the provider</h1>{{if .Problem}}<p id="problem">{{.Problem}}</p>{{end}}
<form method="post" action="/login"><input type="hidden" name="id" value="{{.ID}}">
<label>User <input id="username" name="username"></label> <label>Password <input id="password" name="password" type="password"></label>
<button id="signin" type="submit">Sign in</button></form></body></html>`))

func (l *login) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("id")
	if id == "" {
		id = r.FormValue("authRequestID")
	}
	if r.Method == http.MethodGet {
		if c, err := r.Cookie(sessionCookie); err == nil {
			if sub, ok := l.store.session(c.Value); ok && l.store.done(id, sub) {
				http.Redirect(w, r, l.callback+url.QueryEscape(id), http.StatusFound)
				return
			}
		}
		loginPage.Execute(w, map[string]string{"ID": id})
		return
	}
	u := l.store.user(r.PostFormValue("username"), r.PostFormValue("password"))
	if u == nil {
		w.WriteHeader(http.StatusUnauthorized)
		loginPage.Execute(w, map[string]string{"ID": id, "Problem": "wrong user or password"})
		return
	}
	if !l.store.done(id, u.Subject) {
		http.Error(w, "no such authorization request", http.StatusBadRequest)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: l.store.startSession(u.Subject), Path: "/", HttpOnly: true})
	http.Redirect(w, r, l.callback+url.QueryEscape(id), http.StatusFound)
}

// Storage is the provider's in-memory storage (op.Storage and
// op.ClientCredentialsStorage).
type Storage struct {
	issuer string

	mu         sync.Mutex
	keys       []*signingKey // published, the newest last
	signing    *signingKey
	clients    map[string]*client
	users      map[string]*User // by username
	requests   map[string]*authRequest
	codes      map[string]string // code → request id
	mints      map[string]*Mint
	sessions   map[string]string // provider browser session → subject
	refresh    map[string]*refreshGrant
	terminated int
}

func newStorage(issuer string) *Storage {
	s := &Storage{issuer: issuer, clients: map[string]*client{}, users: map[string]*User{}, requests: map[string]*authRequest{},
		codes: map[string]string{}, mints: map[string]*Mint{}, sessions: map[string]string{}, refresh: map[string]*refreshGrant{}}
	s.clients[minterID] = &client{id: minterID, secret: minterSecret, grants: []oidc.GrantType{oidc.GrantTypeClientCredentials}}
	return s
}

// signingKey is one of the provider's keys.
type signingKey struct {
	id   string
	alg  jose.SignatureAlgorithm
	priv any
	pub  any
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return k.alg }
func (k *signingKey) Algorithm() jose.SignatureAlgorithm          { return k.alg }
func (k *signingKey) Key() any                                    { return k.priv }
func (k *signingKey) ID() string                                  { return k.id }
func (k *signingKey) Use() string                                 { return "sig" }

// publicKey is a published key.
type publicKey struct{ *signingKey }

func (k publicKey) Key() any { return k.pub }

// Rotate makes a new RS256 key the signing key; the keys before it stay
// published (as providers publish the previous key while its tokens live).
// It returns the new key's id.
func (s *Storage) Rotate(t testing.TB) string {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k := &signingKey{id: "k-" + randomID(), alg: jose.RS256, priv: priv, pub: &priv.PublicKey}
	s.mu.Lock()
	s.keys = append(s.keys, k)
	s.signing = k
	s.mu.Unlock()
	return k.id
}

// AddKey publishes a new key of the algorithm (ES256 on P-256, or EdDSA)
// beside the others, without signing with it, and returns its private key
// and id, for a test to sign with.
func (s *Storage) AddKey(t testing.TB, alg jose.SignatureAlgorithm) (any, string) {
	k := &signingKey{id: "k-" + randomID(), alg: alg}
	switch alg {
	case jose.ES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k.priv, k.pub = priv, &priv.PublicKey
	case jose.EdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k.priv, k.pub = priv, pub
	default:
		t.Fatalf("AddKey: %s is not ES256 or EdDSA", alg)
	}
	s.mu.Lock()
	s.keys = append(s.keys, k)
	s.mu.Unlock()
	return k.priv, k.id
}

// Withdraw stops publishing every key but the signing one.
func (s *Storage) Withdraw() {
	s.mu.Lock()
	s.keys = []*signingKey{s.signing}
	s.mu.Unlock()
}

// PublicKey is the signing key's public key and id.
func (s *Storage) PublicKey() (*rsa.PublicKey, string) {
	k := s.current()
	return k.pub.(*rsa.PublicKey), k.id
}

func (s *Storage) current() *signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signing
}

func (s *Storage) addMint(m *Mint) string {
	id := randomID()
	s.mu.Lock()
	s.mints[id] = m
	s.mu.Unlock()
	return id
}

// mintOf finds the Mint a request's scopes name.
func (s *Storage) mintOf(scopes []string) *Mint {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range scopes {
		if id, ok := strings.CutPrefix(sc, "mint:"); ok {
			return s.mints[id]
		}
	}
	return nil
}

func (s *Storage) user(name, password string) *User {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.users[name]; u != nil && u.Password == password {
		return u
	}
	return nil
}

func (s *Storage) userBySubject(sub string) *User {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.Subject == sub {
			return u
		}
	}
	return nil
}

func (s *Storage) startSession(sub string) string {
	id := randomID()
	s.mu.Lock()
	s.sessions[id] = sub
	s.mu.Unlock()
	return id
}

func (s *Storage) session(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.sessions[id]
	return sub, ok
}

// done marks an authorization request signed in as sub.
func (s *Storage) done(id, sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.requests[id]
	if r == nil {
		return false
	}
	r.subject, r.isDone, r.authTime = sub, true, time.Now()
	return true
}

// authRequest is an authorization request under way.
type authRequest struct {
	id, clientID, redirectURI, state, nonce string
	scopes                                  []string
	responseType                            oidc.ResponseType
	responseMode                            oidc.ResponseMode
	challenge                               *oidc.CodeChallenge
	subject                                 string
	isDone                                  bool
	authTime                                time.Time
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.isDone }

// mintRequest is a token request of the client credentials grant.
type mintRequest struct {
	m      *Mint
	scopes []string
}

func (r *mintRequest) GetSubject() string    { return r.m.Subject }
func (r *mintRequest) GetAudience() []string { return r.m.Audience }
func (r *mintRequest) GetScopes() []string   { return r.scopes }

// client is a client of the provider.
type client struct {
	id, secret            string
	redirects, postLogout []string
	grants                []oidc.GrantType
}

func (c *client) GetID() string                    { return c.id }
func (c *client) RedirectURIs() []string           { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string { return c.postLogout }
func (c *client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeWeb
}
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType { return c.grants }
func (c *client) LoginURL(id string) string    { return "/login?authRequestID=" + url.QueryEscape(id) }
func (c *client) AccessTokenType() op.AccessTokenType {
	return op.AccessTokenTypeJWT
}
func (c *client) IDTokenLifetime() time.Duration { return 5 * time.Minute }
func (c *client) DevMode() bool                  { return false }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(string) bool           { return true }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }

var errNotFound = errors.New("not found")

// op.AuthStorage

func (s *Storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	a := &authRequest{id: randomID(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State, nonce: r.Nonce,
		scopes: r.Scopes, responseType: r.ResponseType, responseMode: r.ResponseMode}
	if r.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.mu.Lock()
	s.requests[a.id] = a
	s.mu.Unlock()
	return a, nil
}

func (s *Storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.requests[id]; r != nil {
		return r, nil
	}
	return nil, errNotFound
}

func (s *Storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("code unknown, used or expired")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *Storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	s.codes[code] = id
	s.mu.Unlock()
	return nil
}

// DeleteAuthRequest ends a request once its code was exchanged: the code
// is single use.
func (s *Storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *Storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	ttl := 5 * time.Minute
	if m, ok := r.(*mintRequest); ok && m.m.TTL != 0 {
		ttl = m.m.TTL
	}
	return randomID(), time.Now().Add(ttl), nil
}

// CreateAccessAndRefreshTokens issues a refresh token with the access
// token; a refresh replaces the refresh token it used, which ends.
func (s *Storage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	var g refreshGrant
	switch r := r.(type) {
	case *authRequest:
		g = refreshGrant{clientID: r.clientID, subject: r.subject, audience: r.GetAudience(), scopes: r.scopes, amr: r.GetAMR(), authTime: r.authTime}
	case *refreshGrant:
		g = *r
	default:
		return "", "", time.Time{}, fmt.Errorf("no refresh token for a %T", r)
	}
	id, exp, _ := s.CreateAccessToken(ctx, r)
	token := "rt-" + randomID()
	s.mu.Lock()
	defer s.mu.Unlock()
	if current != "" {
		if s.refresh[current] == nil {
			return "", "", time.Time{}, op.ErrInvalidRefreshToken
		}
		delete(s.refresh, current)
	}
	s.refresh[token] = &g
	return id, token, exp, nil
}

func (s *Storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.refresh[token]
	if g == nil {
		return nil, op.ErrInvalidRefreshToken
	}
	c := *g
	return &c, nil
}

// refreshGrant is what a refresh token stands for.
type refreshGrant struct {
	clientID, subject string
	audience, scopes  []string
	amr               []string
	authTime          time.Time
}

func (g *refreshGrant) GetAMR() []string                 { return g.amr }
func (g *refreshGrant) GetAudience() []string            { return g.audience }
func (g *refreshGrant) GetAuthTime() time.Time           { return g.authTime }
func (g *refreshGrant) GetClientID() string              { return g.clientID }
func (g *refreshGrant) GetScopes() []string              { return g.scopes }
func (g *refreshGrant) GetSubject() string               { return g.subject }
func (g *refreshGrant) SetCurrentScopes(scopes []string) { g.scopes = scopes }

// TerminateSession ends the user's provider sessions (end_session).
func (s *Storage) TerminateSession(_ context.Context, userID, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sub := range s.sessions {
		if sub == userID {
			delete(s.sessions, id)
			s.terminated++
		}
	}
	return nil
}

// RevokeToken ends a refresh token (access tokens are JWTs: they live
// until they expire).
func (s *Storage) RevokeToken(_ context.Context, token, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.refresh[token]; g != nil && g.clientID == clientID {
		delete(s.refresh, token)
	}
	return nil
}

func (s *Storage) GetRefreshTokenInfo(_ context.Context, clientID, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.refresh[token]; g != nil && g.clientID == clientID {
		return g.subject, token, nil
	}
	return "", "", op.ErrInvalidRefreshToken
}

func (s *Storage) SigningKey(context.Context) (op.SigningKey, error) { return s.current(), nil }

func (s *Storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *Storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

// op.OPStorage

func (s *Storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[id]; c != nil {
		return c, nil
	}
	return nil, errNotFound
}

func (s *Storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[id]; c != nil && c.secret == secret {
		return nil
	}
	return errors.New("wrong client or secret")
}

func (s *Storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, sub, _ string, scopes []string) error {
	s.userinfo(info, sub, scopes)
	return nil
}

func (s *Storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, _, sub, _ string) error {
	s.userinfo(info, sub, []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail})
	return nil
}

func (s *Storage) userinfo(info *oidc.UserInfo, sub string, scopes []string) {
	u := s.userBySubject(sub)
	if u == nil {
		return
	}
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeOpenID:
			info.Subject = u.Subject
		case oidc.ScopeProfile:
			info.PreferredUsername, info.Name = u.Username, u.Name
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, true
		}
	}
	if len(u.Groups) > 0 {
		info.AppendClaims("groups", u.Groups)
	}
}

func (s *Storage) SetIntrospectionFromToken(_ context.Context, r *oidc.IntrospectionResponse, _, sub, clientID string) error {
	r.Active, r.Subject, r.ClientID = true, sub, clientID
	return nil
}

func (s *Storage) GetPrivateClaimsFromScopes(_ context.Context, sub, _ string, scopes []string) (map[string]any, error) {
	if m := s.mintOf(scopes); m != nil {
		return m.Claims, nil
	}
	if u := s.userBySubject(sub); u != nil && len(u.Groups) > 0 {
		return map[string]any{"groups": u.Groups, "preferred_username": u.Username}, nil
	}
	return nil, nil
}

func (s *Storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s *Storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

func (s *Storage) Health(context.Context) error { return nil }

// op.ClientCredentialsStorage

func (s *Storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return s.GetClientByClientID(ctx, id)
}

func (s *Storage) ClientCredentialsTokenRequest(_ context.Context, _ string, scopes []string) (op.TokenRequest, error) {
	m := s.mintOf(scopes)
	if m == nil {
		return nil, errors.New("no mint names these scopes")
	}
	return &mintRequest{m: m, scopes: scopes}, nil
}
