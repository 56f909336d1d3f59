// Package oauthtest gives tests a real OAuth 2 / OpenID provider (zitadel's
// example OP) on loopback HTTPS, with one client registered for the host's
// callback, that records every request to a token endpoint: its own, and
// any URL under /foreign/ (a token URL another publisher might name), so
// that a test can see where the operator's client secret went.
package oauthtest

import (
	"crypto/tls"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	opstorage "github.com/zitadel/oidc/v3/example/server/storage"

	"pluginhost/internal/tlstest"
)

// Test user of the provider's sign-in form.
const (
	Username = "test-user@localhost"
	Password = "verysecure"
)

// Provider is a running provider.
type Provider struct {
	// Issuer is its base URL, https://localhost:PORT/; Host is
	// localhost:PORT.
	Issuer, Host string
	// ClientID and ClientSecret are its client for the host's callback.
	ClientID, ClientSecret string

	mu       sync.Mutex
	requests []TokenRequest
}

// TokenRequest is a request that reached a token endpoint.
type TokenRequest struct {
	Path      string // /oauth/token, or /foreign/...
	GrantType string
	ClientID  string // of the Basic credentials, else of the form
	// Secret: the request carried the client secret (Basic password or
	// client_secret).
	Secret bool
}

// registered serializes the example OP's registry of clients, which is
// global.
var registered sync.Mutex

// Start starts a provider, serving until the test ends, with a certificate
// of ca and a client whose redirect URI is redirect.
func Start(t testing.TB, ca *tlstest.CA, redirect string) *Provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := &Provider{Issuer: fmt.Sprintf("https://localhost:%d/", port), Host: fmt.Sprintf("localhost:%d", port),
		ClientID: fmt.Sprintf("pluginhost-%d", port), ClientSecret: fmt.Sprintf("client-secret-%d-%s", port, strings.Repeat("s", 16))}
	registered.Lock()
	opstorage.RegisterClients(opstorage.WebClient(p.ClientID, p.ClientSecret, redirect))
	registered.Unlock()
	store := opstorage.NewStorage(opstorage.NewUserStore(p.Issuer))
	op := exampleop.SetupServer(p.Issuer, store, slog.New(slog.DiscardHandler), false)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreign := strings.HasPrefix(r.URL.Path, "/foreign/")
		if r.URL.Path == "/oauth/token" || foreign {
			p.record(r)
		}
		if foreign {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		op.ServeHTTP(w, r)
	})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return p
}

// record keeps what a token request carried, leaving its body readable.
func (p *Provider) record(r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	form, _ := url.ParseQuery(string(body))
	req := TokenRequest{Path: r.URL.Path, GrantType: form.Get("grant_type"), ClientID: form.Get("client_id")}
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		req.ClientID, req.Secret = id, secret == p.ClientSecret
	}
	req.Secret = req.Secret || form.Get("client_secret") == p.ClientSecret || strings.Contains(string(body), p.ClientSecret)
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
}

// TokenRequests returns the token requests so far, oldest first.
func (p *Provider) TokenRequests() []TokenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]TokenRequest(nil), p.requests...)
}

// URL returns an address of the provider: AuthorizationURL() is
// URL("auth"), TokenURL() URL("oauth/token").
func (p *Provider) URL(path string) string { return p.Issuer + path }

// AuthorizationURL is the provider's authorization endpoint.
func (p *Provider) AuthorizationURL() string { return p.URL("auth") }

// TokenURL is the provider's token endpoint.
func (p *Provider) TokenURL() string { return p.URL("oauth/token") }

// ForeignTokenURL is a token URL on the provider's host that is not its
// token endpoint: what reaches it is recorded and refused.
func (p *Provider) ForeignTokenURL() string { return p.URL("foreign/token") }

var refresh = regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=([^"]+)">`)

// Refresh returns where a page of the server leads on to by itself (its
// meta refresh), "" when it does not.
func Refresh(page string) string {
	m := refresh.FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}
