package webhost

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"pluginhost/compression"
	"pluginhost/models"
	"pluginhost/preview/assets"
)

// Server is what the web host's routes need of the host, given as
// functions so that this package links no database, engine or executor:
// the server package builds it.
type Server struct {
	// User authenticates a page request, or answers it (401 with a
	// challenge) and reports false; it returns the user and the credential
	// the request carried.
	User func(w http.ResponseWriter, r *http.Request) (*models.User, string, bool)
	// WithUser returns a context that carries the user, for GraphQL and the
	// image proxy.
	WithUser func(ctx context.Context, user *models.User) context.Context
	// GraphQL serves a GraphQL request over HTTP for the user of its
	// context, admitted as every one is.
	GraphQL http.Handler
	// Socket serves a GraphQL websocket authenticated by its handshake as
	// user, with the page's credential.
	Socket func(w http.ResponseWriter, r *http.Request, user *models.User, credential string)
	// Execute runs an operation for a user, admitted as every one is, and
	// returns its answer as JSON.
	Execute func(ctx context.Context, user *models.User, query string, variables map[string]any) []byte
	// Images serves the image proxy for the user of its context; nil when
	// the host has none.
	Images http.Handler
	// Reset deletes an Instance's stored data for the user of its context
	// (the REST reset's handler, with {instance_id} in the path); nil: the
	// settings have no reset.
	Reset http.Handler
	// Error writes a refusal as the host's REST errors are written.
	Error func(w http.ResponseWriter, r *http.Request, err error)
	// SignIn starts a session with a token given by a request's form or
	// sign-in link: the cookie's value and when it ends. SignOut ends one,
	// and returns where the browser goes so that the identity provider
	// ends its session too ("" when there is nothing to end), and then to
	// returnTo. Nil: no sign-in page.
	SignIn  func(r *http.Request, token string) (string, time.Time, error)
	SignOut func(ctx context.Context, value, returnTo string) (string, error)
	// Provider, when set, offers signing in with the operator's identity
	// provider beside the token form.
	Provider *Provider
	// PublicURL is the server's address as browsers reach it; empty: the
	// address of each request.
	PublicURL string
	// SecureCookies marks the session cookie Secure even when the request
	// came without TLS (behind a proxy that ends TLS).
	SecureCookies bool
}

// Mount adds the web host's routes: its pages, and the GraphQL and image
// proxy endpoints the pages call with the page's own credentials.
func (s *Server) Mount(mux *http.ServeMux) {
	if s.SignIn != nil {
		mux.HandleFunc("GET /{$}", s.root)
		mux.HandleFunc("GET /app/login", s.signIn)
		mux.HandleFunc("POST /app/login", s.signIn)
		mux.HandleFunc("POST /app/logout", s.signOut)
		if s.Provider != nil {
			mux.HandleFunc("GET "+ProviderStartPath, s.providerStart)
			mux.HandleFunc("GET "+ProviderCallbackPath, s.providerCallback)
		}
	}
	mux.HandleFunc("GET "+AssetsPath+"{file}", serveAsset)
	mux.HandleFunc("GET /app", s.list)
	mux.HandleFunc("GET /app/{$}", s.list)
	mux.HandleFunc("GET /app/{instance_id}", s.first)
	mux.HandleFunc("GET /app/{instance_id}/{extension}", s.screen)
	mux.HandleFunc("GET /app/{instance_id}/-/settings", s.settings)
	mux.HandleFunc("GET /dashboard", s.dashboard)
	for _, method := range []string{"GET ", "POST "} {
		mux.HandleFunc(method+ListGraphQLPattern, s.graphql)
		mux.HandleFunc(method+GraphQLPattern, s.graphql)
	}
	if s.Images != nil {
		mux.Handle("POST "+ImageProxyPattern, s.call(s.Images))
	}
	if s.Reset != nil {
		mux.Handle("DELETE "+ResetPattern, s.call(s.Reset))
	}
}

