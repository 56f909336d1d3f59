package httpapi

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"net/http"

	"pluginhost/auth"
	"pluginhost/models"
)

//go:embed assets/dashboard.html
var dashboardHTML string

var dashboardPage = template.Must(template.New("dashboard").Parse(dashboardHTML))

// pageUser authenticates a page request: a bearer header, or HTTP Basic with
// any user name and the token as the password (a browser cannot send a bearer
// header when opening a page). It returns the user and the token, or answers
// 401 with a Basic challenge.
func (s *Server) pageUser(w http.ResponseWriter, r *http.Request, realm string) (*models.User, string, bool) {
	token, ok := auth.FromHeader(r.Header.Get("Authorization"))
	if !ok {
		_, token, ok = r.BasicAuth()
	}
	if ok {
		if user, err := s.Auth.Authenticate(r.Context(), token); err == nil {
			return user, token, true
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`: any user name, your token as the password", charset="UTF-8"`)
	writeError(w, r, s.Log, models.Errorf(models.ErrUnauthenticated, "%s needs a token (a bearer header, or HTTP Basic with the token as the password)", realm))
	return nil, "", false
}

// dashboard serves the live storage dashboard of the signed-in user.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	user, token, ok := s.pageUser(w, r, "pluginhost dashboard")
	if !ok {
		return
	}
	session, _ := json.Marshal(map[string]string{"token": token, "user": user.Name})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	dashboardPage.Execute(w, map[string]any{"Session": template.JS(session)})
}
