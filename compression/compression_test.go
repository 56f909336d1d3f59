package compression

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct{ accept, want string }{
		{"", Identity},
		{"gzip, deflate, br, zstd", Brotli},
		{"gzip", Gzip},
		{"GZIP;q=0.5", Gzip},
		{"br;q=0, gzip", Gzip},
		{"br;q=0.0, gzip;q=0", Identity},
		{"identity", Identity},
		{"*", Identity},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", tc.accept)
		if got := Negotiate(r); got != tc.want {
			t.Errorf("Accept-Encoding %q: %q, want %q", tc.accept, got, tc.want)
		}
	}
}

// decode undoes a response's Content-Encoding.
func decode(t *testing.T, enc string, body []byte) []byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	switch enc {
	case Brotli:
		r = brotli.NewReader(r)
	case Gzip:
		z, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = z
	case Identity:
	default:
		t.Fatalf("unknown encoding %q", enc)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Text responses are compressed as the client asks; small ones, binary
// ones, encoded ones, HEAD requests and bodiless statuses pass as they are.
func TestHandler(t *testing.T) {
	page := strings.Repeat("<p>a page of the web host</p>\n", 200)
	for _, tc := range []struct {
		name, accept, method string
		handler              http.HandlerFunc
		want                 string // the Content-Encoding
		body                 string
	}{
		{"html as brotli", "gzip, br", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			io.WriteString(w, page)
		}, Brotli, page},
		{"json as gzip", "gzip", "POST", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			for i := 0; i < 100; i++ {
				io.WriteString(w, `{"errors":[{"message":"no"}]}`)
			}
		}, Gzip, strings.Repeat(`{"errors":[{"message":"no"}]}`, 100)},
		{"a type sniffed from the body", "br", "GET", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, page)
		}, Brotli, page},
		{"a client that takes none", "", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, page)
		}, Identity, page},
		{"below the minimum size", "br", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"ok"}`)
		}, Identity, `{"status":"ok"}`},
		{"a binary type", "br", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			io.WriteString(w, page)
		}, Identity, page},
		{"encoded already", "br", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/css")
			w.Header().Set("Content-Encoding", Gzip)
			io.WriteString(w, page)
		}, Gzip, page},
		{"not modified", "br", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/css")
			w.WriteHeader(http.StatusNotModified)
		}, Identity, ""},
		{"written in small pieces", "br", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for _, line := range strings.SplitAfter(page, "\n") {
				io.WriteString(w, line)
			}
		}, Brotli, page},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/", nil)
			if tc.accept != "" {
				r.Header.Set("Accept-Encoding", tc.accept)
			}
			w := httptest.NewRecorder()
			Handler(tc.handler).ServeHTTP(w, r)
			got := w.Header().Get("Content-Encoding")
			if got != tc.want {
				t.Fatalf("Content-Encoding %q, want %q", got, tc.want)
			}
			if tc.want != Identity && tc.name != "encoded already" {
				if w.Header().Get("Content-Length") != "" {
					t.Fatal("a compressed body keeps the plain body's Content-Length")
				}
				if w.Body.Len() >= len(tc.body)/2 {
					t.Fatalf("compressed to %d of %d bytes", w.Body.Len(), len(tc.body))
				}
				if body := decode(t, tc.want, w.Body.Bytes()); string(body) != tc.body {
					t.Fatalf("decoded body differs: %d bytes, want %d", len(body), len(tc.body))
				}
			} else if w.Body.String() != tc.body {
				t.Fatalf("body %q", w.Body.String())
			}
			if tc.accept != "" && !strings.Contains(strings.Join(w.Header().Values("Vary"), ","), "Accept-Encoding") {
				t.Fatal("no Vary: Accept-Encoding")
			}
		})
	}
}

// A flushed response keeps streaming: what was written before a Flush
// reaches the client, compressed, before the handler ends.
func TestHandlerFlush(t *testing.T) {
	seen := make(chan []byte, 1)
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-seen
		io.WriteString(w, "data: two\n\n")
	})))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept-Encoding", "br")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != Brotli {
		t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	br := brotli.NewReader(resp.Body)
	first := make([]byte, len("data: one\n\n"))
	if _, err := io.ReadFull(br, first); err != nil || string(first) != "data: one\n\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	seen <- first
	rest, _ := io.ReadAll(br)
	if string(rest) != "data: two\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestPrecompress(t *testing.T) {
	body := []byte(strings.Repeat("function f() { return 1; }\n", 300))
	p := Precompress(body)
	for _, enc := range []string{Brotli, Gzip, Identity} {
		r := httptest.NewRequest("GET", "/", nil)
		if enc != Identity {
			r.Header.Set("Accept-Encoding", enc)
		}
		got, e := p.Pick(r, body)
		if e != enc || !bytes.Equal(decode(t, e, got), body) {
			t.Fatalf("%q: picked %q", enc, e)
		}
	}
	if len(p.Brotli) >= len(p.Gzip) {
		t.Fatalf("brotli %d bytes, gzip %d", len(p.Brotli), len(p.Gzip))
	}
}

func TestCompressible(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                   true,
		"application/json; charset=utf-8":    true,
		"Text/HTML; charset=UTF-8":           true,
		" application/graphql-response+json": true,
		"text/css":                           true,
		"image/svg+xml":                      true,
		"application/openmetrics-text; version=1.0.0; charset=utf-8": true,
		"text/":                    false,
		"":                         false,
		"image/png":                false,
		"application/octet-stream": false,
		"application/jsonx":        false,
		"font/woff2":               false,
	} {
		if got := Compressible(ct); got != want {
			t.Errorf("Compressible(%q) = %v, want %v", ct, got, want)
		}
	}
}

func BenchmarkCompressible(b *testing.B) {
	for b.Loop() {
		Compressible("application/graphql-response+json; charset=utf-8")
	}
}
