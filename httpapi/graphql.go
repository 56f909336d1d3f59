package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"pluginhost/graph"
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
	srv.Use(&complexityLimit{})
	srv.SetErrorPresenter(presentError(log))
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		log.Error("graphql panic", "panic", fmt.Sprint(p))
		return errors.New("internal error")
	})
	return srv
}

// complexityLimit refuses an operation that selects more than
// MaxQueryComplexity fields. Unlike gqlgen's extension it keeps no statistics
// on the operation, which a subscription would hold for its whole life.
type complexityLimit struct{ es graphql.ExecutableSchema }

func (complexityLimit) ExtensionName() string { return "ComplexityLimit" }

func (c *complexityLimit) Validate(es graphql.ExecutableSchema) error {
	c.es = es
	return nil
}

func (c *complexityLimit) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	n := complexity.Calculate(ctx, c.es, op.Doc.Operations.ForName(op.OperationName), op.Variables)
	if n > MaxQueryComplexity {
		return &gqlerror.Error{
			Message:    fmt.Sprintf("the operation selects %d fields; at most %d are allowed", n, MaxQueryComplexity),
			Extensions: map[string]any{"code": "COMPLEXITY_LIMIT_EXCEEDED"},
		}
	}
	return nil
}

// requestTimeout bounds one GraphQL HTTP request.
const requestTimeout = 30 * time.Second
