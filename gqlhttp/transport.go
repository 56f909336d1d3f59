package gqlhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"pluginhost/auth"
	"pluginhost/models"
)

// Media types of GraphQL over HTTP.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// httpTransport is GraphQL over HTTP (GET for queries, POST with a JSON body)
// as the GraphQL over HTTP specification has it, read top to bottom:
// negotiate the response type, read the body within its size, time and
// in-flight bounds, decode it strictly (one object, no batch, bounded
// nesting), then parse, validate and run. Every client mistake is
// BAD_USER_INPUT with its reason, never INTERNAL, and no body is ever logged.
//
// Status codes: 413 for an oversized body, 408 for a body not sent in time,
// 415 for a POST that is not application/json, 406 for an Accept the server
// cannot answer, 405 for a mutation over GET, 400 for a body that is not a
// GraphQL request. A request that fails to parse or validate answers 200
// with application/json and 400 without a data entry with
// application/graphql-response+json.
type httpTransport struct {
	limits  *Limits
	gate    *gate
	updates *updates // the usual storageUpdate's way; nil: none
}

func (t httpTransport) Supports(r *http.Request) bool {
	return r.Header.Get("Upgrade") == "" && (r.Method == http.MethodGet || r.Method == http.MethodPost)
}

// requestError is a client mistake found before the GraphQL layer runs.
type requestError struct {
	status  int
	reason  string
	message string
}

func (e *requestError) Error() string { return e.message }

func badRequest(reason, format string, args ...any) *requestError {
	return &requestError{http.StatusBadRequest, reason, fmt.Sprintf(format, args...)}
}

func (t httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media, ok := negotiate(r.Header.Get("Accept"))
	if !ok {
		writeRequestError(w, mediaJSON, &requestError{http.StatusNotAcceptable, "NOT_ACCEPTABLE",
			"the server answers application/graphql-response+json or application/json"})
		return
	}
	var params *graphql.RawParams
	var rerr *requestError
	if r.Method == http.MethodGet {
		params, rerr = t.fromQueryString(r)
	} else {
		var release func()
		params, release, rerr = t.fromBody(w, r)
		if release != nil {
			defer release()
		}
	}
	if rerr != nil {
		writeRequestError(w, media, rerr)
		return
	}
	if t.updates != nil && r.Method == http.MethodPost && t.updates.serve(w, r, media, params) {
		return
	}
	params.Headers = r.Header
	ctx := r.Context()
	opCtx, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		status := http.StatusOK
		switch {
		case errs[0].Extensions["reason"] == "TOO_MANY_REQUESTS":
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", "1")
		case media == mediaGraphQLResponse:
			status = http.StatusBadRequest
		}
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
		writeResponse(w, media, status, resp, media == mediaGraphQLResponse)
		return
	}
	if r.Method == http.MethodGet && opCtx.Operation.Operation != ast.Query {
		w.Header().Set("Allow", http.MethodPost)
		writeRequestError(w, media, &requestError{http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
			"only queries may be sent with GET; send mutations with POST"})
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	writeResponse(w, media, http.StatusOK, responses(ctx), false)
}

// negotiate picks the response's media type from Accept: the first of the
// two GraphQL types listed, application/json for none or a wildcard.
func negotiate(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return mediaJSON, true
	}
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case mediaGraphQLResponse:
			return mediaGraphQLResponse, true
		case mediaJSON, "*/*", "application/*":
			return mediaJSON, true
		}
	}
	return "", false
}

func (t httpTransport) fromQueryString(r *http.Request) (*graphql.RawParams, *requestError) {
	if len(r.URL.RawQuery) > t.limits.MaxQueryBytes*4 {
		return nil, &requestError{http.StatusRequestURITooLong, "QUERY_TOO_LARGE", "the query string is too long; send the operation with POST"}
	}
	q := r.URL.Query()
	p := &graphql.RawParams{Query: q.Get("query"), OperationName: q.Get("operationName")}
	if p.Query == "" && q.Get("extensions") == "" {
		return nil, badRequest("MISSING_QUERY", "the query parameter is missing")
	}
	for _, f := range []struct {
		name string
		into *map[string]any
	}{{"variables", &p.Variables}, {"extensions", &p.Extensions}} {
		s := q.Get(f.name)
		if s == "" {
			continue
		}
		depth, _ := jsonShape([]byte(s))
		if rerr := t.checkDepth(depth, f.name); rerr != nil {
			return nil, rerr
		}
		v, rerr := t.decodeJSON([]byte(s), f.name)
		if rerr != nil {
			return nil, rerr
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, badRequest("INVALID_PARAMETER", "%s must be a JSON object", f.name)
		}
		*f.into = m
	}
	return p, nil
}

