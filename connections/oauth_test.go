package connections_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pluginhost/capability"
	"pluginhost/connections"
	"pluginhost/internal/fixture"
	"pluginhost/internal/oidctest"
	"pluginhost/internal/testenv"
	"pluginhost/internal/tlstest"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// browser is a browser of the test: it follows redirects and, unless it
// stops at the host's answers, a page's meta refresh to the provider; it
// keeps cookies, trusts the test CA, sends a bearer token to the host
// (never to the provider), and stops at the host's pages of the app.
type browser struct {
	*http.Client
	host, token string
	back        string // the last callback URL the provider sent it to
	stop        bool   // at the host's answers: no redirect, no refresh
}

func newBrowser(ca *tlstest.CA, host, token string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{host: host, token: token}
	b.Client = &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasSuffix(req.URL.Path, connections.CallbackPath) {
				b.back = req.URL.String()
			}
			b.sign(req)
			if strings.HasPrefix(req.URL.Path, "/app/") {
				return http.ErrUseLastResponse
			}
			return nil
		}}
	return b
}

func (b *browser) sign(req *http.Request) {
	req.Header.Del("Authorization")
	if b.token != "" && strings.HasPrefix(req.URL.String(), b.host) {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
}

// get opens a URL and returns the answer with its body read.
func (b *browser) get(t *testing.T, u string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	b.sign(req)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if to := oidctest.Refresh(string(body)); to != "" && !b.stop && !strings.HasPrefix(to, "/") {
		return b.get(t, to)
	}
	return resp, string(body)
}

// noRedirects answers redirects and refreshes instead of following them.
func (b *browser) noRedirects() *browser {
	c := *b.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{Client: &c, host: b.host, token: b.token, stop: true}
}

// authorize opens a start link, signs in at the provider as the user (at
// once when the browser holds a session of the provider's), and returns the
// host's answer to the provider's redirect (the callback), the callback URL
// in b.back.
func (b *browser) authorize(t *testing.T, op *oidctest.Provider, link string) (*http.Response, string) {
	t.Helper()
	b.back = ""
	resp, page := b.get(t, link)
	if b.back != "" {
		return resp, page
	}
	at := resp
	resp, err := op.SignIn(b.Client, page, user.Username, user.Password)
	if err != nil {
		t.Fatalf("at %s: %d %s: %v", at.Request.URL, at.StatusCode, page, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// The provider's user and the operator's client of it.
var user = oidctest.User{Subject: "sub-carol", Username: "carol", Password: "carol-pw", Name: "Carol", Email: "carol@example.com"}

const (
	clientID     = "pluginhost-oauth"
	clientSecret = "oauth-client-secret-7f3a9c1e5b"
)

// stopAtProvider opens a start link and returns the host's answer without
// following it to the provider.
func (b *browser) stopAtProvider(t *testing.T, link string) (*http.Response, string) {
	t.Helper()
	return b.noRedirects().get(t, link)
}

// oauthPlugin is a plugin with one OAuth connection to the provider and a
// capability that fetches what its arguments list, answering its whole
// request.
func oauthPlugin(t *testing.T, op *oidctest.Provider, version, authorizationURL, tokenURL string) map[string]any {
	m := fixture.Manifest("com.example.oauth", fixture.NS("notes", 1024))
	m["version"] = version
	m["permissions"] = []any{"storage", "network"}
	m["network"] = map[string]any{"hosts": []any{op.Host}}
	m["connections"] = []any{map[string]any{"id": "id", "label": "Example ID", "kind": "oauth2", "hosts": []any{op.Host},
		"oauth2": map[string]any{"authorization_url": authorizationURL, "token_url": tokenURL, "scopes": []any{"openid", "email", "offline_access"}}}}
	m["capabilities"] = []any{map[string]any{"id": "me.fetch", "kind": "tool", "description": "userinfo", "module": "capabilities/fetch.wasm"}}
	return m
}

// The authorization code flow with PKCE against a real OpenID provider,
// started by a link on this server: the link works once, only in a browser
// signed in as the user who asked for it; the state is single use, bound to
// that user, the Instance and the browser (a cookie), and expires; the
// tokens are sealed, attached to fetches to the provider's hosts only,
// refreshed when they expire, and never shown to the module, GraphQL, logs
// or the audit trail. The client goes only to the URLs the admin set it
// for: a package that names others leaves the connection unusable, and the
// provider sees no request, until the admin sets the client again. On both
// databases.
func TestOAuthFlow(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ca := tlstest.NewCA(t, "oauth test CA")
		logs := &testenv.Buffer{}
		var skew atomic.Int64 // the host's clock, ahead of the wall clock by this much
		env := fixture.New(t, b,
			fixture.Egress([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, ca.PEMFile),
			fixture.Log(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		env.Server.Connections.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		hostSrv := httptest.NewServer(env.Server.Handler)
		t.Cleanup(hostSrv.Close)
		redirect := hostSrv.URL + connections.CallbackPath
		op := oidctest.StartTLS(t, ca)
		op.AddClient(clientID, clientSecret, []string{redirect}, nil)
		op.AddUser(user)
		module := map[string][]byte{"capabilities/fetch.wasm": wasmtest.Reactor(t, "../sandbox/testdata/reactors", "fetch")}
		ctx := context.Background()

		aliceToken, alice, err := env.Auth.CreateToken(ctx, "alice", false)
		if err != nil {
			t.Fatal(err)
		}
		bobToken, _, err := env.Auth.CreateToken(ctx, "bob", false)
		if err != nil {
			t.Fatal(err)
		}
		installed, err := env.Life.Install(ctx, alice, env.Package(t, oauthPlugin(t, op, "1.0.0", op.AuthorizationURL(), op.TokenURL()), module))
		if err != nil {
			t.Fatal(err)
		}
		inst := env.Instance(t, alice, installed)
		if _, err := env.Life.SetInstanceGrant(ctx, alice, inst.ID, models.PermissionNetwork, true); err != nil {
			t.Fatal(err)
		}
		caller := models.Caller{UserID: alice.ID}
		conns := env.Server.Connections

		// No client yet: the operator must set one (admins only, for a plugin
		// installed here, and an OAuth connection of it).
		if _, err := conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL); err == nil || !strings.Contains(err.Error(), "setOAuthClient") {
			t.Fatalf("start without a client: %v", err)
		}
		admin := &models.User{ID: "admin", Admin: true}
		for _, tc := range []struct {
			name               string
			user               *models.User
			plugin, connection string
			code               models.Code
			says               string
		}{
			{"a user", alice, "com.example.oauth", "id", models.ErrForbidden, "admin"},
			{"a plugin not installed", admin, "com.example.absent", "id", models.ErrInvalid, "not installed"},
			{"an undeclared connection", admin, "com.example.oauth", "other", models.ErrInvalid, "declares no OAuth connection"},
		} {
			if err := conns.SetOAuthClient(ctx, tc.user, tc.plugin, tc.connection, clientID, clientSecret); models.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%s sets a client: %v, want %s saying %q", tc.name, err, tc.code, tc.says)
			}
		}
		if err := conns.SetOAuthClient(ctx, admin, "com.example.oauth", "id", clientID, clientSecret); err != nil {
			t.Fatal(err)
		}

		// The start link is on this server.
		link, err := conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(link, hostSrv.URL+connections.StartPath+"?link=") {
			t.Fatalf("start link %s", link)
		}
		// Not signed in: a script is refused, a person's browser sent to sign in.
		if resp, _ := newBrowser(ca, hostSrv.URL, "").stopAtProvider(t, link); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a script without a token: %d", resp.StatusCode)
		}
		linkPath := strings.TrimPrefix(link, hostSrv.URL)
		if resp, _ := newBrowser(ca, hostSrv.URL, "").noRedirects().get(t, link, "Accept", "text/html"); resp.StatusCode != http.StatusSeeOther ||
			resp.Header.Get("Location") != "/app/login?next="+url.QueryEscape(linkPath) {
			t.Fatalf("a browser without a session: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		// Another user's browser is asked to sign in as the user who started it.
		bobs := newBrowser(ca, hostSrv.URL, bobToken)
		if resp, page := bobs.stopAtProvider(t, link); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "another user") ||
			!strings.Contains(page, "/app/login?next=") {
			t.Fatalf("bob opens alice's link: %d %s", resp.StatusCode, page)
		}
		if len(resp(t, bobs, link).Cookies()) != 0 {
			t.Fatal("bob's browser got a state cookie")
		}

		// Alice's browser gets the state cookie and goes to the provider.
		alices := newBrowser(ca, hostSrv.URL, aliceToken)
		start, startPage := alices.stopAtProvider(t, link)
		to, _ := url.Parse(oidctest.Refresh(startPage))
		if q := to.Query(); start.StatusCode != http.StatusOK || !strings.HasPrefix(to.String(), op.AuthorizationURL()+"?") ||
			q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" || q.Get("redirect_uri") != redirect ||
			q.Get("client_id") != clientID {
			t.Fatalf("the start link answered %d %s", start.StatusCode, to)
		}
		cookies := start.Cookies()
		if len(cookies) != 1 || cookies[0].Name != connections.StateCookie || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteLaxMode ||
			cookies[0].Path != connections.StateCookiePath || cookies[0].Secure || cookies[0].MaxAge != 600 || start.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("state cookie %+v (Referrer-Policy %q)", cookies, start.Header.Get("Referrer-Policy"))
		}
		// Behind TLS the cookie is Secure.
		tlsSrv := httptest.NewUnstartedServer(env.Server.Handler)
		tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}}
		tlsSrv.StartTLS()
		t.Cleanup(tlsSrv.Close)
		overTLS, err := conns.StartOAuth(ctx, caller, inst.ID, "id", tlsSrv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if resp, _ := newBrowser(ca, tlsSrv.URL, aliceToken).stopAtProvider(t, overTLS); len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure {
			t.Fatalf("the state cookie behind TLS: %+v", resp.Cookies())
		}
		// The link worked once.
		if resp, page := alices.stopAtProvider(t, link); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "used already") {
			t.Fatalf("the link opened twice: %d %s", resp.StatusCode, page)
		}

		// Signing in at the provider sends the browser back. Another browser
		// (no cookie), signed in or not, and the right cookie with another
		// user's session, are refused, and the state stays for the right one.
		link, _ = conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL)
		alices.Jar, _ = cookiejar.New(nil)
		viaProvider := newBrowser(ca, hostSrv.URL, aliceToken)
		viaProvider.Jar = alices.Jar
		viaProvider.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if strings.HasSuffix(req.URL.Path, connections.CallbackPath) {
				viaProvider.back = req.URL.String()
				return http.ErrUseLastResponse // the browser stops before the host
			}
			return nil
		}
		viaProvider.authorize(t, op, link)
		back := viaProvider.back
		if back == "" {
			t.Fatal("the provider did not send the browser back")
		}
		for _, b := range []*browser{newBrowser(ca, hostSrv.URL, ""), newBrowser(ca, hostSrv.URL, bobToken), newBrowser(ca, hostSrv.URL, aliceToken)} {
			if resp, page := b.noRedirects().get(t, back); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "another browser") {
				t.Fatalf("a callback from another browser: %d %s", resp.StatusCode, page)
			}
		}
		withBob := &browser{Client: alices.noRedirects().Client, host: hostSrv.URL, token: bobToken}
		if resp, page := withBob.get(t, back); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "another user") {
			t.Fatalf("the right browser signed in as bob: %d %s", resp.StatusCode, page)
		}
		if got := op.TokenRequests(); len(got) != 0 {
			t.Fatalf("the provider saw token requests before the right browser came back: %+v", got)
		}
		resp, page := alices.noRedirects().get(t, back)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<meta http-equiv="refresh" content="0; url=/app/`+inst.ID+`?connected=id">`) {
			t.Fatalf("the callback answered %d %s", resp.StatusCode, page)
		}
		if got := op.TokenRequests(); len(got) != 1 || got[0].Path != "/oauth/token" || got[0].GrantType != "authorization_code" || !got[0].Secret {
			t.Fatalf("token requests: %+v", got)
		}
		list, err := conns.Of(ctx, caller, inst.ID)
		if err != nil || len(list) != 1 || !list[0].Connected || list[0].Account != user.Email || list[0].ExpiresAt == nil {
			t.Fatalf("after the callback: %+v %v", list, err)
		}
		// The state is single use.
		if resp, page := alices.noRedirects().get(t, back); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "completed already") {
			t.Fatalf("a second use of the state: %d %s", resp.StatusCode, page)
		}

		// A run fetches the provider's userinfo: the host attaches the token.
		fetch := func() (map[string]any, error) {
			args := fmt.Sprintf(`{"rounds":1,"requests":[{"id":"me","method":"GET","url":%q,"connection":"id"}]}`, op.URL("userinfo"))
			res, err := env.Runs.Run(ctx, capability.Call{Caller: caller, InstanceID: inst.ID, Capability: "me.fetch",
				Arguments: models.JSON(args), Trigger: sandbox.TriggerInvoke})
			if err != nil {
				return nil, err
			}
			var data map[string]any
			json.Unmarshal(res.Data, &data)
			return data, nil
		}
		data, err := fetch()
		if err != nil {
			t.Fatal(err)
		}
		me := data["fetched"].(map[string]any)["me"].(map[string]any)
		if me["status"] != float64(200) || !strings.Contains(fmt.Sprint(me["body"]), user.Email) {
			t.Fatalf("userinfo with the connection: %v", me)
		}

		// Past its expiry the access token is refreshed, and works.
		tokensBefore := secretsOf(t, env)
		skew.Store(int64(2 * time.Hour))
		if data, err = fetch(); err != nil {
			t.Fatal(err)
		}
		if me := data["fetched"].(map[string]any)["me"].(map[string]any); me["status"] != float64(200) {
			t.Fatalf("userinfo after the refresh: %v", me)
		}
		if after := secretsOf(t, env); bytes.Equal(after, tokensBefore) {
			t.Fatal("the sealed tokens did not change: no refresh happened")
		}
		if got := op.TokenRequests(); len(got) != 2 || got[1].Path != "/oauth/token" || got[1].GrantType != "refresh_token" || got[1].ClientID != clientID || !got[1].Secret {
			t.Fatalf("token requests after the refresh: %+v", got)
		}
		skew.Store(0)

		// An expired link, and an expired state.
		stale, _ := conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL)
		skew.Store(int64(connections.StateLifetime + time.Minute))
		if resp, page := alices.stopAtProvider(t, stale); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "expired") {
			t.Fatalf("an expired link: %d %s", resp.StatusCode, page)
		}
		skew.Store(0)
		stale, _ = conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL)
		viaProvider.authorize(t, op, stale)
		skew.Store(int64(connections.StateLifetime + time.Minute))
		if resp, page := alices.noRedirects().get(t, viaProvider.back); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "expired") {
			t.Fatalf("an expired state: %d %s", resp.StatusCode, page)
		}
		skew.Store(0)
		if resp, _ := alices.noRedirects().get(t, hostSrv.URL+connections.CallbackPath+"?state=forged&code=x"); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("a forged state: %d", resp.StatusCode)
		}
		tokenRequests := len(op.TokenRequests())

		// A package that moves the token URL elsewhere leaves the connection
		// unusable: no fetch, no refresh, no new authorization, and nothing
		// reaches the new URL. Back at the URLs of the client, it works again;
		// moving the authorization URL is the same; the admin setting the client
		// again makes it usable.
		update := func(version, authorizationURL, tokenURL string) {
			t.Helper()
			if _, err := env.Life.Update(ctx, alice, installed.ID, env.Package(t, oauthPlugin(t, op, version, authorizationURL, tokenURL), module)); err != nil {
				t.Fatal(err)
			}
		}
		unusable := func(says string) {
			t.Helper()
			if list, _ := conns.Of(ctx, caller, inst.ID); list[0].Connected {
				t.Fatal("an unusable connection shows as connected")
			}
			for _, clock := range []time.Duration{0, 2 * time.Hour} { // the token as it is, then one to refresh
				skew.Store(int64(clock))
				_, err := fetch()
				var e *models.Error
				if !errors.As(err, &e) || e.Reason != models.ReasonConnectionRequired || !strings.Contains(e.Message, says) || !strings.Contains(e.Message, "setOAuthClient") {
					t.Fatalf("a fetch with the connection (clock +%v): %v, want connection_required naming %s", clock, err, says)
				}
			}
			skew.Store(0)
			if _, err := conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL); err == nil || !strings.Contains(err.Error(), "setOAuthClient") {
				t.Fatalf("startOAuth: %v", err)
			}
			if got := op.TokenRequests(); len(got) != tokenRequests {
				t.Fatalf("token requests while unusable: %+v", got[tokenRequests:])
			}
		}
		update("1.1.0", op.AuthorizationURL(), op.ForeignTokenURL())
		unusable(op.ForeignTokenURL())
		update("1.2.0", op.AuthorizationURL(), op.TokenURL())
		if _, err := fetch(); err != nil {
			t.Fatalf("back at the client's URLs: %v", err)
		}
		update("1.3.0", op.URL("foreign/auth"), op.TokenURL())
		unusable(op.URL("foreign/auth"))
		if err := conns.SetOAuthClient(ctx, admin, "com.example.oauth", "id", clientID, clientSecret); err != nil {
			t.Fatal(err)
		}
		if _, err := fetch(); err != nil {
			t.Fatalf("after the admin set the client again: %v", err)
		}
		for _, r := range op.TokenRequests() {
			if r.Path != "/oauth/token" {
				t.Fatalf("a token request reached %s: %+v", r.Path, r)
			}
		}

		// The tokens are nowhere but sealed: not in the module's request, the
		// log, the audit trails.
		raw := secretsOf(t, env)
		tokens := regexp.MustCompile(`[A-Za-z0-9_\-]{20,}`).FindAll(raw, -1) // nothing readable is in the sealed bytes
		if len(tokens) > 0 {
			t.Fatalf("the sealed secret holds readable text: %q", tokens)
		}
		request, _ := json.Marshal(data["request"])
		var audit []map[string]any
		env.DB.Read.Table("fetch_audit").Find(&audit)
		for where, text := range map[string]string{"the module's request": string(request), "the log": logs.String(), "the audit": fmt.Sprint(audit)} {
			for _, secret := range []string{clientSecret, "Bearer ", "refresh_token", "access_token"} {
				if strings.Contains(text, secret) {
					t.Errorf("%s holds %q", where, secret)
				}
			}
		}

		// Disconnect deletes the tokens and any authorization under way.
		conns.StartOAuth(ctx, caller, inst.ID, "id", hostSrv.URL)
		if err := conns.Disconnect(ctx, caller, inst.ID, "id"); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"installation_credentials", "oauth_states"} {
			if n := testenv.Count(t, env.DB.Read, table, "instance_id = ?", inst.ID); n != 0 {
				t.Fatalf("%d rows of %s after disconnect", n, table)
			}
		}
		if _, err := fetch(); models.ErrorCode(err) != models.ErrCapabilityFailed || !strings.Contains(err.Error(), "not connected") {
			t.Fatalf("a fetch after disconnect: %v", err)
		}
	})
}

// resp opens a URL in b without following redirects and returns the answer.
func resp(t *testing.T, b *browser, u string) *http.Response {
	t.Helper()
	r, _ := b.noRedirects().get(t, u)
	return r
}

// secretsOf returns the sealed secret of the Instance's credential.
func secretsOf(t *testing.T, env *fixture.Env) []byte {
	t.Helper()
	var secret []byte
	env.DB.Read.Table("installation_credentials").Select("secret").Limit(1).Row().Scan(&secret)
	if len(secret) == 0 {
		t.Fatal("no credential")
	}
	return secret
}
