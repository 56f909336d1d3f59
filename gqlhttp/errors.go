package gqlhttp

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"pluginhost/models"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// presentError maps every error of a GraphQL response (resolver errors, and
// the parse and validation errors of the GraphQL layer, which reach it too)
// to an error with the contract's extensions.code. Application errors keep
// their message (and, for rejected packages, each problem); the GraphQL
// layer's own errors become BAD_USER_INPUT with its code as
// extensions.reason; anything else is logged and reported as INTERNAL.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gqlErr := graphql.DefaultErrorPresenter(ctx, err)
		var appErr *models.Error
		if errors.As(err, &appErr) {
			gqlErr.Message = appErr.Message
			if gqlErr.Extensions == nil {
				gqlErr.Extensions = map[string]any{}
			}
			maps.Copy(gqlErr.Extensions, appErr.Extensions())
			return gqlErr
		}
		var already *gqlerror.Error
		if errors.As(err, &already) && already.Extensions["code"] != nil {
			if already.Extensions["code"] == string(models.ErrBadUserInput) {
				return already // a limit of the host's, with its reason
			}
			// A validation error of the GraphQL layer (wrong argument type, ...).
			already.Extensions["reason"] = already.Extensions["code"]
			already.Extensions["code"] = string(models.ErrBadUserInput)
			return already
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			gqlErr.Message = "the request was cancelled or timed out"
		} else {
			log.Error("graphql resolver failed", "path", gqlErr.Path.String(), "err", err)
			gqlErr.Message = "internal error"
		}
		gqlErr.Extensions = map[string]any{"code": string(models.ErrInternal)}
		return gqlErr
	}
}