func viewerOf(user *models.User) Viewer { return Viewer{Name: user.Name, Admin: user.Admin} }

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	user, credential, ok := s.User(w, r)
	if !ok {
		return
	}
	home, cards := s.home(r.Context(), user, credential)
	ServePage(w, r, viewerOf(user), View{Kind: ViewHome, Home: home, Cards: cards})
}

// settings serves an Instance's settings, with the answer to
// SettingsQuery.
func (s *Server) settings(w http.ResponseWriter, r *http.Request) {
	user, credential, ok := s.User(w, r)
	if !ok {
		return
	}
	id := r.PathValue("instance_id")
	ServePage(w, r, viewerOf(user), View{Kind: ViewSettings, InstanceID: id,
		Preload:   s.run(r.Context(), user, credential, SettingsQuery, map[string]any{"i": id}),
		Instances: s.instances(r.Context(), user, credential)})
}

// dashboard serves the live storage dashboard of the signed-in user.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	user, credential, ok := s.User(w, r)
	if !ok {
		return
	}
	ServePage(w, r, viewerOf(user), View{Kind: ViewDashboard, Instances: s.instances(r.Context(), user, credential)})
}

// instances runs InstancesQuery for the user: the data of its answer, or
// nil (the page then knows no other Instance than its own).
func (s *Server) instances(ctx context.Context, user *models.User, credential string) json.RawMessage {
	var answer struct {
		Data   json.RawMessage
		Errors []json.RawMessage
	}
	if json.Unmarshal(s.Execute(ctx, user, InstancesQuery, nil), &answer) != nil || len(answer.Errors) > 0 {
		return nil
	}
	return redact(answer.Data, credential)
}

// preloadedCards is how many home cards the server starts for the page;
// the page starts the others itself.
const preloadedCards = 12

// home runs the home's queries for the user: HomeQuery, and StartQuery for
// every home extension it draws (of an enabled Instance, not hidden; the
// first preloadedCards), so that the page starts without a request. Nil when
// the answer is not data (the page then asks itself).
func (s *Server) home(ctx context.Context, user *models.User, credential string) (json.RawMessage, []Card) {
	var answer struct {
		Data   json.RawMessage
		Errors []json.RawMessage
	}
	var home struct {
		Installations []struct {
			Instances []struct {
				ID      string
				Enabled bool
			}
			Extensions []struct {
				ID, Point string
				Placement *string
			}
		}
	}
	if json.Unmarshal(s.Execute(ctx, user, HomeQuery, nil), &answer) != nil || len(answer.Errors) > 0 || json.Unmarshal(answer.Data, &home) != nil {
		return nil, nil
	}
	cards := []Card{}
	for _, instl := range home.Installations {
		for _, inst := range instl.Instances {
			for _, e := range instl.Extensions {
				if len(cards) < preloadedCards && inst.Enabled && e.Point == "home" && (e.Placement == nil || *e.Placement != "hidden") {
					cards = append(cards, Card{InstanceID: inst.ID, Extension: e.ID, Preload: s.preload(ctx, user, credential, inst.ID, e.ID)})
				}
			}
		}
	}
	return redact(answer.Data, credential), cards
}

// first sends /app/{instance} to the Instance's first screen (where an OAuth
// provider's return lands), keeping the query.
func (s *Server) first(w http.ResponseWriter, r *http.Request) {
	user, _, ok := s.User(w, r)
	if !ok {
		return
	}
	id := r.PathValue("instance_id")
	out := s.Execute(r.Context(), user, `query($i: ID!) { instance(id: $i) { installation { extensions { id: manifestId point placement } } } }`, map[string]any{"i": id})
	var answer struct {
		Data struct {
			Instance *struct {
				Installation struct {
					Extensions []struct {
						ID, Point string
						Placement *string
					}
				}
			}
		}
	}
	json.Unmarshal(out, &answer)
	if inst := answer.Data.Instance; inst != nil {
		for _, e := range inst.Installation.Extensions {
			if (e.Point == "screen" || e.Point == "home") && (e.Placement == nil || *e.Placement != "hidden") {
				target := "/app/" + url.PathEscape(id) + "/" + url.PathEscape(e.ID)
				if r.URL.RawQuery != "" {
					target += "?" + r.URL.RawQuery
				}
				http.Redirect(w, r, target, http.StatusSeeOther)
				return
			}
		}
	}
	http.Redirect(w, r, "/app", http.StatusSeeOther)
}

