package webhost

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"pluginhost/models"
	"pluginhost/preview/assets"
)

// Paths of the sign-in with the identity provider: the button leads to
// the start, which sends the browser to the provider; the provider sends
// it back to the callback (PUBLIC_URL/app/oidc/callback, the redirect URI
// to register at the provider).
const (
	ProviderStartPath    = "/app/oidc/start"
	ProviderCallbackPath = "/app/oidc/callback"
)

// pendingCookie binds a sign-in under way to the browser that began it:
// HttpOnly, SameSite=Lax (so that it comes back with the provider's
// redirect), Secure behind TLS, sent only to the callback, for 10 minutes.
const (
	pendingCookie    = "pluginhost_signin"
	pendingCookieTTL = 10 * time.Minute
)

// Provider is the operator's identity provider as the sign-in page offers
// it ("Sign in with Name"), given as functions so that this package links
// no database.
type Provider struct {
	Name string
	// Begin starts a sign-in that returns to redirectURI, then leads to
	// next: the provider's authorization URL, and the value of the cookie
	// that binds the sign-in to the browser.
	Begin func(ctx context.Context, redirectURI, next string) (authURL, cookie string, err error)
	// Finish completes the sign-in of the request (the provider's return)
	// in the browser whose cookie is given: the session cookie's value,
	// when it ends, and where to go next.
	Finish func(r *http.Request, cookie, state, code string) (session string, ends time.Time, next string, err error)
}

// providerStart is GET /app/oidc/start?next=PATH: the browser goes to the
// provider, holding the cookie that lets it, and only it, come back.
func (s *Server) providerStart(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	authURL, cookie, err := s.Provider.Begin(r.Context(), s.baseURL(r)+ProviderCallbackPath, next)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		s.writeSignIn(w, http.StatusServiceUnavailable, next, "Signing in with "+s.Provider.Name+
			" is not possible now (the provider does not answer); try again later, or sign in with a token.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: pendingCookie, Value: cookie, Path: ProviderCallbackPath, MaxAge: int(pendingCookieTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, authURL, http.StatusSeeOther)
}

// providerCallback is GET /app/oidc/callback: the provider's return. The
// sign-in completes only in the browser that began it, with its state,
// once; the browser then holds the web host session and goes on to the page
// it first asked for.
func (s *Server) providerCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// The sign-in under way ends here, whatever happens.
	http.SetCookie(w, &http.Cookie{Name: pendingCookie, Value: "", Path: ProviderCallbackPath, MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		writeProviderPage(w, http.StatusBadRequest, "Not signed in", s.Provider.Name+" did not sign you in ("+truncateText(msg, 200)+").", "")
		return
	}
	c, err := r.Cookie(pendingCookie)
	if err != nil {
		c = &http.Cookie{}
	}
	session, ends, next, err := s.Provider.Finish(r, c.Value, q.Get("state"), q.Get("code"))
	if err != nil {
		status := http.StatusUnauthorized
		switch models.ErrorCode(err) {
		case models.ErrUnauthenticated:
		case models.ErrTooManyRequests:
			status = http.StatusTooManyRequests
			retryAfter(w, err)
		default:
			status = http.StatusBadGateway
			err = models.Errorf(models.ErrInternal, "signing in with %s failed; try again", s.Provider.Name)
		}
		writeProviderPage(w, status, "Not signed in", models.ErrorMessage(err)+".", "")
		return
	}
	s.setSession(w, r, session, ends)
	// The session cookie is SameSite=Strict, and this answer ends a
	// navigation that began at the provider: a redirect would go on as
	// that cross-site navigation, without the cookie. The page goes on
	// from here instead, a navigation of this site.
	writeProviderPage(w, http.StatusOK, "Signed in", "Signed in; opening the app.", safeNext(next))
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// writeProviderPage writes a page of the sign-in with the provider: its
// title and message, and with next a page the browser goes on to at once.
func writeProviderPage(w http.ResponseWriter, status int, title, message, next string) {
	pageHeaders(w.Header(), "default-src 'none'; style-src 'self'; font-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	providerPage.Execute(w, map[string]string{"Title": title, "Message": message, "Next": next, "CSS": AssetsPath + assets.StaticName("app.css")})
}

var providerPage = template.Must(template.New("provider").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
{{if .Next}}<meta http-equiv="refresh" content="0;url={{.Next}}">{{end}}
<title>{{.Title}} · pluginhost</title><link rel="stylesheet" href="{{.CSS}}"></head>
<body class="ph-login"><main>
<h1>{{.Title}}</h1><p id="message">{{.Message}}</p>
{{if .Next}}<p><a href="{{.Next}}">Continue</a></p>{{else}}<p><a href="/app/login">Back to the sign-in page</a></p>{{end}}
</main></body></html>`))
