package webhost

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pluginhost/models"
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
			writeSignIn(w, http.StatusForbidden, next, "A sign-in link works only when you open it yourself.")
			return
		}
		token = strings.TrimSpace(r.URL.Query().Get("token"))
	case r.Method == http.MethodGet:
		writeSignIn(w, http.StatusOK, next, "")
		return
	case !formFromHere(r):
		writeSignIn(w, http.StatusForbidden, next, "Sign in from this server's own page.")
		return
	default:
		token = strings.TrimSpace(r.PostFormValue("token"))
	}
	value, ends, err := s.SignIn(r.Context(), token)
	if err != nil {
		msg := "That token is not valid: it is unknown, revoked or expired."
		if models.ErrorCode(err) != models.ErrUnauthenticated {
			msg = "Signing in failed; try again."
		}
		writeSignIn(w, http.StatusUnauthorized, next, msg)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: models.SessionCookie, Value: value, Path: "/", Expires: ends, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut is POST /app/logout: the session ends, here and on every replica.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if !formFromHere(r) {
		s.Error(w, r, models.Errorf(models.ErrForbidden, "sign out from this server's own pages"))
		return
	}
	if c, err := r.Cookie(models.SessionCookie); err == nil {
		if err := s.SignOut(r.Context(), c.Value); err != nil {
			s.Error(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: models.SessionCookie, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
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

func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || s.SecureCookies
}

// safeNext keeps a page of the web host to go to after signing in; anything
// else (another site, a path outside /app) goes to /app.
func safeNext(next string) string {
	if next == "/app" || strings.HasPrefix(next, "/app/") || strings.HasPrefix(next, "/app?") || next == "/dashboard" || next == "/playground" {
		if !strings.HasPrefix(next, "/app/login") && !strings.ContainsAny(next, "\\\r\n") {
			return next
		}
	}
	return "/app"
}

func writeSignIn(w http.ResponseWriter, status int, next, problem string) {
	pageHeaders(w.Header(), "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	signInPage.Execute(w, map[string]string{"Next": next, "Problem": problem})
}

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · pluginhost</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; min-height: 100vh; display: grid; place-items: center; background: #fef7ff; color: #1d1b20; }
main { width: min(420px, 92vw); background: #fff; border-radius: 16px; padding: 24px; box-shadow: 0 1px 3px rgba(0,0,0,.2); }
h1 { font-size: 22px; margin: 0 0 8px; } p { color: #49454f; margin: 0 0 16px; }
label { display: block; font-weight: 600; margin-bottom: 4px; }
input { width: 100%; box-sizing: border-box; font: inherit; padding: 10px 12px; border: 1px solid #79747e; border-radius: 8px; }
button { margin-top: 16px; font: inherit; padding: 10px 20px; border: 0; border-radius: 20px; background: #6750a4; color: #fff; cursor: pointer; }
.problem { color: #b3261e; } code { background: #f3edf7; padding: 1px 4px; border-radius: 4px; }
</style></head>
<body><main>
<h1>Sign in to pluginhost</h1>
<p>Paste your token. An administrator makes one with <code>pluginhost token create --user NAME</code>.</p>
{{if .Problem}}<p class="problem" role="alert">{{.Problem}}</p>{{end}}
<form method="post" action="/app/login">
<input type="hidden" name="next" value="{{.Next}}">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
</main></body></html>
`))
