// Package compression compresses the server's text responses: brotli for a
// client that takes it, else gzip, else none. Handler compresses responses
// as they are written (HTML pages, GraphQL answers, the metrics, REST
// errors); Precompress compresses a static file once, at its best, so that
// it is served compressed without work per request.
package compression

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
)

// Encodings a response may have.
const (
	Brotli   = "br"
	Gzip     = "gzip"
	Identity = ""
)

// MinSize is the smallest body Handler compresses: below it, the headers
// and framing of a compressed stream cost more than they save.
const MinSize = 512

// Levels of the compressors: Handler's work on every response, so a fast
// level; Precompress's once per file, so the best.
const (
	brotliLevel       = 5
	gzipLevel         = 6
	staticBrotliLevel = 9 // of 11: within 4% of the best, in a twentieth of the time
)

// Negotiate returns the encoding a request takes: brotli when its
// Accept-Encoding lists br, else gzip when it lists gzip, else Identity. An
// encoding with q=0 is refused.
func Negotiate(r *http.Request) string {
	br, gz := false, false
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if q := strings.TrimSpace(params); strings.HasPrefix(q, "q=") {
			if v, err := strconv.ParseFloat(strings.TrimPrefix(q, "q="), 64); err == nil && v == 0 {
				continue
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			br = true
		case "gzip":
			gz = true
		}
	}
	switch {
	case br:
		return Brotli
	case gz:
		return Gzip
	}
	return Identity
}

// Precompressed is a static body with its brotli and gzip forms.
type Precompressed struct {
	Brotli, Gzip []byte
}

// Precompress compresses body at the best levels.
func Precompress(body []byte) Precompressed {
	var b, g bytes.Buffer
	bw := brotli.NewWriterLevel(&b, staticBrotliLevel)
	bw.Write(body)
	bw.Close()
	gw, _ := gzip.NewWriterLevel(&g, gzip.BestCompression)
	gw.Write(body)
	gw.Close()
	return Precompressed{Brotli: b.Bytes(), Gzip: g.Bytes()}
}

// Pick returns the form of a precompressed body the request takes, with its
// encoding; plain is the uncompressed body.
func (p Precompressed) Pick(r *http.Request, plain []byte) ([]byte, string) {
	switch Negotiate(r) {
	case Brotli:
		return p.Brotli, Brotli
	case Gzip:
		return p.Gzip, Gzip
	}
	return plain, Identity
}

// compressibleTypes are the media types other than text/* that are text.
var compressibleTypes = []string{"application/json", "application/javascript", "application/graphql-response+json",
	"application/problem+json", "image/svg+xml", "application/openmetrics-text"}

// Compressible reports whether a content type is text worth compressing. It
// looks only at the media type, before any parameter, without regard to
// case (every response asks, so it does not parse the parameters).
func Compressible(contentType string) bool {
	t, _, _ := strings.Cut(contentType, ";")
	t = strings.TrimSpace(t)
	if len(t) > len("text/") && strings.EqualFold(t[:len("text/")], "text/") {
		return true
	}
	for _, c := range compressibleTypes {
		if strings.EqualFold(t, c) {
			return true
		}
	}
	return false
}

// Handler compresses next's text responses for clients that take it. A
// response is compressed when its Content-Type is text (Compressible), it
// has no Content-Encoding of its own and its body reaches MinSize; a
// websocket upgrade, a HEAD request and a response without a body pass as
// they are. Every response says it varies by Accept-Encoding.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := Negotiate(r)
		if enc == Identity || r.Method == http.MethodHead || strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			next.ServeHTTP(w, r)
			return
		}
		cw := &writer{ResponseWriter: w, encoding: enc}
		defer cw.close()
		next.ServeHTTP(cw, r)
	})
}

// writer holds the start of a body until it knows whether to compress it.
type writer struct {
	http.ResponseWriter
	encoding string
	status   int
	held     []byte
	decided  bool
	hijacked bool
	out      io.WriteCloser // the compressor, when compressing
}

var (
	gzipPool   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzipLevel); return w }}
	brotliPool = sync.Pool{New: func() any { return brotli.NewWriterLevel(io.Discard, brotliLevel) }}
)

func (w *writer) WriteHeader(status int) {
	if w.status != 0 || w.decided {
		return
	}
	w.status = status
	h := w.Header()
	h.Add("Vary", "Accept-Encoding")
	// A response that cannot have a body, or is not text, or is encoded
	// already, goes as it is.
	if status < 200 || status == http.StatusNoContent || status == http.StatusNotModified ||
		h.Get("Content-Encoding") != "" || !Compressible(h.Get("Content-Type")) {
		w.decide(false)
	}
}

func (w *writer) Write(b []byte) (int, error) {
	if w.status == 0 {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	if !w.decided {
		w.held = append(w.held, b...)
		if len(w.held) >= MinSize {
			w.decide(true)
		}
		return len(b), nil
	}
	if w.out != nil {
		return w.out.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// decide sends the headers, compressing or not, and what was held.
func (w *writer) decide(compress bool) {
	w.decided = true
	if compress {
		h := w.Header()
		h.Del("Content-Length")
		h.Set("Content-Encoding", w.encoding)
		if w.encoding == Brotli {
			bw := brotliPool.Get().(*brotli.Writer)
			bw.Reset(w.ResponseWriter)
			w.out = bw
		} else {
			gw := gzipPool.Get().(*gzip.Writer)
			gw.Reset(w.ResponseWriter)
			w.out = gw
		}
	}
	w.ResponseWriter.WriteHeader(w.status)
	if len(w.held) > 0 {
		if w.out != nil {
			w.out.Write(w.held)
		} else {
			w.ResponseWriter.Write(w.held)
		}
	}
	w.held = nil
}

// close ends the response: what is still held goes uncompressed (it is
// smaller than MinSize), a compressor is flushed and goes back to its pool.
func (w *writer) close() {
	if w.hijacked {
		return
	}
	if !w.decided {
		if w.status == 0 {
			return // nothing was written: the server answers 200 with no body
		}
		w.decide(false)
	}
	if w.out != nil {
		w.out.Close()
		switch c := w.out.(type) {
		case *brotli.Writer:
			brotliPool.Put(c)
		case *gzip.Writer:
			gzipPool.Put(c)
		}
		w.out = nil
	}
}

// Flush sends what is written so far: a held start is sent compressed, so
// that a streamed response keeps streaming.
func (w *writer) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.decided {
		w.decide(Compressible(w.Header().Get("Content-Type")) && w.Header().Get("Content-Encoding") == "")
	}
	if f, ok := w.out.(interface{ Flush() error }); ok {
		f.Flush()
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over (a websocket upgrade that got here).
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("compression: the response cannot be hijacked")
	}
	w.hijacked = true
	return h.Hijack()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
