package webhost

import (
	"errors"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"pluginhost/models"
	"pluginhost/preview/assets"
)

// signIn is GET /app/login: the sign-in form, or with ?token= a sign-in
// link; POST /app/login is the form's. Either takes a token once and sets
// the session cookie (HttpOnly, SameSite=Strict, Secure behind TLS), then
// leads to next.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.FormValue("next"))
	var token string
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("token"):
		// A sign-in link (GET /app/login?token=...), opened by the person
		// (typed, pasted, or from this server's pages), never by another
		// site; the token leaves the address bar at once.
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" && site != "same-origin" {
			s.writeSignIn(w, http.StatusForbidden, next, "A sign-in link works only when you open it yourself.")
			return
		}
		token = strings.TrimSpace(r.URL.Query().Get("token"))
	case r.Method == http.MethodGet:
		s.writeSignIn(w, http.StatusOK, next, "")
		return
	case !formFromHere(r):
		s.writeSignIn(w, http.StatusForbidden, next, "Sign in from this server's own page.")
		return
	default:
		token = strings.TrimSpace(r.PostFormValue("token"))
	}
	value, ends, err := s.SignIn(r, token)
	if err != nil {
		status, msg := http.StatusUnauthorized, "That token is not valid: it is unknown, revoked or expired."
		switch models.ErrorCode(err) {
		case models.ErrUnauthenticated:
		case models.ErrTooManyRequests:
			status, msg = http.StatusTooManyRequests, "Too many failed sign-ins: "+models.ErrorMessage(err)+"."
			retryAfter(w, err)
		default:
			msg = "Signing in failed; try again."
		}
		s.writeSignIn(w, status, next, msg)
		return
	}
	s.setSession(w, r, value, ends)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// setSession sets the session cookie: HttpOnly, SameSite=Strict, Secure
// behind TLS.
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, value string, ends time.Time) {
	http.SetCookie(w, &http.Cookie{Name: models.SessionCookie, Value: value, Path: "/", Expires: ends, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
}

// retryAfter sets Retry-After from a TOO_MANY_REQUESTS error.
func retryAfter(w http.ResponseWriter, err error) {
	var e *models.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
}

// signOut is POST /app/logout: the session ends, here and on every replica.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if !formFromHere(r) {
		s.Error(w, r, models.Errorf(models.ErrForbidden, "sign out from this server's own pages"))
		return
	}
	end := ""
	if c, err := r.Cookie(models.SessionCookie); err == nil {
		if end, err = s.SignOut(r.Context(), c.Value, s.baseURL(r)+"/app/login"); err != nil {
			s.Error(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: models.SessionCookie, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	if end != "" && s.Provider != nil {
		// The identity provider ends its session too, then sends the
		// browser back to the sign-in page. The page goes there itself: a
		// form's redirect to another site is refused by the pages' policy
		// (form-action 'self').
		writeProviderPage(w, http.StatusOK, "Signed out", "Signed out; ending your session at "+s.Provider.Name+".", end)
		return
	}
	http.Redirect(w, r, "/app/login", http.StatusSeeOther)
}

// root sends a person to the app, which sends them on to sign in when
// they have not.
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/app", http.StatusSeeOther)
}

// formFromHere reports whether a form was posted from this server's own
// pages: a browser says so in Sec-Fetch-Site, or in Origin (which is "null"
// under the pages' no-referrer policy, and then says nothing). A client
// that sends neither is not a browser another site could drive.
func formFromHere(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host
	}
	return true
}

// secure reports whether the request came over TLS: to this server, to a
// proxy that says so (X-Forwarded-Proto; marking a cookie Secure never
// weakens it, so the header needs no trust), or by the operator's word
// (an https --public-url).
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || s.SecureCookies || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// baseURL is the server's address as the browser reached it.
func (s *Server) baseURL(r *http.Request) string {
	if s.PublicURL != "" {
		return strings.TrimSuffix(s.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// safeNext keeps a page of the web host (or an OAuth start link) to go to
// after signing in; anything else (another site, a path outside /app) goes
// to /app.
func safeNext(next string) string {
	if next == "/app" || strings.HasPrefix(next, "/app/") || strings.HasPrefix(next, "/app?") || next == "/dashboard" || next == "/playground" ||
		strings.HasPrefix(next, models.OAuthStartPath+"?") {
		if !strings.HasPrefix(next, "/app/login") && !strings.ContainsAny(next, "\\\r\n") {
			return next
		}
	}
	return "/app"
}

func (s *Server) writeSignIn(w http.ResponseWriter, status int, next, problem string) {
	pageHeaders(w.Header(), "default-src 'none'; style-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	data := map[string]string{"Next": next, "Problem": problem, "CSS": AssetsPath + assets.StaticName("app.css")}
	if s.Provider != nil {
		data["Provider"] = s.Provider.Name
		data["ProviderStart"] = ProviderStartPath + "?next=" + url.QueryEscape(next)
	}
	signInPage.Execute(w, data)
}

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · pluginhost</title>
<link rel="stylesheet" href="{{.CSS}}"></head>
<body class="ph-login"><main>
<h1>Sign in to pluginhost</h1>
{{if .Problem}}<p class="problem" role="alert">{{.Problem}}</p>{{end}}
{{if .Provider}}<a class="provider" id="provider" href="{{.ProviderStart}}">Sign in with {{.Provider}}</a>
<p class="or">or with a token</p>{{end}}
<p>Paste your token. An administrator makes one with <code>pluginhost token create --user NAME</code>.</p>
<form method="post" action="/app/login">
<input type="hidden" name="next" value="{{.Next}}">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required{{if not .Provider}} autofocus{{end}}>
<button type="submit">Sign in</button>
</form>
</main></body></html>
`))
