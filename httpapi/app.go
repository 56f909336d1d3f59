package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"pluginhost/auth"
	"pluginhost/models"
	"pluginhost/webhost"
)

// appRealm is the HTTP Basic realm of the web host: one realm for the pages
// and every endpoint they call, so that the browser reuses the credentials.
const appRealm = "pluginhost app"

// mountApp adds the web host (package webhost): its pages, and the GraphQL
// and image proxy endpoints the pages call with the page's own credentials.
func (s *Server) mountApp(mux *http.ServeMux) {
	mux.HandleFunc("GET /app", s.appList)
	mux.HandleFunc("GET /app/{$}", s.appList)
	mux.HandleFunc("GET /app/{instance_id}/{extension}", s.appScreen)
	for _, method := range []string{"GET ", "POST "} {
		mux.HandleFunc(method+webhost.ListGraphQLPattern, s.appGraphQL)
		mux.HandleFunc(method+webhost.GraphQLPattern, s.appGraphQL)
	}
	if s.ImageProxy != nil {
		mux.Handle("POST "+webhost.ImageProxyPattern, s.appCall(images(s.Lifecycle, s.ImageProxy, s)))
	}
}

func (s *Server) appList(w http.ResponseWriter, r *http.Request) {
	user, _, ok := s.pageUser(w, r, appRealm)
	if !ok {
		return
	}
	webhost.ServeList(w, r, webhost.Viewer{Name: user.Name, Admin: user.Admin})
}

func (s *Server) appScreen(w http.ResponseWriter, r *http.Request) {
	user, token, ok := s.pageUser(w, r, appRealm)
	if !ok {
		return
	}
	id, ext := r.PathValue("instance_id"), r.PathValue("extension")
	webhost.ServeScreen(w, r, webhost.Viewer{Name: user.Name, Admin: user.Admin}, id, ext, s.appPreload(r, user, token, id, ext))
}

// appPreload runs the page's first query (webhost.StartQuery) for the user,
// so that the page carries its answer and starts without a request. It
// goes through the same admission as the page's own GraphQL requests, and
// returns nil when it is not admitted or its answer is not JSON; the page
// then asks itself.
func (s *Server) appPreload(r *http.Request, user *models.User, token, instanceID, extension string) *webhost.Preload {
	body, err := json.Marshal(map[string]any{"query": webhost.StartQuery, "variables": map[string]string{"i": instanceID, "e": extension}})
	if err != nil {
		return nil
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "/graphql", bytes.NewReader(body))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &redactingWriter{header: http.Header{}, status: http.StatusOK}
	if !s.serveRedacted(rec, req, user, token) {
		return nil
	}
	out := rec.body.Bytes()
	if !json.Valid(out) {
		return nil
	}
	return &webhost.Preload{Status: rec.status, Body: out}
}

// sameOrigin reports whether a request made with the browser's ambient
// credentials comes from this server's own pages: the pages send
// X-Pluginhost-App (a header a foreign page cannot add without a CORS
// preflight, which is never allowed), and a browser's Sec-Fetch-Site or
// Origin, when present, must name this origin. A websocket handshake cannot
// carry the header, so its Origin must be this host.
func sameOrigin(r *http.Request, socket bool) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	} else if socket {
		return false
	}
	return socket || r.Header.Get("X-Pluginhost-App") == "1"
}

// appCall authenticates a page's call as pageUser does and lets only
// same-origin calls through.
func (s *Server) appCall(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, ok := s.pageUser(w, r, appRealm)
		if !ok {
			return
		}
		if !sameOrigin(r, false) {
			writeError(w, r, s.Log, models.Errorf(models.ErrForbidden, "the web host's endpoints answer only its own pages"))
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), user)))
	})
}

// appGraphQL is GraphQL for the web host's pages: HTTP POST, and a websocket
// whose handshake the page's credentials authenticate (connection_init then
// needs no token). Every occurrence of the caller's token in an HTTP answer
// is replaced, so that no stored value can bring it into the page.
func (s *Server) appGraphQL(w http.ResponseWriter, r *http.Request) {
	user, token, ok := s.pageUser(w, r, appRealm)
	if !ok {
		return
	}
	if r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		if !sameOrigin(r, true) {
			writeError(w, r, s.Log, models.Errorf(models.ErrForbidden, "the web host's socket answers only its own pages"))
			return
		}
		s.Sockets.ServeAs(w, r, s.GraphQL, user, token)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, r, s.Log, models.Errorf(models.ErrBadUserInput, "the web host's GraphQL takes POST"))
		return
	}
	if !sameOrigin(r, false) {
		writeError(w, r, s.Log, models.Errorf(models.ErrForbidden, "the web host's endpoints answer only its own pages"))
		return
	}
	s.serveRedacted(w, r, user, token)
}

// serveRedacted serves a GraphQL request of the web host for user, admitted
// as every GraphQL HTTP request is (admitGraphQL), and writes the answer
// with every occurrence of token replaced. It reports false when the
// request was not admitted; the refusal is then written instead.
func (s *Server) serveRedacted(w http.ResponseWriter, r *http.Request, user *models.User, token string) bool {
	release, ok := s.admitGraphQL(w, r, user.ID)
	if !ok {
		return false
	}
	defer release()
	ctx, cancel := context.WithTimeout(auth.WithUser(r.Context(), user), requestTimeout)
	defer cancel()
	rec := &redactingWriter{header: http.Header{}, status: http.StatusOK}
	s.GraphQL.ServeHTTP(rec, r.WithContext(ctx))
	body := rec.body.Bytes()
	if token != "" {
		body = bytes.ReplaceAll(body, []byte(token), []byte("[redacted]"))
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rec.status)
	w.Write(body)
	return true
}

// redactingWriter keeps a GraphQL answer so that it can be rewritten.
type redactingWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *redactingWriter) Header() http.Header         { return w.header }
func (w *redactingWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *redactingWriter) WriteHeader(status int)      { w.status = status }
