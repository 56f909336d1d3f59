package e2e

import (
	"crypto/ed25519"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pluginhost/bundle"
	"pluginhost/internal/browser"
	"pluginhost/internal/oidctest"
	"pluginhost/internal/testenv"
	"pluginhost/internal/tlstest"
	"pluginhost/internal/wasmtest"
)

func keyIDOf(p *Publisher) string { return bundle.KeyID(p.Key.Public().(ed25519.PublicKey)) }

// A plugin id belongs to the publisher key that first installed it: a second
// trusted publisher's package of that id is refused, naming the id and both
// keys, whoever installs it (another user, the same user), and as an update;
// the first publisher's packages install for anyone.
func TestPluginIDsStayWithTheirPublisherE2E(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		admin, alice, bob := h.user(t, "admin", true), h.user(t, "alice", false), h.user(t, "bob", false)
		other := NewPublisher(t) // not in --trusted-keys: the admin trusts it
		admin.Must(t, `mutation($k:String!){trustPublisherKey(publicKey:$k)}`,
			map[string]any{"k": bundle.FormatPublicKey(other.Key.Public().(ed25519.PublicKey))}, nil)
		m := manifest("com.test.owned", ns("n", 100))
		instl, _ := h.install(t, alice, m, 1)
		newer := versioned(m, "2.0.0", 1)
		for _, tc := range []struct {
			name  string
			c     *Client
			query string
			vars  map[string]any
		}{
			{"another user installs", bob, installMutation, map[string]any{"p": other.Sign(t, m, nil)}},
			{"the same user installs", alice, installMutation, map[string]any{"p": other.Sign(t, m, nil)}},
			{"an update", alice, updateMutation, map[string]any{"i": instl, "p": other.Sign(t, newer, nil)}},
		} {
			e := tc.c.Fail(t, "PACKAGE_REJECTED", tc.query, tc.vars)
			for _, says := range []string{"com.test.owned", keyIDOf(h.pub), keyIDOf(other)} {
				if !strings.Contains(e.Message, says) {
					t.Fatalf("%s: %q does not name %s", tc.name, e.Message, says)
				}
			}
		}
		h.install(t, bob, m, 0)
		alice.Must(t, updateMutation, map[string]any{"i": instl, "p": h.pub.Sign(t, newer, nil)}, nil)
	})
}

// oauthApp is the web host's test plugin with an OAuth connection to the
// provider (authorization at authorization_url, tokens at tokenURL) and a
// tool that fetches what its arguments list.
func oauthApp(t *testing.T, op *oidctest.Provider, version, tokenURL string) (map[string]any, map[string]string) {
	m, files := appNotes(t, nil)
	m["version"] = version
	m["network"] = map[string]any{"hosts": []any{op.Host}}
	m["connections"] = []any{map[string]any{"id": "id", "label": "Example ID", "kind": "oauth2", "hosts": []any{op.Host},
		"oauth2": map[string]any{"authorization_url": op.AuthorizationURL(), "token_url": tokenURL, "scopes": []any{"openid", "email"}}}}
	m["capabilities"] = []any{map[string]any{"id": "me.fetch", "kind": "tool", "description": "fetches", "module": "capabilities/fetch.wasm"}}
	files["capabilities/fetch.wasm"] = string(wasmtest.Reactor(t, "../sandbox/testdata/reactors", "fetch"))
	return m, files
}

// signedIn opens a page of its own (its own cookies) signed in to the web
// host with a sign-in link, as a person would; an empty token leaves it
// signed out. It ignores certificate errors, so that it reaches the test
// provider, whose authority only the server trusts.
func signedIn(t *testing.T, srv *Server, token string) *browser.Page {
	t.Helper()
	p := browser.Shared(t).Open(t, "about:blank", nil)
	p.Do("Security.setIgnoreCertificateErrors", map[string]any{"ignore": true})
	p.RecordRequests()
	if token != "" {
		p.Do("Page.navigate", map[string]any{"url": srv.URL + "/app/login?token=" + url.QueryEscape(token) + "&next=/app"})
		waitUntil(p, `location.pathname === "/app" && document.readyState === "complete"`, 15*time.Second)
	}
	return p
}