// fromBody reads and decodes a POST body. release returns the body's share
// of the in-flight byte budget.
func (t httpTransport) fromBody(w http.ResponseWriter, r *http.Request) (*graphql.RawParams, func(), *requestError) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil, nil, &requestError{http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "the body needs Content-Type: application/json"}
	}
	if ct != mediaJSON && !plainJSONType(ct) {
		return nil, nil, &requestError{http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "the body must be application/json in UTF-8"}
	}
	body, release, rerr := t.readBody(w, r)
	if rerr != nil {
		return nil, release, rerr
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, release, badRequest("MISSING_BODY", "the request body is empty; send {\"query\": ...}")
	}
	if user, ok := auth.UserFrom(r.Context()); ok {
		if rerr := t.gate.spend(r.Context(), user.ID, len(body)>>10); rerr != nil {
			return nil, release, rerr
		}
	}
	// The decoded body (maps, slices, interfaces) outweighs its text: its
	// share of the in-flight budget is reserved too, before decoding.
	depth, values := jsonShape(body)
	decoded := values * decodedBytesPerValue
	if decoded > t.limits.MaxInFlightBodyBytes-int64(len(body)) {
		return nil, release, tooLarge(t.limits.MaxBodyBytes)
	}
	more, rerr := t.gate.reserveBytes(r.Context(), decoded)
	if rerr != nil {
		return nil, release, rerr
	}
	release = both(release, more)
	if rerr := t.checkDepth(depth, "the body"); rerr != nil {
		return nil, release, rerr
	}
	obj, ok := decodeObject(body)
	if !ok {
		v, rerr := t.decodeJSON(body, "the body")
		if rerr != nil {
			return nil, release, rerr
		}
		if obj, ok = v.(map[string]any); !ok {
			if _, batch := v.([]any); batch {
				return nil, release, badRequest("BATCH_NOT_SUPPORTED", "batched requests are not supported: send one operation per request")
			}
			return nil, release, badRequest("INVALID_BODY", "the body must be a JSON object {\"query\": ...}")
		}
	}
	p := &graphql.RawParams{}
	for k, val := range obj {
		switch k {
		case "query":
			s, ok := val.(string)
			if !ok && val != nil {
				return nil, release, badRequest("INVALID_PARAMETER", "query must be a string")
			}
			p.Query = s
		case "operationName":
			s, ok := val.(string)
			if !ok && val != nil {
				return nil, release, badRequest("INVALID_PARAMETER", "operationName must be a string")
			}
			p.OperationName = s
		case "variables", "extensions":
			m, ok := val.(map[string]any)
			if !ok && val != nil {
				return nil, release, badRequest("INVALID_PARAMETER", "%s must be a JSON object", k)
			}
			if k == "variables" {
				p.Variables = m
			} else {
				p.Extensions = m
			}
		}
	}
	if _, has := obj["query"]; !has && p.Extensions["persistedQuery"] == nil {
		return nil, release, badRequest("MISSING_QUERY", "the body has no query")
	}
	return p, release, nil
}

// plainJSONType reports whether a Content-Type is application/json, in
// UTF-8 if it names a charset.
func plainJSONType(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	return err == nil && mt == mediaJSON && (params["charset"] == "" || strings.EqualFold(params["charset"], "utf-8"))
}

// readBody reads a request body within MaxBodyBytes, BodyReadTimeout and
// the in-flight byte budget. The error never carries the body.
func (t httpTransport) readBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), *requestError) {
	if r.ContentLength > t.limits.MaxBodyBytes {
		return nil, nil, tooLarge(t.limits.MaxBodyBytes)
	}
	// What a body may hold is reserved before it is read: its length when
	// the client says it, else the largest body allowed.
	want := r.ContentLength
	if want < 0 {
		want = t.limits.MaxBodyBytes
	}
	release, rerr := t.gate.reserveBytes(r.Context(), want)
	if rerr != nil {
		return nil, nil, rerr
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(t.limits.BodyReadTimeout))
	size := want
	if size > 64<<10 {
		size = 64 << 10 // grown as the bytes arrive
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, t.limits.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, release, tooLarge(t.limits.MaxBodyBytes)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The connection is closed after the answer: the server must not
		// wait for the rest of the body to reuse it.
		w.Header().Set("Connection", "close")
		return nil, release, &requestError{http.StatusRequestTimeout, "BODY_TIMEOUT",
			fmt.Sprintf("the request body was not received within %s", t.limits.BodyReadTimeout)}
	case err != nil:
		w.Header().Set("Connection", "close")
		return nil, release, badRequest("BODY_UNREADABLE", "the request body could not be read")
	}
	rc.SetReadDeadline(time.Time{})
	return buf.Bytes(), release, nil
}

