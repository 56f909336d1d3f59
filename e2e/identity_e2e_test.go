package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/gorilla/websocket"

	"pluginhost/internal/browser"
	"pluginhost/internal/oidctest"
	"pluginhost/internal/testenv"
)

// oidcFlags are the serve flags of an identity provider whose tokens name
// the audience pluginhost (or console), whose admins are in the group
// pluginhost-admins.
func oidcFlags(p *oidctest.Provider, extra ...string) []string {
	return append([]string{"--oidc-issuer", p.Issuer, "--oidc-audience", "pluginhost,console", "--oidc-admin-claim", "groups=pluginhost-admins"}, extra...)
}

// jwtOf returns a client with a JWT of the provider for a subject, named
// and grouped as given.
func jwtOf(t *testing.T, p *oidctest.Provider, url, sub, name string, ttl time.Duration, groups ...string) *Client {
	t.Helper()
	claims := map[string]any{"preferred_username": name, "groups": groups}
	return &Client{URL: url, Token: p.Token(t, oidctest.Mint{Subject: sub, Audience: []string{"pluginhost"}, TTL: ttl, Claims: claims})}
}

// expiry reads a JWT's exp.
func expiry(t *testing.T, token string) time.Time {
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	var c struct{ Exp int64 }
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Exp == 0 {
		t.Fatalf("no exp in %s", token)
	}
	return time.Unix(c.Exp, 0)
}

type viewerOf struct {
	Viewer struct {
		ID, Name string
		Admin    bool
		Issuer   *string
		Subject  *string
	}
}

const viewerQuery = `{viewer{id name admin issuer subject}}`