// goTo navigates a page and waits until it is done.
func goTo(p *browser.Page, u string, until string) {
	p.T().Helper()
	p.Do("Page.navigate", map[string]any{"url": u})
	waitUntil(p, until+` && document.readyState === "complete"`, 15*time.Second)
}

// The provider's user and the operator's client of it, for the OAuth tests.
var (
	oauthUser   = oidctest.User{Subject: "sub-carol", Username: "carol", Password: "carol-pw", Name: "Carol", Email: "carol@example.com"}
	oauthClient = struct{ ID, Secret string }{"pluginhost-oauth", "oauth-client-secret-7f3a9c1e5b"}
)

// viaProvider opens a start link as a script of the user (its bearer token
// and a cookie jar of its own), signs in at the provider and returns the
// callback URL the provider sent it back to, without going there, and the
// client (holding the state cookie).
func viaProvider(t *testing.T, ca *tlstest.CA, op *oidctest.Provider, link, token string) (string, *http.Client) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	var back string
	c := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Path == "/v1/oauth/callback" {
				back = req.URL.String()
				return http.ErrUseLastResponse
			}
			return nil
		}}
	req, _ := http.NewRequest("GET", link, nil)
	req.Header.Set("Authorization", "Bearer "+token) // dropped on the redirect to the provider's host
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if to := oidctest.Refresh(string(page)); to != "" { // the start link's page leads on to the provider
		if resp, err = c.Get(to); err != nil {
			t.Fatal(err)
		}
		page, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	at := resp
	resp, err = op.SignIn(c, string(page), oauthUser.Username, oauthUser.Password)
	if err != nil {
		t.Fatalf("at the provider: %d %s: %v", at.StatusCode, page, err)
	}
	resp.Body.Close()
	if back == "" {
		t.Fatalf("the provider did not send the script back (%d at %s)", resp.StatusCode, resp.Request.URL)
	}
	return back, c
}

