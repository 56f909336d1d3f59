package httpapi

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"pluginhost/connections"
	"pluginhost/models"
)

// WithBaseURL records the server's address as this request reached it
// (PublicURL when the operator set it): where OAuth start links point and
// providers send users back. It wraps the GraphQL routes alone (/graphql
// and the web host's): inside the mux, so that the route pattern the mux
// records stays on the request the access log sees.
func (s *Server) WithBaseURL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := s.PublicURL
		if base == "" {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			base = scheme + "://" + r.Host
		}
		next.ServeHTTP(w, r.WithContext(connections.WithBaseURL(r.Context(), base)))
	})
}

var oauthPage = template.Must(template.New("oauth").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>{{if .Refresh}}<meta http-equiv="refresh" content="0; url={{.Refresh}}">{{end}}</head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem">
<h1 style="font-size: 1.4rem">{{.Title}}</h1><p>{{.Message}}</p>{{if .SignIn}}<p><a href="{{.SignIn}}">Sign in as the user who started it</a></p>{{end}}{{if .Continue}}<p><a href="{{.Continue}}">Continue</a></p>{{end}}{{if .Back}}<p><a href="{{.Back}}">Back to the plugin</a></p>{{end}}
</body></html>`))

// oauthHeaders are the headers of the start link's and the callback's
// answers: nothing cached, nothing framed, and no Referer that would carry
// the link or the code on to the next page.
func oauthHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

func writeOAuthPage(w http.ResponseWriter, status int, page map[string]string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	oauthPage.Execute(w, page)
}

// oauthStatus is the HTTP status of an OAuth page's refusal.
func (s *Server) oauthStatus(err error, instanceID string) int {
	var e *models.Error
	switch {
	case !errors.As(err, &e):
		s.Log.Error("oauth authorization failed", "err", err, "instance", instanceID)
		return http.StatusInternalServerError
	case e.Code == models.ErrPermissionDenied:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// stateCookie sets the browser's OAuth state cookie: HttpOnly, SameSite=Lax
// (it must come back on the provider's redirect, which the session cookie,
// SameSite=Strict, does not), Secure behind TLS, for the start link and the
// callback only, for as long as an authorization lasts.
func (s *Server) stateCookie(w http.ResponseWriter, r *http.Request, value string) {
	http.SetCookie(w, &http.Cookie{Name: connections.StateCookie, Value: value, Path: connections.StateCookiePath,
		MaxAge: int(connections.StateLifetime.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: r.TLS != nil || strings.HasPrefix(s.PublicURL, "https://")})
}

// oauthStart is GET /v1/oauth/start?link=...: the start link startOAuth
// answers. A browser that is not signed in is sent to sign in and back; one
// signed in as the user who started it gets the state cookie (a value it
// keeps across authorizations) and goes on to the provider; any other is
// asked to sign in as that user. The link works once. Its pages send no
// Referer, so the link does not reach the provider.
func (s *Server) oauthStart(w http.ResponseWriter, r *http.Request) {
	user, _, ok := s.pageUser(w, r, "pluginhost")
	if !ok {
		return
	}
	oauthHeaders(w.Header())
	browser := ""
	if c, err := r.Cookie(connections.StateCookie); err == nil && len(c.Value) == len(connections.NewBrowserValue()) {
		browser = c.Value
	} else {
		browser = connections.NewBrowserValue()
	}
	provider, err := s.Connections.Begin(r.Context(), user.ID, r.URL.Query().Get("link"), browser)
	if err != nil {
		page := map[string]string{"Title": "Not connected", "Message": models.ErrorMessage(err)}
		if errors.Is(err, connections.ErrOtherUser) {
			page["SignIn"] = "/app/login?next=" + url.QueryEscape(r.URL.RequestURI())
		}
		writeOAuthPage(w, s.oauthStatus(err, ""), page)
		return
	}
	s.stateCookie(w, r, browser)
	// On to the provider from this page rather than by a redirect: the
	// sign-in form leads here by a redirect, and its form-action 'self'
	// would stop a redirect chain that leaves the server.
	writeOAuthPage(w, http.StatusOK, map[string]string{"Title": "Connecting", "Message": "Continuing to the provider to authorize the connection.",
		"Continue": provider, "Refresh": provider})
}

// oauthCallback is GET /v1/oauth/callback: the provider sends the user back
// with a code and the state. It completes only in the browser that opened
// the start link (its state cookie) and, when the request is signed in, as
// the user who started it; then its page leads back to the plugin.
func (s *Server) oauthCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	userID := ""
	if id, _, err := s.Auth.Page(r); err == nil {
		userID = id.User.ID
	}
	browser := ""
	if c, err := r.Cookie(connections.StateCookie); err == nil {
		browser = c.Value
	}
	providerError := q.Get("error")
	if d := q.Get("error_description"); d != "" {
		providerError += ": " + d
	}
	instanceID, connection, err := s.Connections.Callback(r.Context(), userID, browser, q.Get("state"), q.Get("code"), providerError)
	back := ""
	if instanceID != "" {
		back = "/app/" + url.PathEscape(instanceID)
	}
	oauthHeaders(w.Header())
	if err != nil {
		writeOAuthPage(w, s.oauthStatus(err, instanceID), map[string]string{"Title": "Not connected", "Message": models.ErrorMessage(err), "Back": back})
		return
	}
	s.Log.Info("connection connected", "instance", instanceID, "connection", connection)
	// Back to the plugin from this page rather than by a redirect: a
	// navigation this server's page starts carries the session cookie
	// (SameSite=Strict), which a redirect of the provider's does not.
	to := back + "?connected=" + url.QueryEscape(connection)
	writeOAuthPage(w, http.StatusOK, map[string]string{"Title": "Connected", "Message": "The account is connected.", "Back": to, "Refresh": to})
}
