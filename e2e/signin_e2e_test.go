package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string, headers map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// Signing in as the contract says: / leads to the app and the app to the
// sign-in; the form and a sign-in link set an HttpOnly, SameSite=Strict
// session cookie the pages, their GraphQL and their socket accept; signing
// out, revoking the token and its expiry end the session; the dashboard's
// page holds no token.
func TestAppSignIn(t *testing.T) {
	testenv.Chromium(t)
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "ph.db")
	pub := NewPublisher(t)
	srv := Start(t, dsn, pub.Dir)
	h := &host{Server: srv, pub: pub}
	alice := h.user(t, "alice", false)
	m, files := appNotes(t, nil)
	_, ids := installApp(t, h, alice, m, files, 1)
	html := map[string]string{"Accept": "text/html"}

	// A person's browser: / leads to /app, and /app to the sign-in page.
	if r := get(t, srv.URL+"/", html); r.StatusCode != 303 || r.Header.Get("Location") != "/app" {
		t.Fatalf("/: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(t, srv.URL+"/app/"+ids[0]+"/main", html); r.StatusCode != 303 || r.Header.Get("Location") != "/app/login?next="+url.QueryEscape("/app/"+ids[0]+"/main") {
		t.Fatalf("/app without a session: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	// A script still gets the Basic challenge.
	if r := get(t, srv.URL+"/app", nil); r.StatusCode != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("/app for a script: %d", r.StatusCode)
	}
	if !strings.Contains(srv.Log(), "open the app in a browser") || !strings.Contains(srv.Log(), "no user yet") {
		t.Fatalf("the first start does not say what to do:\n%s", srv.Log())
	}

	// Signing in with the form.
	p := browser.Shared(t).Open(t, "about:blank", nil)
	p.Do("Page.navigate", map[string]any{"url": srv.URL + "/app/" + ids[0] + "/main"})
	waitUntil(p, `location.pathname === "/app/login" && document.readyState === "complete"`, 15*time.Second)
	p.TypeInto(`#token`, "ph_wrong")
	p.Click(`button[type=submit]`)
	waitUntil(p, `document.body && document.body.innerText.indexOf("That token is not valid") >= 0 && document.readyState === "complete"`, 15*time.Second)
	p.TypeInto(`#token`, alice.Token)
	p.Click(`button[type=submit]`)
	waitUntil(p, `location.pathname === "/app/`+ids[0]+`/main"`, 15*time.Second)
	p.WaitFor(liveReady)
	if p.EvalString(`document.cookie`) != "" {
		t.Fatal("the session cookie is readable by the page's scripts")
	}
	var cookies struct {
		Cookies []struct {
			Name, SameSite string
			HTTPOnly       bool `json:"httpOnly"`
		}
	}
	if err := json.Unmarshal(p.Do("Network.getCookies", map[string]any{"urls": []string{srv.URL}}), &cookies); err != nil || len(cookies.Cookies) != 1 ||
		cookies.Cookies[0].Name != "pluginhost_session" || !cookies.Cookies[0].HTTPOnly || cookies.Cookies[0].SameSite != "Strict" {
		t.Fatalf("cookies: %+v %v", cookies, err)
	}
	if strings.Contains(p.EvalString(`document.documentElement.outerHTML`), alice.Token) {
		t.Fatal("the page holds the token")
	}
	// The dashboard opens on the session, and holds no token either.
	p.Do("Page.navigate", map[string]any{"url": srv.URL + "/dashboard"})
	waitUntil(p, `location.pathname === "/dashboard" && document.body && document.body.innerText.indexOf("Instance 1") >= 0`, 15*time.Second)
	if strings.Contains(p.EvalString(`document.documentElement.outerHTML`), alice.Token) {
		t.Fatal("the dashboard holds the token")
	}

	// Signing out ends the session: the page leads to the sign-in again.
	p.Do("Page.navigate", map[string]any{"url": srv.URL + "/app"})
	waitUntil(p, `location.pathname === "/app" && document.querySelector("[data-ph-account]")`, 15*time.Second)
	p.Click(`[data-ph-account]`)
	p.Click(`[data-ph-signout]`)
	waitUntil(p, `location.pathname === "/app/login"`, 15*time.Second)
	p.Do("Page.navigate", map[string]any{"url": srv.URL + "/app"})
	waitUntil(p, `location.pathname === "/app/login"`, 15*time.Second)

	// A sign-in link, then the token's revocation, ends the session.
	for _, tc := range []struct {
		name string
		end  func(token string)
	}{
		{"revoked", func(string) {
			// carol's newest token: the first id token list prints.
			id := regexp.MustCompile(`tok_[a-z0-9]+`).FindString(run(t, "token", "list", "--user", "carol", "--db", dsn))
			run(t, "token", "revoke", id, "--db", dsn)
		}},
		{"expired", func(string) { time.Sleep(3 * time.Second) }},
	} {
		args := []string{"token", "create", "--user", "carol", "--db", dsn}
		if tc.name == "expired" {
			args = append(args, "--ttl", "2s")
		}
		token := strings.TrimSpace(run(t, args...))
		r := get(t, srv.URL+"/app/login?token="+url.QueryEscape(token)+"&next="+url.QueryEscape("/app"), nil)
		var session *http.Cookie
		for _, c := range r.Cookies() {
			if c.Name == "pluginhost_session" {
				session = c
			}
		}
		if r.StatusCode != 303 || r.Header.Get("Location") != "/app" || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
			t.Fatalf("%s: sign-in link: %d %s %+v", tc.name, r.StatusCode, r.Header.Get("Location"), session)
		}
		withSession := map[string]string{"Cookie": "pluginhost_session=" + session.Value}
		if r := get(t, srv.URL+"/app", withSession); r.StatusCode != 200 {
			t.Fatalf("%s: /app with the session: %d", tc.name, r.StatusCode)
		}
		// Another site cannot sign a person in with a link.
		if r := get(t, srv.URL+"/app/login?token="+url.QueryEscape(token), map[string]string{"Sec-Fetch-Site": "cross-site"}); r.StatusCode != 403 {
			t.Fatalf("%s: a cross-site sign-in link: %d", tc.name, r.StatusCode)
		}
		tc.end(token)
		// A revocation reaches this replica's cache at once; wait for the
		// cache of a token read before its expiry to lapse.
		deadline := time.Now().Add(15 * time.Second)
		for get(t, srv.URL+"/app", withSession).StatusCode == 200 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the session outlived its token", tc.name)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r := get(t, srv.URL+"/app", map[string]string{"Cookie": "pluginhost_session=" + session.Value, "Accept": "text/html"}); r.StatusCode != 303 || !strings.HasPrefix(r.Header.Get("Location"), "/app/login") {
			t.Fatalf("%s: an ended session: %d %s", tc.name, r.StatusCode, r.Header.Get("Location"))
		}
	}
	// A forged cookie is nobody's.
	if r := get(t, srv.URL+"/app", map[string]string{"Cookie": "pluginhost_session=AAAA"}); r.StatusCode != 401 {
		t.Fatalf("a forged cookie: %d", r.StatusCode)
	}
}
