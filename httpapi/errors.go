package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

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
	case models.ErrTooManyRequests:
		return http.StatusTooManyRequests
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
	var e *models.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, statusOf(code), errorBody{errorDetail{code, models.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