func tooLarge(max int64) *requestError {
	return &requestError{http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE",
		fmt.Sprintf("the request body is larger than %d bytes", max)}
}

// checkDepth refuses a JSON value, named by what, whose nesting (as
// jsonShape measures it, before decoding) is deeper than MaxJSONDepth.
func (t httpTransport) checkDepth(depth int, what string) *requestError {
	if depth > t.limits.MaxJSONDepth {
		return badRequest("JSON_TOO_DEEP", "%s nests deeper than %d levels", what, t.limits.MaxJSONDepth)
	}
	return nil
}

// decodeJSON decodes one JSON value (numbers kept exact), refusing
// anything after it. Callers check its depth first (checkDepth). what
// names the value in messages, which never quote the input.
func (t httpTransport) decodeJSON(b []byte, what string) (any, *requestError) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest("INVALID_JSON", "%s is not valid JSON: %s", what, jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("INVALID_JSON", "%s is not valid JSON: more data after the value", what)
	}
	return v, nil
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "it ends too early"
	}
	return "it cannot be decoded"
}

// decodedBytesPerValue is about what one JSON value costs once decoded
// into Go values (an interface, a map entry or slice element, a string or
// json.Number header): a body of many small values costs ~20 times its text.
const decodedBytesPerValue = 64

// jsonShape returns the deepest nesting of arrays and objects in b, and
// about how many values it holds (commas, colons and openings, outside
// strings, plus one).
func jsonShape(b []byte) (deepest int, values int64) {
	depth := 0
	inString, escaped := false, false
	values = 1
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			values++
			depth++
			if depth > deepest {
				deepest = depth
			}
		case ']', '}':
			depth--
		case ',', ':':
			values++
		}
	}
	return deepest, values
}

// both returns a function that calls a and b.
func both(a, b func()) func() {
	return func() {
		b()
		if a != nil {
			a()
		}
	}
}

// writeRequestError answers a client mistake found before the GraphQL layer.
func writeRequestError(w http.ResponseWriter, media string, e *requestError) {
	err := &gqlerror.Error{Message: e.message, Extensions: map[string]any{"code": string(models.ErrBadUserInput), "reason": e.reason}}
	writeResponse(w, media, e.status, &graphql.Response{Errors: gqlerror.List{err}}, true)
}

// dataOnly returns the JSON of a response that has data and nothing else,
// written as json.Marshal would, without its second pass over the data
// (which the executor wrote as compact JSON already); nil when the response
// has more, or data that json.Marshal would escape (<, >, & and the line
// separators U+2028 and U+2029, whose UTF-8 begins with 0xE2).
func dataOnly(resp *graphql.Response) []byte {
	if resp.Data == nil || len(resp.Errors) > 0 || resp.Label != "" || resp.Path != nil || resp.HasNext != nil || len(resp.Extensions) > 0 {
		return nil
	}
	for _, c := range resp.Data {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return nil
		}
	}
	b := make([]byte, 0, len(resp.Data)+len(`{"data":}`))
	b = append(b, `{"data":`...)
	b = append(b, resp.Data...)
	return append(b, '}')
}

// writeResponse writes a GraphQL response; noData leaves out the data entry,
// as the specification asks of a request that did not run.
func writeResponse(w http.ResponseWriter, media string, status int, resp *graphql.Response, noData bool) {
	w.Header().Set("Content-Type", media+"; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b []byte
	var err error
	if b = dataOnly(resp); b != nil && !noData {
		w.WriteHeader(status)
		w.Write(b)
		return
	}
	if noData || resp.Data == nil {
		b, err = json.Marshal(struct {
			Errors     gqlerror.List  `json:"errors,omitempty"`
			Extensions map[string]any `json:"extensions,omitempty"`
		}{resp.Errors, resp.Extensions})
	} else {
		b, err = json.Marshal(resp)
	}
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL"}}]}`)
	}
	w.WriteHeader(status)
	w.Write(b)
}
