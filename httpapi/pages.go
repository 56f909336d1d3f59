package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"pluginhost/auth"
	"pluginhost/models"
	"pluginhost/webhost"
)

// webhostGraphQL is the web host's GraphQL endpoint for its own pages,
// which a page's own credentials (Basic or the session cookie)
// authenticate, so that a page holds no token.
const webhostGraphQL = webhost.ListGraphQLPattern

// pageUser authenticates a page request (auth.Authenticator.Page): a bearer
// header, HTTP Basic with any user name and the credential as the password,
// or the web host's session cookie. It returns the user and the credential
// the page may carry on ("" for a session signed in with the identity
// provider), or answers: a browser's page request without a credential is
// sent to /app/login, anything else gets 401 with a Basic challenge (429
// when the client made too many failed attempts).
func (s *Server) pageUser(w http.ResponseWriter, r *http.Request, realm string) (*models.User, string, bool) {
	id, presented, err := s.Auth.Page(r)
	if err == nil {
		return id.User, id.Credential, true
	}
	if presented == auth.PresentedSession {
		// An ended session's cookie goes.
		http.SetCookie(w, &http.Cookie{Name: models.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	if models.ErrorCode(err) == models.ErrTooManyRequests {
		writeError(w, r, s.Log, err)
		return nil, "", false
	}
	// A person's browser opening a page is sent to sign in; scripts get
	// the challenge.
	if r.Method == http.MethodGet && presented != auth.PresentedBearer && strings.Contains(r.Header.Get("Accept"), "text/html") && s.Auth.Sessions != nil {
		http.Redirect(w, r, "/app/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return nil, "", false
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`: any user name, your token as the password", charset="UTF-8"`)
	if models.ErrorCode(err) != models.ErrUnauthenticated {
		writeError(w, r, s.Log, err)
		return nil, "", false
	}
	writeError(w, r, s.Log, models.Errorf(models.ErrUnauthenticated, "%s needs a token (a bearer header, HTTP Basic with the token as the password, or a session from /app/login)", realm))
	return nil, "", false
}
