package httpapi

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"pluginhost/auth"
)

// RequestIDHeader carries a request's id, in the response always, and in the
// request when a proxy in front has already given it one.
const RequestIDHeader = "X-Request-Id"

// AccessMessage is the message of AccessLog's records.
const AccessMessage = "request"

// maxRequestID bounds a request id taken from a proxy.
const maxRequestID = 64

// AccessLog logs one line per request once it is answered: method, route
// pattern (never the path or query, which may hold ids and values), status,
// duration, the authenticated user's id and the request id, which it also
// echoes in the X-Request-Id response header. It never logs a header, a body
// or a query string, so tokens and stored values stay out of the log. A
// websocket upgrade is logged when it is answered (status 101), not when the
// socket closes.
func AccessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		ctx, user := auth.TrackUser(context.WithValue(r.Context(), requestIDKey{}, id))
		r = r.WithContext(ctx)
		aw := &accessWriter{ResponseWriter: w}
		next.ServeHTTP(aw, r)
		status := aw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		uid := user()
		if uid == "" {
			uid = "-"
		}
		// The record goes to the handler without the caller's program
		// counter, which the access log has no use for and which
		// slog.Logger would walk the stack for on every request.
		h := log.Handler()
		if !h.Enabled(ctx, slog.LevelInfo) {
			return
		}
		end := time.Now()
		rec := slog.NewRecord(end, slog.LevelInfo, AccessMessage, 0)
		rec.AddAttrs(
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Duration("duration", end.Sub(start)),
			slog.String("user", uid),
			slog.String("request_id", id))
		h.Handle(ctx, rec)
	})
}

type requestIDKey struct{}

// RequestID returns the id AccessLog gave the request of ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func newRequestID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// validRequestID accepts a proxy's request id of 1 to 64 letters, digits,
// dots, dashes and underscores; anything else is replaced, so that a client
// cannot write arbitrary text into the log.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// accessWriter records the status written, for the access log and the
// metrics; it lets websocket upgrades hijack the connection.
type accessWriter struct {
	http.ResponseWriter
	status int
}

func (w *accessWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *accessWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *accessWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection to a websocket upgrader, which answers 101.
func (w *accessWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("httpapi: the connection cannot be hijacked")
	}
	c, rw, err := h.Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (w *accessWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
