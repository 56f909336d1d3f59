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
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	opstorage "github.com/zitadel/oidc/v3/example/server/storage"

	"pluginhost/capability"
	"pluginhost/connections"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/tlstest"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// provider is a real OpenID provider (zitadel's example OP) on loopback
// HTTPS, with a client registered for the host's callback.
type provider struct {
	issuer string
	host   string // localhost:PORT
}

var registerOnce sync.Mutex

func startProvider(t *testing.T, ca *tlstest.CA, redirect string) *provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := &provider{issuer: fmt.Sprintf("https://localhost:%d/", port), host: fmt.Sprintf("localhost:%d", port)}
	registerOnce.Lock()
	opstorage.RegisterClients(opstorage.WebClient("pluginhost-"+fmt.Sprint(port), "client-secret-"+fmt.Sprint(port), redirect))
	registerOnce.Unlock()
	store := opstorage.NewStorage(opstorage.NewUserStore(p.issuer))
	srv.Config.Handler = exampleop.SetupServer(p.issuer, store, slog.New(slog.DiscardHandler), false)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return p
}

// browser follows redirects like a user's browser, trusting the test CA,
// and stops at the host's callback's answer.
func browser(ca *tlstest.CA) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if strings.HasPrefix(req.URL.Path, "/app/") {
				return http.ErrUseLastResponse
			}
			return nil
		}}
}

// authorize opens the authorization URL, signs in at the provider, and
// returns the URL the provider sent the browser back to, and the host's
// answer to it.
func authorize(t *testing.T, b *http.Client, authURL string) (string, *http.Response) {
	t.Helper()
	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(page)
	if id == nil {
		t.Fatalf("no login form at %s: %d %s", resp.Request.URL, resp.StatusCode, page)
	}
	login := *resp.Request.URL
	login.RawQuery = ""
	var back string
	b.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if strings.HasSuffix(req.URL.Path, connections.CallbackPath) {
			back = req.URL.String()
		}
		if strings.HasPrefix(req.URL.Path, "/app/") {
			return http.ErrUseLastResponse
		}
		return nil
	}
	host, _ := url.Parse(authURL)
	issuerHost := host.Scheme + "://" + host.Host
	resp, err = b.PostForm(issuerHost+"/login/username", url.Values{"id": {string(id[1])}, "username": {"test-user@localhost"}, "password": {"verysecure"}})
	if err != nil {
		t.Fatal(err)
	}
	return back, resp
}