// JWTs of the operator's identity provider, a real OpenID provider run
// in-process, on every route as the contract says: users and admins from
// claims, a key rotation mid-test, hostile tokens refused, the keys fetched
// again at most once a minute under a flood of unknown kids and kept while
// the issuer is down, and a websocket closed at its token's exp.
func TestIssuerJWTs(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		p := oidctest.Start(t)
		pub := NewPublisher(t)
		// The flood below must reach the key cache, not the bound of
		// failed sign-ins (tested on its own).
		srv := Start(t, b.DSN, pub.Dir, oidcFlags(p, "--signin-attempts-per-address", "1000000", "--signin-attempts", "100000000")...)
		h := &host{Server: srv, pub: pub}
		root := h.user(t, "root", true)

		// A user of the provider: made on its first token, named by its
		// claims, on GraphQL.
		alice := jwtOf(t, p, srv.URL, "sub-alice", "alice", 10*time.Minute, "staff")
		var v viewerOf
		alice.Must(t, viewerQuery, nil, &v)
		if v.Viewer.Name != "alice" || v.Viewer.Admin || v.Viewer.Issuer == nil || *v.Viewer.Issuer != p.Issuer || v.Viewer.Subject == nil || *v.Viewer.Subject != "sub-alice" {
			t.Fatalf("the viewer of alice's JWT: %+v", v.Viewer)
		}
		aliceID := v.Viewer.ID
		if n := p.KeyRequests(); n != 1 {
			t.Fatalf("%d key requests for the first token, want 1", n)
		}
		// A token user named alice is another user.
		tokenAlice := h.user(t, "alice", false)
		var tv viewerOf
		tokenAlice.Must(t, viewerQuery, nil, &tv)
		if tv.Viewer.ID == aliceID || tv.Viewer.Issuer != nil || tv.Viewer.Subject != nil {
			t.Fatalf("the token user alice %+v is the issuer's alice (%s)", tv.Viewer, aliceID)
		}

		// REST, the dashboard, the web host, the playground.
		m, files := appNotes(t, nil)
		_, ids := installApp(t, h, alice, m, files, 1)
		if code, body := alice.REST(t, "DELETE", "/v1/plugin-instances/"+ids[0]+"/storage", nil); code != 200 {
			t.Fatalf("the storage reset with a JWT: %d %v", code, body)
		}
		if code, body := tokenAlice.REST(t, "DELETE", "/v1/plugin-instances/"+ids[0]+"/storage", nil); code != 403 {
			t.Fatalf("the token user reset the issuer user's Instance: %d %v", code, body)
		}
		bearer := map[string]string{"Authorization": "Bearer " + alice.Token}
		basic := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+alice.Token))}
		for _, tc := range []struct {
			path    string
			headers map[string]string
			status  int
		}{
			{"/dashboard", bearer, 200},
			{"/dashboard", basic, 200},
			{"/app", basic, 200},
			{"/app/" + ids[0] + "/main", basic, 200},
			{"/playground", bearer, 403}, // alice is no admin
		} {
			if r := get(t, srv.URL+tc.path, tc.headers); r.StatusCode != tc.status {
				t.Fatalf("%s with alice's JWT: %d, want %d", tc.path, r.StatusCode, tc.status)
			}
		}

		// The admin claim, decided on every token: added, then removed.
		admin := jwtOf(t, p, srv.URL, "sub-alice", "alice", 10*time.Minute, "staff", "pluginhost-admins")
		admin.Must(t, viewerQuery, nil, &v)
		if v.Viewer.ID != aliceID || !v.Viewer.Admin {
			t.Fatalf("alice with the admin group: %+v", v.Viewer)
		}
		if r := get(t, srv.URL+"/playground", map[string]string{"Authorization": "Bearer " + admin.Token}); r.StatusCode != 200 {
			t.Fatalf("the playground for alice the admin: %d", r.StatusCode)
		}
		var users struct {
			Users struct {
				Nodes []struct {
					ID, Name        string
					Admin           bool
					Issuer, Subject *string
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   *string
				}
			}
		}
		admin.Must(t, `{users(first:100){edges{cursor node{id}} nodes{id name admin issuer subject} pageInfo{hasNextPage endCursor}}}`, nil, &users)
		kinds := map[string]string{}
		for _, u := range users.Users.Nodes {
			switch {
			case u.Issuer == nil && u.Subject == nil:
				kinds[u.Name+"/token"] = u.ID
			case u.Issuer != nil && *u.Issuer == p.Issuer && u.Subject != nil:
				kinds[u.Name+"/"+*u.Subject] = u.ID
			default:
				t.Fatalf("a user of no known source: %+v", u)
			}
		}
		if kinds["alice/sub-alice"] != aliceID || kinds["alice/token"] != tv.Viewer.ID || kinds["root/token"] == "" || len(kinds) != 3 || users.Users.PageInfo.HasNextPage {
			t.Fatalf("the users: %v (%+v)", kinds, users.Users)
		}
		// Paging: one at a time.
		var page struct {
			Users struct {
				Nodes    []struct{ ID string }
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		after, seen := "", 0
		for {
			admin.Must(t, `query($a:String){users(first:1,after:$a){nodes{id} pageInfo{hasNextPage endCursor}}}`, map[string]any{"a": nilIfEmpty(after)}, &page)
			seen += len(page.Users.Nodes)
			if !page.Users.PageInfo.HasNextPage {
				break
			}
			after = page.Users.PageInfo.EndCursor
		}
		if seen != 3 {
			t.Fatalf("paging one at a time saw %d users", seen)
		}
		admin.Fail(t, "BAD_USER_INPUT", `{users(first:101){nodes{id}}}`, nil)
		admin.Fail(t, "BAD_USER_INPUT", `{users(after:"bm90IGEgY3Vyc29y"){nodes{id}}}`, nil)
		root.Must(t, `{users{nodes{id}}}`, nil, nil)
		removed := jwtOf(t, p, srv.URL, "sub-alice", "alice", 10*time.Minute, "staff")
		removed.Fail(t, "FORBIDDEN", `{users{nodes{id}}}`, nil)
		// The token that still says admin stays an admin's until it expires.
		admin.Must(t, `{users{nodes{id}}}`, nil, nil)

		// A key rotation mid-test: the new key is fetched once; the tokens
		// of the old one keep working while it is published.
		before := p.KeyRequests()
		p.Store.Rotate(t)
		rotated := jwtOf(t, p, srv.URL, "sub-alice", "alice", 10*time.Minute)
		rotated.Must(t, viewerQuery, nil, &v)
		if v.Viewer.ID != aliceID {
			t.Fatalf("after the rotation: %+v", v.Viewer)
		}
		if n := p.KeyRequests(); n != before+1 {
			t.Fatalf("%d key requests for the rotated key, want 1", n-before)
		}
		alice.Must(t, viewerQuery, nil, nil)

		// Hostile tokens, each refused with 401 and nothing else.
		pk, kid := p.Store.PublicKey()
		der, _ := x509.MarshalPKIXPublicKey(pk)
		pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		claims := func(change func(map[string]any)) map[string]any {
			c := p.Claims("sub-mallory", []string{"pluginhost"}, 5*time.Minute)
			if change != nil {
				change(c)
			}
			return c
		}
		for _, tc := range []struct{ name, token string }{
			{"expired (by the provider)", p.Token(t, oidctest.Mint{Subject: "sub-mallory", Audience: []string{"pluginhost"}, TTL: -3 * time.Minute})},
			{"not yet valid", p.Sign(t, nil, claims(func(c map[string]any) { c["nbf"] = time.Now().Add(10 * time.Minute).Unix() }))},
			{"wrong issuer", p.Sign(t, nil, claims(func(c map[string]any) { c["iss"] = "http://localhost:1" }))},
			{"wrong audience (by the provider)", p.Token(t, oidctest.Mint{Subject: "sub-mallory", Audience: []string{"billing"}})},
			{"alg none", oidctest.Unsigned(claims(nil))},
			{"HS256 with the provider's public key as secret", oidctest.SignHMAC(map[string]any{"alg": "HS256", "kid": kid, "typ": "JWT"}, claims(nil), pemKey)},
		} {
			status, body := (&Client{URL: srv.URL, Token: tc.token}).REST(t, "POST", "/graphql", map[string]any{"query": "{viewer{id}}"})
			if status != 401 || errorCode(body) != "UNAUTHENTICATED" || body["data"] != nil {
				t.Fatalf("%s: %d %v", tc.name, status, body)
			}
			ws := DialWS(t, srv.URL, transportWS)
			ws.send(wsMsg{Type: "connection_init", Payload: mustJSON(map[string]any{"Authorization": "Bearer " + tc.token})})
			var ce *websocket.CloseError
			if err := ws.Closed(15 * time.Second); !errors.As(err, &ce) || ce.Code != 4403 {
				t.Fatalf("%s on a websocket: %v", tc.name, err)
			}
		}
		admin.Must(t, `{users(first:100){nodes{subject}}}`, nil, &users)
		for _, u := range users.Users.Nodes {
			if u.Subject != nil && *u.Subject == "sub-mallory" {
				t.Fatal("a refused token made a user")
			}
		}

		// A subscription runs on a websocket opened with a JWT (one that
		// lives long enough for a loaded machine) ...
		long := jwtOf(t, p, srv.URL, "sub-alice", "alice", 10*time.Minute)
		live := DialWS(t, srv.URL, transportWS)
		live.Init(long.Token)
		live.Subscribe("s", ids[0])
		if c := live.Change("s"); c.Operation != "snapshot" {
			t.Fatalf("the subscription of the JWT's socket: %+v", c)
		}
		alice.Must(t, `mutation($i:ID!){storageCreate(instanceId:$i,namespace:"notes",key:"a",value:{text:"x"}){summary}}`, map[string]any{"i": ids[0]}, nil)
		if c := live.Change("s"); c.Operation != "create" {
			t.Fatalf("the subscription of the JWT's socket: %+v", c)
		}
		live.Stop("s")

		// ... and one closes at the token's exp, with 4403 saying so, never
		// before it (a late start only moves the close later).
		short := jwtOf(t, p, srv.URL, "sub-alice", "alice", 4*time.Second)
		exp := expiry(t, short.Token)
		ws := DialWS(t, srv.URL, transportWS)
		ws.Init(short.Token)
		ws.Subscribe("s", ids[0])
		var ce *websocket.CloseError
		err := ws.Closed(time.Minute) // a safety net, not a measure
		closed := time.Now()
		if !errors.As(err, &ce) || ce.Code != 4403 || !strings.Contains(ce.Text, "the token expired") {
			t.Fatalf("the JWT's socket closed with %v, want 4403 the token expired", err)
		}
		if closed.Before(exp.Add(-500 * time.Millisecond)) {
			t.Fatalf("the socket closed at %v, before the token's exp %v", closed, exp)
		}
		t.Logf("the JWT's socket closed %v after its exp", closed.Sub(exp).Round(10*time.Millisecond))

		// 1,000 tokens naming kids the provider never published, 16 at
		// once, within a minute of the last fetch: no key request.
		_, other, _ := ed25519.GenerateKey(rand.Reader) // quick to sign with
		before = p.KeyRequests()
		var wg sync.WaitGroup
		var refused sync.Map
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < 1000; i += 16 {
					tok := oidctest.SignWith(t, other, jose.EdDSA, "k-flood-"+strconv.Itoa(i), nil, claims(nil))
					req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(`{"query":"{viewer{id}}"}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+tok)
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					refused.Store(resp.StatusCode, true)
				}
			})
		}
		wg.Wait()
		refused.Range(func(k, _ any) bool {
			if k != 401 {
				t.Errorf("a token of an unknown kid answered %v", k)
			}
			return true
		})
		if n := p.KeyRequests(); n != before {
			t.Fatalf("%d key requests under a flood of 1,000 unknown kids within the minute, want none", n-before)
		}

		// The issuer down: a new token of a known key works; one of a key
		// rotated in meanwhile does not.
		known := jwtOf(t, p, srv.URL, "sub-bob", "bob", 10*time.Minute)
		p.Store.Rotate(t)
		unknown := jwtOf(t, p, srv.URL, "sub-bob", "bob", 10*time.Minute)
		p.Down(true)
		known.Must(t, viewerQuery, nil, &v)
		if v.Viewer.Name != "bob" {
			t.Fatalf("bob while the issuer is down: %+v", v.Viewer)
		}
		if status, body := unknown.REST(t, "POST", "/graphql", map[string]any{"query": "{viewer{id}}"}); status != 401 {
			t.Fatalf("a token of a new key while the issuer is down: %d %v", status, body)
		}
		p.Down(false)

	})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Failed sign-in attempts are bounded per client address and overall:
// past them 429 with Retry-After, counted in /metrics, for bearer tokens,
// JWTs, HTTP Basic, the sign-in form and websockets alike; the right token
// works again after the window. The server trusts the loopback proxy, so
// that X-Forwarded-For plays the clients' addresses.
func TestSignInAttemptsLimited(t *testing.T) {
	p := oidctest.Start(t)
	pub := NewPublisher(t)
	// The window outlasts every check made while an address is held, even
	// on a loaded machine; the last check waits it out.
	const window = 20 * time.Second
	srv := Start(t, "sqlite:"+t.TempDir()+"/ph.db", pub.Dir, oidcFlags(p, "--signin-attempts-per-address", "5", "--signin-attempts", "12",
		"--signin-window", window.String(), "--trusted-proxies", "127.0.0.1/32,::1")...)
	alice := Token(t, srv.DSN, "alice", false)
	bob := Token(t, srv.DSN, "bob", false)
	call := func(from, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(`{"query":"{viewer{name}}"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", from)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// Five wrong tokens from one address, each 401; the sixth 429, and the
	// right token from there too; another address is not held back.
	for i := range 5 {
		if r := call("10.0.0.1", "ph_wrong"+strconv.Itoa(i)); r.StatusCode != 401 {
			t.Fatalf("wrong token %d: %d", i+1, r.StatusCode)
		}
	}
	r := call("10.0.0.1", "ph_wrong6")
	retry, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.StatusCode != 429 || retry < 1 || retry > int(window/time.Second) {
		t.Fatalf("past the bound: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := call("10.0.0.1", alice); r.StatusCode != 429 {
		t.Fatalf("the right token from the address held back: %d", r.StatusCode)
	}
	if r := call("10.0.0.2", alice); r.StatusCode != 200 {
		t.Fatalf("the right token from another address: %d", r.StatusCode)
	}
	// The sign-in form and HTTP Basic from the held address: 429 too.
	form, _ := http.NewRequest("POST", srv.URL+"/app/login", strings.NewReader(url.Values{"token": {alice}, "next": {"/app"}}.Encode()))
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	form.Header.Set("X-Forwarded-For", "10.0.0.1")
	resp, err := noRedirect.Do(form)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(page), "Too many failed sign-ins") {
		t.Fatalf("the sign-in form from the held address: %d %s", resp.StatusCode, page)
	}
	basic := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+alice)), "X-Forwarded-For": "10.0.0.1"}
	if r := get(t, srv.URL+"/app", basic); r.StatusCode != 429 {
		t.Fatalf("HTTP Basic from the held address: %d", r.StatusCode)
	}
	// A websocket from the held address: connection_init closes 4403
	// saying why.
	d := websocket.Dialer{Subprotocols: []string{transportWS}}
	conn, _, err := d.Dial(strings.Replace(srv.URL, "http://", "ws://", 1)+"/graphql", http.Header{"X-Forwarded-For": {"10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	conn.WriteJSON(wsMsg{Type: "connection_init", Payload: mustJSON(map[string]any{"Authorization": "Bearer " + alice})})
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, _, err = conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4403 || !strings.Contains(ce.Text, "too many failed sign-in attempts") {
		t.Fatalf("a websocket from the held address: %v", err)
	}
	conn.Close()
	// Wrong JWTs and wrong passwords of the form count as well.
	for i := range 5 {
		if r := call("10.0.0.3", oidctest.Unsigned(p.Claims("x", []string{"pluginhost"}, time.Minute))); r.StatusCode != 401 {
			t.Fatalf("a hostile JWT %d: %d", i+1, r.StatusCode)
		}
	}
	if r := call("10.0.0.3", p.Token(t, oidctest.Mint{Subject: "s", Audience: []string{"pluginhost"}})); r.StatusCode != 429 {
		t.Fatalf("a valid JWT after 5 hostile ones from its address: %d", r.StatusCode)
	}
	// Overall: 12 failures from all addresses hold back every credential
	// not already known (bob's was never used), while alice's, known, works.
	for _, from := range []string{"10.0.1.1", "10.0.1.2"} {
		if r := call(from, "ph_wrong"); r.StatusCode != 401 {
			t.Fatalf("a wrong token from %s: %d", from, r.StatusCode)
		}
	}
	if r := call("10.0.1.3", "ph_wrong"); r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a failure past the overall bound: %d", r.StatusCode)
	}
	if r := call("10.0.1.4", bob); r.StatusCode != 429 {
		t.Fatalf("an unknown right token past the overall bound: %d", r.StatusCode)
	}
	if r := call("10.0.1.5", alice); r.StatusCode != 200 {
		t.Fatalf("a known token past the overall bound: %d", r.StatusCode)
	}
	body := fetchText(t, srv.URL+"/metrics")
	for _, want := range []string{`pluginhost_signin_refusals_total{reason="invalid"} 12`, `pluginhost_signin_refusals_total{reason="limited_address"}`,
		`pluginhost_signin_refusals_total{reason="limited_overall"}`} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(body, "signin"))
		}
	}
	if regexp.MustCompile(`reason="limited_(address|overall)"} 0\n`).MatchString(body) {
		t.Fatalf("refusals not counted:\n%s", grepLines(body, "signin"))
	}
	// After the window, the right token works again from the held address.
	time.Sleep(time.Duration(retry)*time.Second + 200*time.Millisecond)
	if r := call("10.0.0.1", alice); r.StatusCode != 200 {
		t.Fatalf("the right token after the window: %d", r.StatusCode)
	}
	if r := call("10.0.1.4", bob); r.StatusCode != 200 {
		t.Fatalf("the unknown right token after the window: %d", r.StatusCode)
	}
}

