// Package httpapi is the host's HTTP surface: GraphQL over HTTP and websocket,
// the GraphiQL playground for admins, the /v1 REST endpoints, health, readiness
// and metrics. It authenticates every request but health and metrics, and maps
// application errors to statuses and codes in one place.
package httpapi

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"pluginhost/auth"
	"pluginhost/database"
	"pluginhost/lifecycle"
	"pluginhost/models"
	"pluginhost/storage"
)

// Server holds what the HTTP handlers call.
type Server struct {
	Auth    *auth.Service
	Storage *storage.Service
	// Sockets upgrades websocket requests to /graphql.
	Sockets *Sockets
	DB      *database.DB
	// GraphQL serves /graphql (HTTP and websocket upgrades).
	GraphQL http.Handler
	// Limiter holds the bounds on GraphQL requests (see Limits); the same
	// one must be given to NewGraphQL and NewSockets.
	Limiter *Limiter
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
		mux.HandleFunc("GET /playground/assets/{file}", playgroundAsset)
	}
	mux.HandleFunc("GET /dashboard", s.dashboard)
	s.mountApp(mux) // the web host: /app (app.go)
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
		user, _ := auth.UserFrom(r.Context())
		release, ok := s.admitGraphQL(w, r, user.ID)
		if !ok {
			return
		}
		defer release()
		ctx, cancel := context.WithTimeout(withAdmission(r.Context()), requestTimeout)
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

// admitGraphQL takes a place among the GraphQL requests in flight for the
// user and charges the work of a request, or answers 429 or 503 and reports
// false. The caller calls release when the request is answered.
func (s *Server) admitGraphQL(w http.ResponseWriter, r *http.Request, userID string) (release func(), ok bool) {
	release, err := s.Limiter.g.admit(r.Context(), userID)
	if err == nil {
		if err = s.Limiter.g.spend(r.Context(), userID, RequestWork); err != nil {
			release()
		}
	}
	if err != nil {
		w.Header().Set("Retry-After", "1")
		media, _ := negotiate(r.Header.Get("Accept"))
		writeRequestError(w, cmp.Or(media, mediaJSON), err)
		return nil, false
	}
	return release, true
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
