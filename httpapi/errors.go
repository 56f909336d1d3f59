package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"pluginhost/models"
)

// statusOf maps an error code to its REST status, once for every handler.
func statusOf(code models.Code) int {
	switch code {
	case models.ErrUnauthenticated:
		return http.StatusUnauthorized
	case models.ErrPermissionDenied, models.ErrImageDenied, models.ErrForbidden:
		return http.StatusForbidden
	case models.ErrNotFound:
		return http.StatusNotFound
	case models.ErrConflict:
		return http.StatusConflict
	case models.ErrQuotaExceeded, models.ErrImageRejected:
		return http.StatusUnprocessableEntity
	case models.ErrCapabilityFailed:
		return http.StatusUnprocessableEntity
	case models.ErrInvalid, models.ErrBadUserInput, models.ErrPackageRejected, models.ErrMigrationFailed:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    models.Code `json:"code"`
	Message string      `json:"message"`
}

// writeError writes a REST error as {"error": {"code", "message"}}. Anything that
// is not an application error is logged and reported as INTERNAL.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := models.ErrorCode(err)
	if code == models.ErrInternal && !errors.Is(err, context.Canceled) {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, statusOf(code), errorBody{errorDetail{code, models.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

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
