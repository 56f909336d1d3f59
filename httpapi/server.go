// Package httpapi is the host's HTTP surface: GraphQL over HTTP and websocket,
// the GraphiQL playground for admins, the /v1 REST endpoints, health, readiness
// and metrics. It authenticates every request but health and metrics, and maps
// application errors to statuses and codes in one place.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"pluginhost/access"
	"pluginhost/auth"
	"pluginhost/compression"
	"pluginhost/connections"
	"pluginhost/database"
	"pluginhost/gqlhttp"
	"pluginhost/models"
	"pluginhost/storage"
)

// Server holds what the HTTP handlers call.
type Server struct {
	// Auth authenticates every request: server tokens, the issuer's JWTs,
	// and the web host's sessions when it has Sessions (without them, pages
	// take only a bearer header or HTTP Basic).
	Auth    *auth.Authenticator
	Storage *storage.Service
	DB      *database.DB
	// GraphQL serves /graphql: HTTP requests, and websocket upgrades.
	GraphQL *gqlhttp.Server
	// Playground enables GET /playground for admins.
	Playground bool
	// Gate and ImageProxy serve ui-images:fetch; a nil ImageProxy disables it.
	Gate       *access.Gate
	ImageProxy ImageFetcher
	// Connections starts OAuth authorizations in the browser (GET
	// /v1/oauth/start) and completes them (GET /v1/oauth/callback);
	// PublicURL, when set, is where start links point and providers send
	// users back.
	Connections *connections.Service
	PublicURL   string
	Metrics     *Metrics
	Log         *slog.Logger
}

// Handler returns the routed, instrumented handler, with the routes mount
// adds (the web host's).
func (s *Server) Handler(mount ...func(*http.ServeMux)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.Handle("GET /metrics", s.Metrics.Handler())
	mux.Handle("/graphql", s.WithBaseURL(s.graphql()))
	if s.Playground {
		mux.Handle("GET /playground", s.playground())
		mux.HandleFunc("GET /playground/assets/{file}", playgroundAsset)
	}
	for _, m := range mount {
		m(mux)
	}
	mux.Handle("/debug/pprof/", s.authenticated(s.admin(http.HandlerFunc(pprof.Index))))
	mux.Handle("/debug/pprof/profile", s.authenticated(s.admin(http.HandlerFunc(pprof.Profile))))
	mux.Handle("/debug/pprof/trace", s.authenticated(s.admin(http.HandlerFunc(pprof.Trace))))
	mux.Handle("DELETE /v1/plugin-instances/{instance_id}/storage", s.authenticated(http.HandlerFunc(s.resetStorage)))
	if s.ImageProxy != nil {
		mux.Handle("POST /v1/plugin-instances/{instance_id}/ui-images:fetch", s.authenticated(images(s.Gate, s.ImageProxy, s)))
	}
	if s.Connections != nil {
		mux.HandleFunc("GET "+connections.StartPath, s.oauthStart)
		mux.HandleFunc("GET "+connections.CallbackPath, s.oauthCallback)
	}
	// Text answers (pages, GraphQL, errors, metrics) go compressed to a
	// client that takes it.
	return s.Metrics.Instrument(compression.Handler(mux))
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.Ping(ctx); err != nil {
		s.Log.Warn("readiness: database unreachable", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "database unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// authenticated requires a valid bearer credential (a server token or an
// issuer's JWT) and puts its user in the context.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.Auth.Request(r)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), id.User)))
	})
}

// admin lets only admins through (after authenticated).
func (s *Server) admin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := auth.RequireAdmin(r.Context()); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// graphql authenticates HTTP requests by bearer token; websocket upgrades
// authenticate in connection_init instead.
func (s *Server) graphql() http.Handler {
	authed := s.authenticated(s.GraphQL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			s.GraphQL.ServeSocket(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// Images returns the image proxy's handler (ui-images:fetch) for the user of
// the request's context; nil when the server has no image proxy.
func (s *Server) Images() http.Handler {
	if s.ImageProxy == nil {
		return nil
	}
	return images(s.Gate, s.ImageProxy, s)
}

// Reset returns the handler of an Instance's reset of its stored data for
// the user of the request's context ({instance_id} in the path), as DELETE
// /v1/plugin-instances/{instance_id}/storage answers it.
func (s *Server) Reset() http.Handler { return http.HandlerFunc(s.resetStorage) }

// PageUser returns the authentication of page requests of a realm (see
// pageUser).
func (s *Server) PageUser(realm string) func(http.ResponseWriter, *http.Request) (*models.User, string, bool) {
	return func(w http.ResponseWriter, r *http.Request) (*models.User, string, bool) {
		return s.pageUser(w, r, realm)
	}
}

// WriteError writes a REST error (see writeError).
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.Log, err)
}

// resetStorage is DELETE /v1/plugin-instances/{instance_id}/storage.
func (s *Server) resetStorage(w http.ResponseWriter, r *http.Request) {
	user, _ := auth.UserFrom(r.Context())
	id := r.PathValue("instance_id")
	n, err := s.Storage.Reset(r.Context(), models.Caller{UserID: user.ID}, id)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	s.Log.Info("instance storage reset", "instance", id, "user", user.ID, "deleted_items", n, "via", "rest")
	writeJSON(w, http.StatusOK, map[string]any{"instance_id": id, "deleted_items": n})
}