// waitBody waits for a page, perhaps still loading, to show text.
func waitBody(p *browser.Page, text string) {
	p.T().Helper()
	waitUntil(p, fmt.Sprintf(`document.body !== null && document.body.innerText.indexOf(%q) >= 0`, text), 15*time.Second)
}

func fetchText(t *testing.T, u string) string {
	t.Helper()
	resp, err := httpClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The session cookie, and the cookie of a sign-in with the provider under
// way, are Secure behind TLS: here a proxy that ends TLS and says so in
// X-Forwarded-Proto, as deploy/nginx.conf does; without TLS they are not
// (a browser would drop them).
func TestCookiesSecureBehindTLS(t *testing.T) {
	p := oidctest.Start(t)
	pub := NewPublisher(t)
	srv := Start(t, "sqlite:"+t.TempDir()+"/ph.db", pub.Dir, oidcFlags(p, "--oidc-client-id", "web", "--oidc-client-secret", "s")...)
	token := Token(t, srv.DSN, "alice", false)
	target, _ := url.Parse(srv.URL)
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.SetXForwarded() // X-Forwarded-For, -Host and -Proto: https
	}})
	defer proxy.Close()
	tlsClient := proxy.Client()
	tlsClient.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cookie := func(c *http.Client, base, method, path string, form url.Values, name string) *http.Cookie {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, ck := range resp.Cookies() {
			if ck.Name == name {
				return ck
			}
		}
		t.Fatalf("%s %s: %d, no cookie %s", method, path, resp.StatusCode, name)
		return nil
	}
	signIn := url.Values{"token": {token}, "next": {"/app"}}
	for _, tc := range []struct {
		name   string
		client *http.Client
		base   string
		secure bool
	}{
		{"behind a proxy that ends TLS", tlsClient, proxy.URL, true},
		{"over plain HTTP", noRedirect, srv.URL, false},
	} {
		session := cookie(tc.client, tc.base, "POST", "/app/login", signIn, "pluginhost_session")
		if session.Secure != tc.secure || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Value == "" {
			t.Fatalf("%s: the session cookie %+v", tc.name, session)
		}
		pending := cookie(tc.client, tc.base, "GET", "/app/oidc/start?next=/app", nil, "pluginhost_signin")
		if pending.Secure != tc.secure || !pending.HttpOnly || pending.SameSite != http.SameSiteLaxMode || pending.MaxAge != 600 || pending.Path != "/app/oidc/callback" {
			t.Fatalf("%s: the sign-in cookie %+v", tc.name, pending)
		}
	}
}