func (s *Server) screen(w http.ResponseWriter, r *http.Request) {
	user, credential, ok := s.User(w, r)
	if !ok {
		return
	}
	id, ext := r.PathValue("instance_id"), r.PathValue("extension")
	// The screen's start and the shell's Instances are run at once.
	var instances json.RawMessage
	done := make(chan struct{})
	go func() {
		defer close(done)
		instances = s.instances(r.Context(), user, credential)
	}()
	preload := s.preload(r.Context(), user, credential, id, ext)
	sources, generation := s.firstSources(r.Context(), user, credential, id, preload, routeParams(r))
	<-done
	ServePage(w, r, viewerOf(user), View{Kind: ViewScreen, InstanceID: id, Extension: ext, Preload: preload, Instances: instances,
		Sources: sources, Generation: generation})
}

// preload runs the page's first query (StartQuery) for the user, so that
// the page carries its answer and starts without a request.
func (s *Server) preload(ctx context.Context, user *models.User, credential, instanceID, extension string) *Preload {
	return s.run(ctx, user, credential, StartQuery, map[string]any{"i": instanceID, "e": extension})
}

// run runs a page's query for the user; nil when its answer is not JSON
// (the page then asks itself). The credential is redacted from it, as from
// every answer to the page.
func (s *Server) run(ctx context.Context, user *models.User, credential, query string, vars map[string]any) *Preload {
	out := s.Execute(ctx, user, query, vars)
	if !json.Valid(out) {
		return nil
	}
	return &Preload{Status: http.StatusOK, Body: redact(out, credential)}
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

// call authenticates a page's call and lets only same-origin calls through.
func (s *Server) call(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, ok := s.User(w, r)
		if !ok {
			return
		}
		if !sameOrigin(r, false) {
			s.Error(w, r, models.Errorf(models.ErrForbidden, "the web host's endpoints answer only its own pages"))
			return
		}
		next.ServeHTTP(w, r.WithContext(s.WithUser(r.Context(), user)))
	})
}

// graphql is GraphQL for the web host's pages: HTTP POST, and a websocket
// whose handshake the page's credentials authenticate (connection_init then
// needs no token). Every occurrence of the caller's credential in an HTTP
// answer is replaced, so that no stored value can bring it into the page.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	user, credential, ok := s.User(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		if !sameOrigin(r, true) {
			s.Error(w, r, models.Errorf(models.ErrForbidden, "the web host's socket answers only its own pages"))
			return
		}
		s.Socket(w, r, user, credential)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.Error(w, r, models.Errorf(models.ErrBadUserInput, "the web host's GraphQL takes POST"))
		return
	}
	if !sameOrigin(r, false) {
		s.Error(w, r, models.Errorf(models.ErrForbidden, "the web host's endpoints answer only its own pages"))
		return
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.GraphQL.ServeHTTP(rec, r.WithContext(s.WithUser(r.Context(), user)))
	body := redact(rec.body.Bytes(), credential)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rec.status)
	w.Write(body)
}

// redact replaces every occurrence of the credential in an answer.
func redact(body []byte, credential string) []byte {
	if credential == "" {
		return body
	}
	return bytes.ReplaceAll(body, []byte(credential), []byte("[redacted]"))
}

// recorder keeps a GraphQL answer so that it can be rewritten.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header         { return w.header }
func (w *recorder) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *recorder) WriteHeader(status int)      { w.status = status }

// serveAsset serves a static file of the pages by its hashed name: public
// (it holds no user's data), cached for good, compressed as the client
// takes it (brotli, else gzip), once for all.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	f, ok := assets.StaticFile(r.PathValue("file"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", f.ETag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == f.ETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.Body
	if f.Compressed.Brotli != nil {
		var enc string
		if body, enc = f.Compressed.Pick(r, f.Body); enc != compression.Identity {
			h.Set("Content-Encoding", enc)
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}
