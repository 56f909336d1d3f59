package httpapi

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"pluginhost/connections"
	"pluginhost/models"
)

// withBaseURL records the server's address as this request reached it
// (PublicURL when the operator set it): where OAuth providers send users
// back. It wraps the GraphQL route alone: inside the mux, so that the
// route pattern the mux records stays on the request the access log sees.
func (s *Server) withBaseURL(next http.Handler) http.Handler {
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
<title>{{.Title}}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem">
<h1 style="font-size: 1.4rem">{{.Title}}</h1><p>{{.Message}}</p>{{if .Back}}<p><a href="{{.Back}}">Back to the plugin</a></p>{{end}}
</body></html>`))

// oauthCallback is GET /v1/oauth/callback: the provider sends the user back
// with a code and the state. The state alone says whose authorization it is;
// a signed-in request must be that user's.
func (s *Server) oauthCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	userID := ""
	if id, err := s.Auth.Request(r); err == nil {
		userID = id.User.ID
	}
	providerError := q.Get("error")
	if d := q.Get("error_description"); d != "" {
		providerError += ": " + d
	}
	instanceID, connection, err := s.Connections.Callback(r.Context(), userID, q.Get("state"), q.Get("code"), providerError)
	back := ""
	if instanceID != "" {
		back = "/app/" + url.PathEscape(instanceID)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		status := http.StatusBadRequest
		var e *models.Error
		if !errors.As(err, &e) {
			s.Log.Error("oauth callback failed", "err", err, "instance", instanceID)
			status = http.StatusInternalServerError
		}
		w.WriteHeader(status)
		oauthPage.Execute(w, map[string]string{"Title": "Not connected", "Message": models.ErrorMessage(err), "Back": back})
		return
	}
	s.Log.Info("connection connected", "instance", instanceID, "connection", connection)
	if back != "" {
		http.Redirect(w, r, back+"?connected="+url.QueryEscape(connection), http.StatusSeeOther)
		return
	}
	oauthPage.Execute(w, map[string]string{"Title": "Connected", "Message": "The account is connected. You may close this page."})
}
