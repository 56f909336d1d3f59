// Package gqlhttp serves the GraphQL API over HTTP (POST, and GET for
// queries) and over websockets (graphql-transport-ws and the legacy
// graphql-ws), with gqlgen's executor, within the bounds of Limits: requests
// and body bytes in flight per user and overall, each user's work rate, the
// size, tokens, fields and cost of an operation, the bytes of its answer,
// and websockets per user and overall. Routing, REST, pages and the access
// log are package httpapi's.
package gqlhttp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"pluginhost/auth"
	"pluginhost/bytecache"
	"pluginhost/graph"
	"pluginhost/models"
	"pluginhost/resolvers"
)

// docBytesPerQueryByte estimates the memory of a parsed and validated
// document per byte of its text, for the byte-bounded cache (measured by
// TestDocumentCacheCost).
const docBytesPerQueryByte = 96

// requestTimeout bounds one GraphQL operation that is not a subscription.
const requestTimeout = 30 * time.Second

// Server is the GraphQL API: one executor, its HTTP and websocket
// transports, and the bounds they share.
type Server struct {
	exec    *executor.Executor
	http    httpTransport
	ws      transport.Websocket
	limiter *Limiter
	// Sockets are the websockets of /graphql.
	Sockets *Sockets
}

// Options are the settings of a Server beyond Limits.
type Options struct {
	// InitTimeout is how long a websocket client has to send
	// connection_init; zero is DefaultInitTimeout.
	InitTimeout time.Duration
}

// New returns the GraphQL API of the resolvers, within the bounds of
// limits (zero fields take their defaults); auth authenticates websockets
// in connection_init.
func New(r *resolvers.Resolver, a *auth.Authenticator, limits Limits, opts Options, log *slog.Logger) *Server {
	lim := NewLimiter(limits)
	exec := executor.New(graph.NewExecutableSchema(graph.Config{Resolvers: r}))
	docs := bytecache.New(lim.Limits.QueryCacheBytes, lim.Limits.QueryCacheBytes, func(q string, _ *ast.QueryDocument) int64 {
		return int64(len(q))*docBytesPerQueryByte + 1024
	})
	exec.SetQueryCache(docs)
	exec.SetParserTokenLimit(lim.Limits.MaxQueryTokens)
	exec.Use(extension.Introspection{})
	exec.Use(&queryGuard{limits: &lim.Limits, gate: &lim.g, docs: docs, apq: bytecache.New(lim.Limits.APQCacheBytes, lim.Limits.APQCacheBytes, func(hash, q string) int64 {
		return int64(len(hash) + len(q) + 64)
	})})
	present := presentError(log)
	exec.SetErrorPresenter(present)
	exec.SetRecoverFunc(func(ctx context.Context, p any) error {
		log.Error("graphql panic", "panic", fmt.Sprint(p))
		return errors.New("internal error")
	})
	sockets := newSockets(a, lim, cmp.Or(opts.InitTimeout, DefaultInitTimeout), log)
	h := httpTransport{limits: &lim.Limits, gate: &lim.g, updates: newUpdates(&lim.Limits, &lim.g, docs, r.Mutation(), present)}
	return &Server{exec: exec, http: h, ws: sockets.transport(), limiter: lim, Sockets: sockets}
}

// Limiter returns the bounds the server enforces, and their state.
func (s *Server) Limiter() *Limiter { return s.limiter }

// ServeHTTP serves a GraphQL request over HTTP for the user the request's
// context carries (auth.WithUser): it waits for a place among the requests
// in flight (429 or 503 past InFlightWait), charges the request's work, and
// answers within the request deadline.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, ok := auth.UserFrom(r.Context())
	if !ok {
		writeRequestError(w, mediaJSON, &requestError{http.StatusUnauthorized, string(models.ErrUnauthenticated), "a valid bearer token is required"})
		return
	}
	release, rerr := s.admit(r.Context(), user.ID)
	if rerr != nil {
		w.Header().Set("Retry-After", "1")
		media, _ := negotiate(r.Header.Get("Accept"))
		writeRequestError(w, cmp.Or(media, mediaJSON), rerr)
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(withAdmission(r.Context()), requestTimeout)
	defer cancel()
	r = r.WithContext(graphql.StartOperationTrace(ctx))
	defer s.recover(w, r)
	switch {
	case r.Method == http.MethodOptions:
		transport.Options{}.Do(w, r, s.exec)
	case s.http.Supports(r):
		s.http.Do(w, r, s.exec)
	default:
		writeRequestError(w, mediaJSON, badRequest("UNSUPPORTED_TRANSPORT", "send GraphQL as an application/json POST, or a query as GET"))
	}
}

// recover answers a panic of the executor as an internal error, as gqlgen's
// own handler does.
func (s *Server) recover(w http.ResponseWriter, r *http.Request) {
	if p := recover(); p != nil {
		err := s.exec.PresentRecoveredError(r.Context(), p)
		gqlErr, _ := err.(*gqlerror.Error)
		b, _ := json.Marshal(&graphql.Response{Errors: gqlerror.List{gqlErr}})
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(b)
	}
}

// admit takes a place among the user's requests in flight and charges a
// request's work.
func (s *Server) admit(ctx context.Context, userID string) (func(), *requestError) {
	release, err := s.limiter.g.admit(ctx, userID)
	if err != nil {
		return nil, err
	}
	if err := s.limiter.g.spend(ctx, userID, RequestWork); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// ServeSocket upgrades a websocket request of /graphql; the client
// authenticates in connection_init.
func (s *Server) ServeSocket(w http.ResponseWriter, r *http.Request) {
	s.Sockets.serve(w, r, s.websocket(), nil, "")
}

// ServeSocketAs upgrades a websocket request that was authenticated with
// the handshake as user, with token (the web host's pages): connection_init
// then needs no token, and the token's end closes the socket.
func (s *Server) ServeSocketAs(w http.ResponseWriter, r *http.Request, user *models.User, token string) {
	s.Sockets.serve(w, r, s.websocket(), user, token)
}

// websocket returns the handler gqlgen's websocket transport runs on.
func (s *Server) websocket() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ws.Do(w, r.WithContext(graphql.StartOperationTrace(r.Context())), s.exec)
	})
}

// Execute runs one operation for a user, admitted and bounded as one sent
// over HTTP is, and returns its answer as JSON; a refusal of admission is
// an answer with one error, as over HTTP.
func (s *Server) Execute(ctx context.Context, user *models.User, query string, variables map[string]any) []byte {
	release, rerr := s.admit(ctx, user.ID)
	if rerr != nil {
		b, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{"message": rerr.message, "extensions": map[string]any{"code": rerr.reason}}}})
		return b
	}
	defer release()
	ctx, cancel := context.WithTimeout(withAdmission(auth.WithUser(ctx, user)), requestTimeout)
	defer cancel()
	ctx = graphql.StartOperationTrace(ctx)
	params := &graphql.RawParams{Query: query, Variables: variables, ReadTime: graphql.TraceTiming{Start: graphql.Now(), End: graphql.Now()}}
	var resp *graphql.Response
	if opCtx, errs := s.exec.CreateOperationContext(ctx, params); errs != nil {
		resp = s.exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
	} else {
		responses, ctx := s.exec.DispatchOperation(ctx, opCtx)
		resp = responses(ctx)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil
	}
	return b
}
