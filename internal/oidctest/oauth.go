package oidctest

import (
	"bytes"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
)

// tokenPath is the path of the provider's token endpoint.
const tokenPath = "/oauth/token"

// TokenRequest is a request that reached the token endpoint, or a URL
// under /foreign/.
type TokenRequest struct {
	Path      string // /oauth/token, or /foreign/...
	GrantType string
	ClientID  string // of the Basic credentials, else of the form
	// Secret: the request carried the secret of the client it names (as
	// the Basic password, client_secret, or anywhere in its body).
	Secret bool
}

// record keeps what a token request carried, leaving its body readable.
func (p *Provider) record(r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	form, _ := url.ParseQuery(string(body))
	req := TokenRequest{Path: r.URL.Path, GrantType: form.Get("grant_type"), ClientID: form.Get("client_id")}
	carried := []string{form.Get("client_secret")}
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		req.ClientID, carried = id, append(carried, secret)
	}
	p.Store.mu.Lock()
	if c := p.Store.clients[req.ClientID]; c != nil && c.secret != "" {
		req.Secret = slices.Contains(carried, c.secret) || bytes.Contains(body, []byte(c.secret))
	}
	p.Store.mu.Unlock()
	p.mu.Lock()
	p.tokens = append(p.tokens, req)
	p.mu.Unlock()
}

// TokenRequests returns the requests to the token endpoint and under
// /foreign/ so far, oldest first.
func (p *Provider) TokenRequests() []TokenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]TokenRequest(nil), p.tokens...)
}

// URL returns the address of a path of the provider ("userinfo").
func (p *Provider) URL(path string) string { return p.Issuer + "/" + path }

// AuthorizationURL is the provider's authorization endpoint.
func (p *Provider) AuthorizationURL() string { return p.URL("authorize") }

// TokenURL is the provider's token endpoint.
func (p *Provider) TokenURL() string { return p.Issuer + tokenPath }

// ForeignTokenURL is a token URL on the provider's host that is not its
// token endpoint: what reaches it is recorded and refused.
func (p *Provider) ForeignTokenURL() string { return p.URL("foreign/token") }

var formID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// SignIn fills in the provider's sign-in form, which page (a page of the
// provider's that c was shown) holds, as username with password, and
// returns the provider's answer as c follows it.
func (p *Provider) SignIn(c *http.Client, page, username, password string) (*http.Response, error) {
	id := formID.FindStringSubmatch(page)
	if id == nil {
		return nil, errors.New("no sign-in form of the provider on the page")
	}
	return c.PostForm(p.URL("login"), url.Values{"id": {html.UnescapeString(id[1])}, "username": {username}, "password": {password}})
}

var metaRefresh = regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=([^"]+)">`)

// Refresh returns where a page leads on to by itself (its meta refresh,
// as the host's start link leads on to the provider), "" when it does not.
func Refresh(page string) string {
	m := metaRefresh.FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}