// Signing in to the web host with the provider, in Chromium: a deep link
// leads to the sign-in page, its "Sign in with" button to the provider's
// login, and back to the page first asked for, signed in as the provider's
// user, an admin by its group; signing out ends the provider's session too.
// A wrong state, a replayed code and an ID token of another nonce are
// refused and sign no one in.
func TestSignInWithProvider(t *testing.T) {
	testenv.Chromium(t)
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		p := oidctest.Start(t)
		pub := NewPublisher(t)
		srv := Start(t, b.DSN, pub.Dir, oidcFlags(p, "--oidc-client-id", "pluginhost-web", "--oidc-client-secret", "web-secret", "--oidc-name", "Test ID")...)
		h := &host{Server: srv, pub: pub}
		callback := srv.URL + "/app/oidc/callback"
		p.AddClient("pluginhost-web", "web-secret", []string{callback}, []string{srv.URL + "/app/login"})
		p.AddUser(oidctest.User{Subject: "sub-alice", Username: "alice", Password: "alice-pw", Name: "Alice", Email: "alice@example.com", Groups: []string{"pluginhost-admins"}})
		p.AddUser(oidctest.User{Subject: "sub-bob", Username: "bob", Password: "bob-pw", Name: "Bob"})
		// alice's Instance, made with a JWT of hers, for the deep link.
		alice := jwtOf(t, p, srv.URL, "sub-alice", "alice", 10*time.Minute, "pluginhost-admins")
		m, files := appNotes(t, nil)
		_, ids := installApp(t, h, alice, m, files, 1)
		deep := "/app/" + ids[0] + "/main?tab=2"

		// At the provider's login page, from the host's sign-in button.
		toProvider := func(pg *browser.Page, path string) {
			t.Helper()
			pg.Do("Page.navigate", map[string]any{"url": srv.URL + path})
			waitUntil(pg, `location.pathname === "/app/login" && document.querySelector("#provider")`, 15*time.Second)
			if got := pg.EvalString(`document.querySelector("#provider").textContent`); got != "Sign in with Test ID" {
				t.Fatalf("the button says %q", got)
			}
			pg.Click("#provider")
			waitUntil(pg, fmt.Sprintf(`location.host === %q && document.querySelector("#username")`, p.Host), 15*time.Second)
		}
		loginAs := func(pg *browser.Page, user, password string) {
			t.Helper()
			pg.TypeInto("#username", user)
			pg.TypeInto("#password", password)
			pg.Click("#signin")
		}
		viewer := func(pg *browser.Page) (v viewerOf) {
			t.Helper()
			var out struct{ Data viewerOf }
			pg.Eval(`fetch("/app/-/graphql", {method: "POST", headers: {"Content-Type": "application/json", "X-Pluginhost-App": "1"},
				body: JSON.stringify({query: "{viewer{id name admin issuer subject}}"})}).then(r => r.json())`, &out)
			return out.Data
		}
		signedOut := func(pg *browser.Page) {
			t.Helper()
			pg.Do("Page.navigate", map[string]any{"url": srv.URL + "/app"})
			waitUntil(pg, `location.pathname === "/app/login"`, 15*time.Second)
		}
		pendingCookie := func(pg *browser.Page) string {
			var out struct {
				Cookies []struct{ Name, Value string }
			}
			json.Unmarshal(pg.Do("Network.getCookies", map[string]any{"urls": []string{callback}}), &out)
			for _, c := range out.Cookies {
				if c.Name == "pluginhost_signin" {
					return c.Value
				}
			}
			t.Fatal("no sign-in cookie in the browser")
			return ""
		}

		// The deep link survives the sign-in.
		pg := browser.Shared(t).Open(t, "about:blank", nil)
		pg.Do("Network.enable", nil)
		toProvider(pg, deep)
		auths := p.Authorizations()
		q := auths[len(auths)-1]
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" ||
			q.Get("redirect_uri") != callback || q.Get("client_id") != "pluginhost-web" || !strings.Contains(q.Get("scope"), "openid") {
			t.Fatalf("the authorization request %v", q)
		}
		captured := pendingCookie(pg)
		loginAs(pg, "alice", "alice-pw")
		waitUntil(pg, fmt.Sprintf(`location.pathname + location.search === %q`, deep), 15*time.Second)
		pg.WaitFor(liveReady)
		if v := viewer(pg); v.Viewer.Name != "alice" || !v.Viewer.Admin || v.Viewer.Subject == nil || *v.Viewer.Subject != "sub-alice" || v.Viewer.ID == "" {
			t.Fatalf("signed in as %+v", v.Viewer)
		}
		if pg.EvalString(`document.cookie`) != "" {
			t.Fatal("a cookie is readable by the page's scripts")
		}
		// The playground of a session that stands for no token calls the
		// web host's endpoint, which the session authenticates.
		var play string
		pg.Eval(`fetch("/playground").then(r => r.text())`, &play)
		if !strings.Contains(play, `"/app/-/graphql"`) || !strings.Contains(play, "X-Pluginhost-App") || strings.Contains(play, "Bearer") {
			t.Fatalf("the playground of alice's session: %s", play)
		}
		returns := p.Returns()
		back := returns[len(returns)-1]
		// The same callback again in the same browser: the sign-in it
		// belonged to is over.
		pg.Do("Page.navigate", map[string]any{"url": back})
		waitBody(pg, "no sign-in is under way in this browser")
		// And with the cookie of the sign-in, replayed by another client:
		// the provider refuses the used code.
		req, _ := http.NewRequest("GET", back, nil)
		req.Header.Set("Cookie", "pluginhost_signin="+captured)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(string(body), "refused the sign-in") || strings.Contains(resp.Header.Get("Set-Cookie"), "pluginhost_session=") &&
			!strings.Contains(resp.Header.Get("Set-Cookie"), "pluginhost_session=;") {
			t.Fatalf("a replayed code: %d %s %v", resp.StatusCode, body, resp.Header["Set-Cookie"])
		}
		// The session holds: the replays did not end it.
		pg.Do("Page.navigate", map[string]any{"url": srv.URL + "/app"})
		waitUntil(pg, `location.pathname === "/app" && document.readyState === "complete"`, 15*time.Second)
		if v := viewer(pg); v.Viewer.Name != "alice" {
			t.Fatalf("after the replays: %+v", v)
		}

		// Signing out ends the provider's session too: the next sign-in
		// asks for the password again.
		terminated := p.Terminated()
		pg.Do("Page.navigate", map[string]any{"url": srv.URL + "/app"})
		waitUntil(pg, `document.querySelector("[data-ph-account]")`, 15*time.Second)
		pg.Click("[data-ph-account]")
		pg.Click("[data-ph-signout]")
		waitUntil(pg, `location.pathname === "/app/login"`, 15*time.Second)
		if p.Terminated() <= terminated {
			t.Fatal("signing out did not end the provider's session")
		}
		signedOut(pg)
		toProvider(pg, "/app")

		// A wrong state: refused, nobody signed in.
		pg.Do("Page.navigate", map[string]any{"url": callback + "?state=wrong&code=whatever"})
		waitBody(pg, "not for the sign-in this browser began")
		signedOut(pg)

		// An ID token of another nonce: an attacker makes their own
		// authorization request with this browser's state and code
		// challenge (both in the URL this browser went to) and their own
		// nonce, signs in at the provider as bob, and hands this browser
		// the code.
		toProvider(pg, "/app")
		auths = p.Authorizations()
		q = auths[len(auths)-1]
		jar, _ := cookiejar.New(nil)
		var stolen string
		attacker := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if r.URL.Host != p.Host {
				stolen = r.URL.String()
				return http.ErrUseLastResponse
			}
			return nil
		}}
		evil := url.Values{"client_id": {"pluginhost-web"}, "redirect_uri": {callback}, "response_type": {"code"}, "scope": {"openid profile"},
			"state": {q.Get("state")}, "nonce": {"attacker-nonce"}, "code_challenge": {q.Get("code_challenge")}, "code_challenge_method": {"S256"}}
		resp, err = attacker.Get(p.AuthorizationURL() + "?" + evil.Encode())
		if err != nil {
			t.Fatal(err)
		}
		loginPage, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp, err = p.SignIn(attacker, string(loginPage), "bob", "bob-pw")
		if err != nil {
			t.Fatalf("the attacker at the provider: %v: %s", err, loginPage)
		}
		resp.Body.Close()
		if !strings.HasPrefix(stolen, callback+"?") {
			t.Fatalf("the attacker's code: %q", stolen)
		}
		pg.Do("Page.navigate", map[string]any{"url": stolen})
		waitBody(pg, "was not issued for the sign-in this browser began (nonce)")
		signedOut(pg)

		// bob signs in for himself: no admin.
		toProvider(pg, "/app")
		loginAs(pg, "bob", "bob-pw")
		waitUntil(pg, `location.pathname === "/app"`, 15*time.Second)
		if v := viewer(pg); v.Viewer.Name != "bob" || v.Viewer.Admin {
			t.Fatalf("bob signed in as %+v", v.Viewer)
		}
	})
}