// The OAuth flow of the contract's "Connections and publishers, hardened", in
// Chromium against a real provider: startOAuth hands a link on this server;
// a browser with no session is sent to sign in, another user's browser is
// asked to sign in as the user who started it, and neither reaches the
// provider; a callback brought to another browser (signed in or not) is
// refused, and so is a replayed state; the right browser connects. The
// provider sees a token request only from the flows that completed, each at
// its token endpoint with the client's secret. A package that moves the
// token URL leaves the connection unusable, and nothing reaches the new URL.
func TestOAuthInBrowserE2E(t *testing.T) {
	testenv.Chromium(t)
	ca := tlstest.NewCA(t, "oauth e2e CA")
	pub := NewPublisher(t)
	h := &host{Server: Start(t, "sqlite:"+filepath.Join(t.TempDir(), "oauth.db"), pub.Dir,
		"--egress-allow-private", "127.0.0.0/8,::1", "--egress-ca", ca.PEMFile), pub: pub}
	op := oidctest.StartTLS(t, ca)
	op.AddClient(oauthClient.ID, oauthClient.Secret, []string{h.URL + "/v1/oauth/callback"}, nil)
	op.AddUser(oauthUser)
	admin, alice, bob := h.user(t, "admin", true), h.user(t, "alice", false), h.user(t, "bob", false)
	m, files := oauthApp(t, op, "1.0.0", op.TokenURL())
	instl, ids := installApp(t, h, alice, m, files, 1)
	id := ids[0]
	alice.Must(t, `mutation($i:ID!){setInstanceGrant(instanceId:$i,permission:"network",granted:true){grants}}`, map[string]any{"i": id}, nil)
	const setClient = `mutation($c:String!,$s:String!){setOAuthClient(pluginId:"com.test.appnotes",connection:"id",clientId:$c,clientSecret:$s)}`
	admin.Must(t, setClient, map[string]any{"c": oauthClient.ID, "s": oauthClient.Secret}, nil)
	const start = `mutation($i:ID!){startOAuth(instanceId:$i,connection:"id"){authorizationUrl}}`
	startLink := func() string {
		var out struct {
			StartOAuth struct{ AuthorizationURL string }
		}
		alice.Must(t, start, map[string]any{"i": id}, &out)
		if !strings.HasPrefix(out.StartOAuth.AuthorizationURL, h.URL+"/v1/oauth/start?") {
			t.Fatalf("startOAuth answered %s, not a link on this server", out.StartOAuth.AuthorizationURL)
		}
		return out.StartOAuth.AuthorizationURL
	}
	connected := func() bool {
		var out struct {
			Instance struct{ Connections []struct{ Connected bool } }
		}
		alice.Must(t, `query($i:ID!){instance(id:$i){connections{connected}}}`, map[string]any{"i": id}, &out)
		return out.Instance.Connections[0].Connected
	}
	tokenRequests := func(want int) {
		t.Helper()
		got := op.TokenRequests()
		if len(got) != want {
			t.Fatalf("the provider saw %d token requests, want %d: %+v", len(got), want, got)
		}
		for _, r := range got {
			if r.Path != "/oauth/token" || !r.Secret || r.ClientID != oauthClient.ID {
				t.Fatalf("a token request: %+v", r)
			}
		}
	}
	onProvider := func(p *browser.Page) bool {
		for _, r := range p.Requests() {
			if strings.Contains(r, op.Host) {
				return true
			}
		}
		return false
	}

	// A browser with no session is sent to sign in; another user's is
	// asked to sign in as the user who started it. Neither reaches the
	// provider, and the link stays usable.
	link := startLink()
	nobody, bobs := signedIn(t, h.Server, ""), signedIn(t, h.Server, bob.Token)
	goTo(nobody, link, `location.pathname === "/app/login"`)
	if next := nobody.EvalString(`new URLSearchParams(location.search).get("next")`); next != strings.TrimPrefix(link, h.URL) {
		t.Fatalf("the sign-in page leads on to %q, not the link", next)
	}
	goTo(bobs, link, `location.pathname === "/v1/oauth/start"`)
	if text := pageText(bobs); !strings.Contains(text, "started by another user") || !bobs.EvalBool(`!!document.querySelector('a[href^="/app/login?next="]')`) {
		t.Fatalf("bob's browser shows: %s", text)
	}
	if onProvider(nobody) || onProvider(bobs) {
		t.Fatal("a browser that is not the user's reached the provider")
	}

	// A callback brought to another browser, signed in or not, is refused,
	// and leaves the state to the browser that started it.
	back, script := viaProvider(t, ca, op, link, alice.Token)
	for _, p := range []*browser.Page{nobody, bobs} {
		goTo(p, back, `location.pathname === "/v1/oauth/callback"`)
		if text := pageText(p); !strings.Contains(text, "Not connected") || !strings.Contains(text, "started in another browser") {
			t.Fatalf("a callback in another browser shows: %s", text)
		}
	}
	tokenRequests(0)
	resp, err := script.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !connected() {
		t.Fatalf("the browser that started it: %d, connected %v", resp.StatusCode, connected())
	}
	tokenRequests(1)
	alice.Must(t, `mutation($i:ID!){disconnect(instanceId:$i,connection:"id")}`, map[string]any{"i": id}, nil)

	// The right browser: the app's Connect button, the provider's sign-in,
	// and back on the plugin's first screen, connected.
	alices := signedIn(t, h.Server, alice.Token)
	goTo(alices, h.URL+"/app/"+id+"/main", `!!document.querySelector('[data-ph-connect="id"]')`)
	alices.Click(`[data-ph-connect="id"]`)
	waitUntil(alices, `location.host === "`+op.Host+`" && !!document.querySelector("#username")`, 15*time.Second)
	alices.TypeInto("#username", oauthUser.Username)
	alices.TypeInto("#password", oauthUser.Password)
	alices.Click(`button[type=submit]`)
	waitUntil(alices, `location.pathname === "/app/`+id+`/main" && location.search === "?connected=id"`, 15*time.Second)
	waitUntil(alices, `!document.querySelector('[data-ph-connection]')`, 15*time.Second)
	if !connected() {
		t.Fatal("not connected after the right browser came back")
	}
	tokenRequests(2)
	var cookies struct {
		Cookies []struct {
			Name, SameSite, Path string
			HTTPOnly             bool `json:"httpOnly"`
		}
	}
	json.Unmarshal(alices.Do("Network.getCookies", map[string]any{"urls": []string{h.URL + "/v1/oauth/callback"}}), &cookies)
	state := false
	for _, c := range cookies.Cookies {
		state = state || c.Name == "pluginhost_oauth" && c.HTTPOnly && c.SameSite == "Lax" && c.Path == "/v1/oauth/"
	}
	if !state {
		t.Fatalf("cookies of the right browser: %+v, want the state cookie (HttpOnly, SameSite=Lax, /v1/oauth/)", cookies)
	}

	// The same state again, in the same browser: refused.
	var callback string
	for _, r := range alices.Requests() {
		if u, ok := strings.CutPrefix(r, "GET "); ok && strings.HasPrefix(u, h.URL+"/v1/oauth/callback?") {
			callback = u
		}
	}
	if callback == "" {
		t.Fatalf("the right browser never came back to the callback: %v", alices.Requests())
	}
	goTo(alices, callback, `location.pathname === "/v1/oauth/callback"`)
	if text := pageText(alices); !strings.Contains(text, "completed already") {
		t.Fatalf("a replayed state shows: %s", text)
	}
	tokenRequests(2)

	// A browser with no session that signs in as the user who started the
	// link goes on to the provider.
	signing := signedIn(t, h.Server, "")
	goTo(signing, startLink(), `location.pathname === "/app/login" && !!document.querySelector("#token")`)
	signing.TypeInto("#token", alice.Token)
	signing.Click(`button[type=submit]`)
	waitUntil(signing, `location.host === "`+op.Host+`" && !!document.querySelector("#username")`, 15*time.Second)

	// A package that sends the token request elsewhere: the connection is
	// unusable until the admin sets the client again, and nothing reaches
	// the new URL, whatever the user does.
	m2, files2 := oauthApp(t, op, "1.1.0", op.ForeignTokenURL())
	alice.Must(t, updateMutation, map[string]any{"i": instl, "p": h.pub.Sign(t, m2, files2)}, nil)
	if connected() {
		t.Fatal("a connection whose token URL moved shows as connected")
	}
	fetch := map[string]any{"i": id, "a": map[string]any{"rounds": 1, "requests": []any{map[string]any{"id": "me", "method": "GET", "url": op.URL("userinfo"), "connection": "id"}}}}
	_, errs := retryWhileCompiling(t, alice, `mutation($i:ID!,$a:JSON){invoke(instanceId:$i,capability:"me.fetch",arguments:$a){summary}}`, fetch)
	if len(errs) != 1 || errs[0].Extensions["reason"] != "connection_required" || errs[0].Extensions["request"] != "me" || errs[0].Extensions["host"] != op.Host ||
		!strings.Contains(errs[0].Message, "setOAuthClient") {
		t.Fatalf("a fetch with the moved connection: %+v", errs)
	}
	if e := alice.Fail(t, "PLUGIN_STORAGE_INVALID", start, map[string]any{"i": id}); !strings.Contains(e.Message, op.ForeignTokenURL()) {
		t.Fatalf("startOAuth with the moved connection: %s", e.Message)
	}
	goTo(alices, h.URL+"/app/"+id+"/main", `!!document.querySelector('[data-ph-connect="id"]')`)
	tokenRequests(2)
	for _, r := range op.TokenRequests() {
		if strings.HasPrefix(r.Path, "/foreign/") {
			t.Fatalf("a token request reached the foreign URL: %+v", r)
		}
	}
	if strings.Contains(h.Log(), oauthClient.Secret) {
		t.Fatal("the client secret shows in the server log")
	}
}
