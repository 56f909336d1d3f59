// Package httpapi is the host's HTTP surface: GraphQL over HTTP and websocket,
// the GraphiQL playground for admins, the /v1 REST endpoints, health, readiness
// and metrics. It authenticates every request but health and metrics, and maps
// application errors to statuses and codes in one place.
package httpapi

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/playground"

	"pluginhost/auth"
	"pluginhost/database"
	"pluginhost/lifecycle"
	"pluginhost/models"
	"pluginhost/storage"
)

// MaxGraphQLBody bounds a GraphQL request body: room for the base64 of the
// largest package.
const MaxGraphQLBody = 12 << 20

// Server holds what the HTTP handlers call.
type Server struct {
	Auth    *auth.Service
	Storage *storage.Service
	// Sockets upgrades websocket requests to /graphql.
	Sockets *Sockets
	DB      *database.DB
	// GraphQL serves /graphql (HTTP and websocket upgrades).
	GraphQL http.Handler
	// Playground enables GET /playground for admins.
	Playground bool
	// Lifecycle and ImageProxy serve ui-images:fetch; a nil ImageProxy disables it.
	Lifecycle  *lifecycle.Service
	ImageProxy ImageFetcher
	Metrics    *Metrics
	Log        *slog.Logger
}

// Handler returns the routed, instrumented handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.Handle("GET /metrics", s.Metrics.Handler())
	mux.Handle("/graphql", s.graphql())
	if s.Playground {
		mux.Handle("GET /playground", s.playground())
	}
	mux.HandleFunc("GET /dashboard", s.dashboard)
	mux.Handle("/debug/pprof/", s.authenticated(s.admin(http.HandlerFunc(pprof.Index))))
	mux.Handle("/debug/pprof/profile", s.authenticated(s.admin(http.HandlerFunc(pprof.Profile))))
	mux.Handle("/debug/pprof/trace", s.authenticated(s.admin(http.HandlerFunc(pprof.Trace))))
	mux.Handle("DELETE /v1/plugin-instances/{instance_id}/storage", s.authenticated(http.HandlerFunc(s.resetStorage)))
	if s.ImageProxy != nil {
		mux.Handle("POST /v1/plugin-instances/{instance_id}/ui-images:fetch", s.authenticated(images(s.Lifecycle, s.ImageProxy, s)))
	}
	return s.Metrics.Instrument(mux)
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

// authenticated requires a valid bearer token and puts its user in the context.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := auth.FromHeader(r.Header.Get("Authorization"))
		if !ok {
			writeError(w, r, s.Log, models.Errorf(models.ErrUnauthenticated, "a valid bearer token is required (Authorization: Bearer <token>)"))
			return
		}
		user, err := s.Auth.Authenticate(r.Context(), token)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), user)))
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
	authed := s.authenticated(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxGraphQLBody)
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		s.GraphQL.ServeHTTP(w, r.WithContext(ctx))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			s.Sockets.Serve(w, r, s.GraphQL)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// resetStorage is DELETE /v1/plugin-instances/{instance_id}/storage.
func (s *Server) resetStorage(w http.ResponseWriter, r *http.Request) {
	user, _ := auth.UserFrom(r.Context())
	id := r.PathValue("instance_id")
	n, err := s.Storage.Reset(r.Context(), storage.Caller{UserID: user.ID}, id)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	s.Log.Info("instance storage reset", "instance", id, "user", user.ID, "deleted_items", n, "via", "rest")
	writeJSON(w, http.StatusOK, map[string]any{"instance_id": id, "deleted_items": n})
}

// playground serves GraphiQL to admins. A browser cannot send a bearer header
// when opening a page, so the page also accepts HTTP Basic authentication with
// the token as the password; the page then sends the token as a bearer header
// with every operation.
func (s *Server) playground() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, token, ok := s.pageUser(w, r, "pluginhost playground")
		if !ok {
			return
		}
		if !user.Admin {
			writeError(w, r, s.Log, models.Errorf(models.ErrForbidden, "the playground is for admins"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		playground.Handler("pluginhost", "/graphql",
			playground.WithGraphiqlFetcherHeaders(map[string]string{"Authorization": "Bearer " + token}),
			playground.WithStoragePrefix("pluginhost-"+base64.RawURLEncoding.EncodeToString([]byte(user.ID))),
		).ServeHTTP(w, r)
	})
}
