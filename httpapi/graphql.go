package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"pluginhost/graph"
	"pluginhost/resolvers"
)

// docBytesPerQueryByte estimates the memory of a parsed and validated
// document per byte of its text, for the byte-bounded cache (measured by
// TestDocumentCacheCost).
const docBytesPerQueryByte = 96

// NewGraphQL returns the GraphQL server over HTTP POST and GET (queries only),
// within the bounds of lim. Websocket transports are added by the caller.
func NewGraphQL(r *resolvers.Resolver, log *slog.Logger, lim *Limiter, extra ...graphql.Transport) *handler.Server {
	srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: r}))
	for _, t := range extra {
		srv.AddTransport(t)
	}
	srv.AddTransport(transport.Options{})
	srv.AddTransport(httpTransport{limits: &lim.Limits, gate: &lim.g})
	docs := newByteCache(lim.Limits.QueryCacheBytes, func(q string, _ *ast.QueryDocument) int64 {
		return int64(len(q))*docBytesPerQueryByte + 1024
	})
	srv.SetQueryCache(docs)
	srv.SetParserTokenLimit(lim.Limits.MaxQueryTokens)
	srv.Use(extension.Introspection{})
	srv.Use(&queryGuard{limits: &lim.Limits, gate: &lim.g, docs: docs, apq: newByteCache(lim.Limits.APQCacheBytes, func(hash, q string) int64 {
		return int64(len(hash) + len(q) + 64)
	})})
	srv.SetErrorPresenter(presentError(log))
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		log.Error("graphql panic", "panic", fmt.Sprint(p))
		return errors.New("internal error")
	})
	return srv
}

// requestTimeout bounds one GraphQL HTTP request.
const requestTimeout = 30 * time.Second
