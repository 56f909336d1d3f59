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
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"pluginhost/graph"
	"pluginhost/models"
	"pluginhost/resolvers"
)

// Bounds on GraphQL requests.
const (
	// MaxQueryComplexity bounds the fields one operation may select.
	MaxQueryComplexity = 2000
	// QueryCacheSize is how many parsed operations are kept.
	QueryCacheSize = 1000
)

// NewGraphQL returns the GraphQL server over HTTP POST and GET (queries only).
// Websocket transports are added by the caller.
func NewGraphQL(r *resolvers.Resolver, log *slog.Logger, extra ...graphql.Transport) *handler.Server {
	srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: r}))
	for _, t := range extra {
		srv.AddTransport(t)
	}
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](QueryCacheSize))
	srv.Use(extension.Introspection{})
	srv.Use(extension.FixedComplexityLimit(MaxQueryComplexity))
	srv.SetErrorPresenter(presentError(log))
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		log.Error("graphql panic", "panic", fmt.Sprint(p))
		return errors.New("internal error")
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		resp := next(ctx)
		if resp != nil {
			for _, e := range resp.Errors {
				normaliseCode(e)
			}
		}
		return resp
	})
	return srv
}

// normaliseCode gives parse and validation errors of the GraphQL layer the
// contract's BAD_USER_INPUT code, keeping gqlgen's code as extensions.reason.
func normaliseCode(e *gqlerror.Error) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{"code": string(models.ErrBadUserInput)}
		return
	}
	switch e.Extensions["code"] {
	case "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "COMPLEXITY_LIMIT_EXCEEDED":
		e.Extensions["reason"] = e.Extensions["code"]
		e.Extensions["code"] = string(models.ErrBadUserInput)
	}
}

// requestTimeout bounds one GraphQL HTTP request.
const requestTimeout = 30 * time.Second
