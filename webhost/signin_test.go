package webhost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// next, after signing in, is a page of this server's web host, dashboard
// or playground, never another site or the sign-in itself.
func TestSafeNext(t *testing.T) {
	for _, tt := range []struct{ next, want string }{
		{"/app", "/app"},
		{"/app/inst_1/main?tab=2", "/app/inst_1/main?tab=2"},
		{"/app?x=1", "/app?x=1"},
		{"/dashboard", "/dashboard"},
		{"/playground", "/playground"},
		{"", "/app"},
		{"https://evil.example/app", "/app"},
		{"//evil.example/app", "/app"},
		{"/\\evil.example", "/app"},
		{"/app\\..\\..\\evil", "/app"},
		{"/app/x\r\nLocation: https://evil.example", "/app"},
		{"/app/login?next=https://evil.example", "/app"},
		{"/application", "/app"},
		{"/v1/oauth/callback", "/app"},
		{"javascript:alert(1)", "/app"},
	} {
		if got := safeNext(tt.next); got != tt.want {
			t.Errorf("next %q: %q, want %q", tt.next, got, tt.want)
		}
	}
}

// The sign-in page offers the provider beside the token form, carrying
// next; the provider's return that succeeds goes on to next in a page of
// its own (so that the SameSite=Strict session cookie goes with it), and
// one that fails says why and signs no one in.
func TestProviderSignIn(t *testing.T) {
	s := &Server{
		SignIn: func(*http.Request, string) (string, time.Time, error) { return "", time.Time{}, nil },
		Provider: &Provider{Name: "Example ID",
			Begin: func(_ context.Context, redirect, next string) (string, string, error) {
				return "https://id.example.com/authorize?redirect_uri=" + redirect + "&next=" + next, "pending", nil
			},
			Finish: func(r *http.Request, cookie, state, code string) (string, time.Time, string, error) {
				if cookie != "pending" || state != "s" {
					t.Errorf("finish with %q %q", cookie, state)
				}
				return "session", time.Now().Add(time.Hour), "/app/inst_1/main?tab=2", nil
			}},
	}
	mux := http.NewServeMux()
	s.Mount(mux)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/app/login?next=%2Fapp%2Finst_1%2Fmain%3Ftab%3D2", nil))
	if body := w.Body.String(); !strings.Contains(body, `href="/app/oidc/start?next=%2Fapp%2Finst_1%2Fmain%3Ftab%3D2"`) || !strings.Contains(body, "Sign in with Example ID") ||
		!strings.Contains(body, `name="token"`) {
		t.Fatalf("the sign-in page: %s", body)
	}
	w = httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/app/oidc/start?next=https://evil.example", nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	mux.ServeHTTP(w, r)
	if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "https://id.example.com/authorize?redirect_uri=https://example.com/app/oidc/callback&next=/app" {
		t.Fatalf("the start: %d %s", w.Code, loc)
	}
	if c := w.Result().Cookies(); len(c) != 1 || c[0].Name != pendingCookie || !c[0].Secure || !c[0].HttpOnly || c[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("the start's cookie: %+v", c)
	}
	w = httptest.NewRecorder()
	r = httptest.NewRequest("GET", "/app/oidc/callback?state=s&code=c", nil)
	r.AddCookie(&http.Cookie{Name: pendingCookie, Value: "pending"})
	mux.ServeHTTP(w, r)
	if body := w.Body.String(); w.Code != 200 || !strings.Contains(body, `<meta http-equiv="refresh" content="0;url=/app/inst_1/main?tab=2">`) {
		t.Fatalf("the return: %d %s", w.Code, body)
	}
	var session, cleared bool
	for _, c := range w.Result().Cookies() {
		session = session || c.Name == "pluginhost_session" && c.Value == "session" && c.SameSite == http.SameSiteStrictMode
		cleared = cleared || c.Name == pendingCookie && c.MaxAge < 0
	}
	if !session || !cleared {
		t.Fatalf("the return's cookies: %v", w.Result().Cookies())
	}
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/app/oidc/callback?error=access_denied&error_description=%3Cscript%3E", nil))
	if body := w.Body.String(); w.Code != 400 || strings.Contains(body, "<script>") || !strings.Contains(body, "access_denied") {
		t.Fatalf("a refusal of the provider: %d %s", w.Code, body)
	}
}