// The authorization code flow with PKCE against a real OpenID provider:
// the host's state is single use, bound to the user and the Instance, and
// expires; the tokens are sealed, attached to fetches to the provider's
// hosts only, refreshed when they expire, and never shown to the module,
// GraphQL, logs or the audit trail.
func TestOAuthFlow(t *testing.T) {
	ca := tlstest.NewCA(t, "oauth test CA")
	logs := &testenv.Buffer{}
	var skew atomic.Int64 // the host's clock, ahead of the wall clock by this much
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/oauth.db"},
		fixture.Egress([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, ca.PEMFile),
		fixture.Log(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	env.Server.Connections.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	hostSrv := httptest.NewServer(env.Server.Handler)
	t.Cleanup(hostSrv.Close)
	redirect := hostSrv.URL + connections.CallbackPath
	op := startProvider(t, ca, redirect)
	port := strings.TrimPrefix(op.host, "localhost:")

	// A plugin with one OAuth connection to the provider, and a capability
	// that fetches the provider's userinfo with it and answers its whole
	// request.
	m := fixture.Manifest("com.example.oauth", fixture.NS("notes", 1024))
	m["permissions"] = []any{"storage", "network"}
	m["network"] = map[string]any{"hosts": []any{op.host}}
	m["connections"] = []any{map[string]any{"id": "id", "label": "Example ID", "kind": "oauth2", "hosts": []any{op.host},
		"oauth2": map[string]any{"authorization_url": op.issuer + "auth", "token_url": op.issuer + "oauth/token", "scopes": []any{"openid", "email", "offline_access"}}}}
	m["capabilities"] = []any{map[string]any{"id": "me.fetch", "kind": "tool", "description": "userinfo", "module": "capabilities/fetch.wasm"}}
	alice := env.User(t, "alice")
	installed, err := env.Life.Install(context.Background(), alice, env.Package(t, m, map[string][]byte{
		"capabilities/fetch.wasm": wasmtest.Reactor(t, "../sandbox/testdata/reactors", "fetch")}))
	if err != nil {
		t.Fatal(err)
	}
	inst := env.Instance(t, alice, installed)
	if _, err := env.Life.SetInstanceGrant(context.Background(), alice, inst.ID, models.PermissionNetwork, true); err != nil {
		t.Fatal(err)
	}
	caller := models.Caller{UserID: alice.ID}
	conns := env.Server.Connections
	base := connections.WithBaseURL(context.Background(), hostSrv.URL)

	// No client yet: the operator must set one (admins only).
	if _, err := conns.StartOAuth(base, caller, inst.ID, "id", hostSrv.URL); err == nil || !strings.Contains(err.Error(), "setOAuthClient") {
		t.Fatalf("start without a client: %v", err)
	}
	if err := conns.SetOAuthClient(context.Background(), alice, "com.example.oauth", "id", "x", "y"); models.ErrorCode(err) != models.ErrForbidden {
		t.Fatalf("a user set a client: %v", err)
	}
	admin := &models.User{ID: "admin", Admin: true}
	clientSecret := "client-secret-" + port
	if err := conns.SetOAuthClient(context.Background(), admin, "com.example.oauth", "id", "pluginhost-"+port, clientSecret); err != nil {
		t.Fatal(err)
	}

	// Authorize: the provider sends the browser back; the host exchanges
	// the code with the verifier and sends the browser to the app.
	authURL, err := conns.StartOAuth(base, caller, inst.ID, "id", hostSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" || q.Get("redirect_uri") != redirect {
		t.Fatalf("authorization URL %s", authURL)
	}
	b := browser(ca)
	back, resp := authorize(t, b, authURL)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/app/"+inst.ID+"?connected=id") {
		t.Fatalf("the callback answered %d %s (back at %s)", resp.StatusCode, resp.Header.Get("Location"), back)
	}
	list, err := conns.Of(context.Background(), caller, inst.ID)
	if err != nil || len(list) != 1 || !list[0].Connected || list[0].Account != "id1" || list[0].ExpiresAt == nil {
		t.Fatalf("after the callback: %+v %v", list, err)
	}

	// The state is single use.
	again, err := b.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(again.Body)
	again.Body.Close()
	if again.StatusCode != http.StatusBadRequest || !strings.Contains(string(page), "used already") {
		t.Fatalf("a second use of the state: %d %s", again.StatusCode, page)
	}

	// A run fetches the provider's userinfo: the host attaches the token.
	fetch := func() (map[string]any, error) {
		args := fmt.Sprintf(`{"rounds":1,"requests":[{"id":"me","method":"GET","url":"%suserinfo","connection":"id"}]}`, op.issuer)
		res, err := env.Runs.Run(context.Background(), capability.Call{Caller: caller, InstanceID: inst.ID, Capability: "me.fetch",
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
	if me["status"] != float64(200) || !strings.Contains(fmt.Sprint(me["body"]), "test-user@zitadel.ch") {
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
	skew.Store(0)

	// An expired state, and a state brought back by another user.
	stale, err := conns.StartOAuth(base, caller, inst.ID, "id", hostSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := url.Parse(stale)
	skew.Store(int64(connections.StateLifetime + time.Minute))
	if _, _, err := conns.Callback(context.Background(), "", st.Query().Get("state"), "code", ""); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired state: %v", err)
	}
	skew.Store(0)
	other, _ := conns.StartOAuth(base, caller, inst.ID, "id", hostSrv.URL)
	ot, _ := url.Parse(other)
	bob := env.User(t, "bob")
	if _, _, err := conns.Callback(context.Background(), bob.ID, ot.Query().Get("state"), "code", ""); models.ErrorCode(err) != models.ErrPermissionDenied {
		t.Fatalf("another user's callback: %v", err)
	}
	var refused *models.Error
	if _, _, err := conns.Callback(context.Background(), "", "forged", "code", ""); !errors.As(err, &refused) {
		t.Fatalf("a forged state: %v", err)
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
	if err := conns.Disconnect(context.Background(), caller, inst.ID, "id"); err != nil {
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
