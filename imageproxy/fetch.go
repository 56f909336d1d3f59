package imageproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"pluginhost/egress"
	"strings"
	"sync"
	"time"

	"golang.org/x/image/webp"
	"golang.org/x/sync/semaphore"
)

// Defaults of the Fetcher fields. The first four are the spec's "Limits / UI
// image proxy" table.
const (
	// DefaultMaxBytes: "Response body: 512 KiB".
	DefaultMaxBytes int64 = 512 << 10
	// DefaultMaxDimension: "Width and height: 4096 px each".
	DefaultMaxDimension = 4096
	// DefaultMaxFrames: "Frames: 1 for static; at most 128 for animated".
	DefaultMaxFrames = 128
	// DefaultMaxPixels: "Total pixels (width x height x frames): 16,000,000".
	DefaultMaxPixels int64 = 16_000_000

	// DefaultMaxDecodeMemory bounds the buffers of all first-frame decodes in
	// flight together: 16 MiB holds one 6-megapixel JPEG (9 MB of 4:2:0
	// YCbCr) or a 2048x2048 palette PNG, or many small images; a heavier
	// decode runs alone. With it, 64 concurrent requests for 512 KiB
	// 6-megapixel JPEGs through a default Proxy peak at about 53 MiB of heap,
	// the garbage collector's headroom included; without it, at 135 to
	// 155 MiB (BenchmarkConcurrentFetchMemory). With 16 fetches in flight,
	// a 24 MiB bound peaked at 66 MiB and 32 MiB at 76 MiB.
	DefaultMaxDecodeMemory int64 = 16 << 20

	DefaultConnectTimeout = 5 * time.Second  // TCP connect, per address
	DefaultTLSTimeout     = 5 * time.Second  // TLS handshake
	DefaultHeaderTimeout  = 5 * time.Second  // from request sent to response headers
	DefaultTotalTimeout   = 10 * time.Second // the whole fetch: resolve, connect, headers, body, decode
)

// maxURLLength bounds the URL before it is parsed.
const maxURLLength = 2048

// Resolver resolves host names; *net.Resolver implements it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Fetcher fetches one image from a public HTTPS URL and verifies it.
//
// A zero field means its default (the Default constants), so the zero
// Fetcher is ready to use; New returns one with the defaults spelled out.
// Fields must not change after the first call to Fetch. A Fetcher is safe
// for concurrent use.
type Fetcher struct {
	MaxBytes     int64 // body limit, DefaultMaxBytes
	MaxDimension int   // width and height limit, DefaultMaxDimension
	MaxFrames    int   // frame limit, DefaultMaxFrames
	MaxPixels    int64 // width x height x frames limit, DefaultMaxPixels

	// MaxDecodeMemory bounds, in bytes, the estimated buffers of the
	// first-frame decodes running at the same time (DefaultMaxDecodeMemory).
	// A decode whose estimate exceeds it waits until it can run alone.
	MaxDecodeMemory int64

	ConnectTimeout time.Duration // DefaultConnectTimeout
	TLSTimeout     time.Duration // DefaultTLSTimeout
	HeaderTimeout  time.Duration // DefaultHeaderTimeout
	TotalTimeout   time.Duration // DefaultTotalTimeout

	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver

	// RootCAs verifies the upstream's certificate; nil means the system roots.
	RootCAs *x509.CertPool

	// Policy says which addresses may be reached; nil means public unicast
	// only (the operator may open ranges: --egress-allow-private).
	Policy *egress.Policy

	// Connect replaces the last step of a dial, for tests. It receives the
	// dialer whose Control makes the authoritative address check, the network
	// ("tcp4" or "tcp6") and the address the resolver step chose. nil, which
	// production must keep, means d.DialContext(ctx, network, addr.String()).
	// A test sets it to serve public-looking addresses from loopback
	// listeners; it must run d.Control on addr before it connects anywhere.
	Connect func(ctx context.Context, d *net.Dialer, network string, addr netip.AddrPort) (net.Conn, error)

	once      sync.Once
	client    *http.Client
	dialer    *egress.Dialer
	decodeMem *semaphore.Weighted
}

// New returns a Fetcher with every limit at its default.
func New() *Fetcher {
	return &Fetcher{
		MaxBytes:        DefaultMaxBytes,
		MaxDimension:    DefaultMaxDimension,
		MaxFrames:       DefaultMaxFrames,
		MaxPixels:       DefaultMaxPixels,
		MaxDecodeMemory: DefaultMaxDecodeMemory,
		ConnectTimeout:  DefaultConnectTimeout,
		TLSTimeout:      DefaultTLSTimeout,
		HeaderTimeout:   DefaultHeaderTimeout,
		TotalTimeout:    DefaultTotalTimeout,
	}
}

// Image is an image that passed every rule: the bytes exactly as received.
type Image struct {
	Bytes         []byte
	ContentType   string // the verified format's type, such as "image/png"
	Format        string // "png", "jpeg", "gif" or "webp"
	Width, Height int
	Frames        int
}

// Fetch fetches rawURL and verifies the image. A URL or image that breaks a
// rule of the proxy is refused with a *Rejection. Any other error means ctx
// was canceled.
//
// The steps below run in this order, and each refuses as early as it can:
//  1. the URL: absolute https, port 443, no userinfo, a valid host;
//  2. the addresses: an IP literal or every address the name resolves to
//     must be public unicast (the authoritative check is again at dial time);
//  3. the request: no proxy, no redirects, bounded connect, TLS and header
//     waits;
//  4. the response: status 200, an allowed Content-Type, a declared length
//     within the limit;
//  5. the body: read up to the limit, never truncated;
//  6. the format: magic bytes agree with the Content-Type;
//  7. the headers of the image: size, frames and pixels within the limits,
//     before any pixel buffer exists;
//  8. a full decode of the first frame, under the decode memory bound.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Image, error) {
	f.once.Do(f.init)
	parent := ctx

	// 1. The URL.
	t, rej := parseTarget(rawURL)
	if rej != nil {
		return nil, rej
	}
	ctx, cancel := context.WithTimeout(ctx, or(f.TotalTimeout, DefaultTotalTimeout))
	defer cancel()
	fail := func(err error) (*Image, error) { return nil, t.failure(parent, err) }

	// 2. The addresses, early: a denied address fails here without a dial.
	if err := f.dialer.CheckHost(ctx, t.host); err != nil {
		return fail(asRejection(err))
	}

	// 3. The request.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url.String(), nil)
	if err != nil {
		return fail(reject(ReasonInvalidURL, "%v", unwrapURLError(err)))
	}
	req.Header.Set("Accept", "image/png, image/jpeg, image/gif, image/webp")
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "pluginhost-imageproxy/1")
	resp, err := f.client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()

	// 4. The response headers.
	switch {
	case 300 <= resp.StatusCode && resp.StatusCode < 400:
		return fail(reject(ReasonRedirect, "status %d; redirects are not followed", resp.StatusCode))
	case resp.StatusCode != http.StatusOK:
		return fail(reject(ReasonUpstreamStatus, "status %d", resp.StatusCode))
	}
	declared, rej := declaredFormat(resp.Header)
	if rej != nil {
		return fail(rej)
	}
	maxBytes := or(f.MaxBytes, DefaultMaxBytes)
	if resp.ContentLength > maxBytes {
		return fail(reject(ReasonTooLarge, "Content-Length %d is over %d bytes", resp.ContentLength, maxBytes))
	}

	// 5. The body.
	body, err := readBody(resp.Body, resp.ContentLength, maxBytes)
	if err == nil {
		err = ctx.Err() // a body cut off by the deadline can read as a clean end
	}
	if err != nil {
		return fail(err)
	}

	// 6. The format: Content-Type and magic bytes agree.
	actual := sniff(body)
	switch {
	case actual == "":
		return fail(reject(ReasonUnsupportedFormat, "served as %s but the body is not PNG, JPEG, GIF or WebP", contentTypes[declared]))
	case actual != declared:
		return fail(reject(ReasonFormatMismatch, "served as %s but the body is %s", contentTypes[declared], actual))
	}

	// 7. The headers of the image, against the limits. What the headers
	// declare is refused even when a later part of the file is broken.
	in, inspectErr := inspect(body)
	maxDim := or(f.MaxDimension, DefaultMaxDimension)
	if in.width > maxDim || in.height > maxDim {
		return fail(reject(ReasonDimensions, "%dx%d is over %d px", in.width, in.height, maxDim))
	}
	if maxFrames := or(f.MaxFrames, DefaultMaxFrames); in.frames > maxFrames {
		return fail(reject(ReasonFrames, "%d frames is over %d", in.frames, maxFrames))
	}
	pixels := int64(in.width) * int64(in.height) * int64(in.frames)
	if maxPixels := or(f.MaxPixels, DefaultMaxPixels); pixels > maxPixels {
		return fail(reject(ReasonPixels, "%dx%dx%d frames = %d pixels is over %d", in.width, in.height, in.frames, pixels, maxPixels))
	}
	if inspectErr != nil {
		return fail(inspectErr)
	}

	// 8. The first frame decodes.
	if err := f.decodeFirstFrame(ctx, body, &in); err != nil {
		return fail(err)
	}
	return &Image{
		Bytes:       body,
		ContentType: contentTypes[in.format],
		Format:      in.format,
		Width:       in.width,
		Height:      in.height,
		Frames:      in.frames,
	}, nil
}

func (f *Fetcher) init() {
	f.decodeMem = semaphore.NewWeighted(or(f.MaxDecodeMemory, DefaultMaxDecodeMemory))
	f.dialer = &egress.Dialer{Policy: f.Policy, Resolver: f.Resolver, ConnectTimeout: or(f.ConnectTimeout, DefaultConnectTimeout), Connect: f.Connect}
	// HTTP/1.1 only: with its own dialer and TLS config, a Transport does
	// not attempt HTTP/2, which keeps one request per connection.
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil, // never a proxy from the environment
			DialContext:            f.dial,
			TLSClientConfig:        &tls.Config{RootCAs: f.RootCAs, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    or(f.TLSTimeout, DefaultTLSTimeout),
			ResponseHeaderTimeout:  or(f.HeaderTimeout, DefaultHeaderTimeout),
			MaxResponseHeaderBytes: 64 << 10,
			DisableCompression:     true,
			MaxIdleConns:           64,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is refused by Fetch
		},
	}
}

// target is a URL that passed the URL rules.
type target struct {
	url  *url.URL   // what is requested: scheme, normalised host, path, query
	host string     // the normalised host name, or the IP literal
	ip   netip.Addr // the IP literal, if the host is one
}

// parseTarget applies the URL rules of egress.ParseURL, and the proxy's own:
// port 443 only.
func parseTarget(raw string) (*target, *Rejection) {
	t, e := egress.ParseURL(raw)
	if e != nil {
		return nil, &Rejection{Reason: e.Reason, Detail: e.Detail, Host: e.Host}
	}
	if t.Port != 443 {
		return nil, &Rejection{Reason: ReasonInvalidURL, Detail: fmt.Sprintf("port %d; only 443", t.Port), Host: t.Host}
	}
	return &target{url: t.URL, host: t.Host, ip: t.IP}, nil
}

// failure gives the error Fetch returns for err: when the caller's context
// was canceled, that context's error, whatever came of the fetch (the
// answer can arrive as the caller leaves; nobody reads a rejection then);
// otherwise a *Rejection (with the host).
func (t *target) failure(parent context.Context, err error) error {
	var rej *Rejection
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		return fmt.Errorf("imageproxy: fetch from %s: %w", t.host, parent.Err())
	case errors.As(err, &rej):
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		rej = reject(ReasonTimeout, "%v", unwrapURLError(err))
	default:
		rej = reject(ReasonUpstreamStatus, "no answer: %v", unwrapURLError(err))
	}
	rej.Host = t.host
	return rej
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unwrapURLError drops the *url.Error wrapper, whose text holds the whole URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// dial is the Transport's DialContext: port 443 only, and the egress
// dialer, whose Control refuses a denied address on the IP actually dialled.
func (f *Fetcher) dial(ctx context.Context, network, address string) (net.Conn, error) {
	f.once.Do(f.init)
	if _, port, err := net.SplitHostPort(address); err != nil || port != "443" {
		return nil, reject(ReasonInvalidURL, "dial %q: only port 443", address)
	}
	conn, err := f.dialer.DialContext(ctx, network, address)
	return conn, asRejection(err)
}

// declaredFormat returns the format of the one Content-Type of the response,
// refusing a missing, repeated or unsupported type and an encoded body.
func declaredFormat(h http.Header) (string, *Rejection) {
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return "", reject(ReasonUnsupportedFormat, "Content-Encoding %q", ce)
	}
	types := h.Values("Content-Type")
	if len(types) != 1 {
		return "", reject(ReasonUnsupportedFormat, "%d Content-Type headers", len(types))
	}
	mt, _, err := mime.ParseMediaType(types[0])
	if err != nil {
		return "", reject(ReasonUnsupportedFormat, "Content-Type %q: %v", types[0], err)
	}
	f := formatOfMediaType(mt)
	if f == "" {
		return "", reject(ReasonUnsupportedFormat, "Content-Type %s is not PNG, JPEG, GIF or WebP", mt)
	}
	return f, nil
}

// readBody reads the whole body, refusing it with too_large as soon as it
// holds more than max bytes. A declared length sizes the buffer up front.
func readBody(r io.Reader, declared, max int64) ([]byte, error) {
	size := int64(32 << 10)
	if declared >= 0 {
		size = declared + 1 // one more, to see the end without growing
	}
	buf := make([]byte, 0, min(size, max+1))
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), max+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, reject(ReasonTooLarge, "body is over %d bytes", max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// decodeFirstFrame decodes the first frame fully, which proves that the file
// is sound as far as a renderer will read it, and that it is the size its
// headers declare. The decode waits for its estimated memory under
// MaxDecodeMemory (at most all of it), so concurrent decodes cannot together
// allocate more than the bound, apart from one oversized decode running alone.
func (f *Fetcher) decodeFirstFrame(ctx context.Context, body []byte, in *info) error {
	weight := min(max(in.decodeBytes, 1), or(f.MaxDecodeMemory, DefaultMaxDecodeMemory))
	if err := f.decodeMem.Acquire(ctx, weight); err != nil {
		return err
	}
	defer f.decodeMem.Release(weight)
	return decode(body, in)
}

// decode decodes the first frame with the standard decoders, and turns a
// decoder's panic into a rejection rather than a crash of the server.
func decode(body []byte, in *info) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = corrupt("%s decoder panicked: %v", in.format, p)
		}
	}()
	var m image.Image
	switch in.format {
	case formatPNG:
		m, err = png.Decode(bytes.NewReader(body))
	case formatJPEG:
		m, err = jpeg.Decode(bytes.NewReader(body))
	case formatGIF:
		m, err = gif.Decode(bytes.NewReader(body))
	case formatWebP:
		if in.webpFrame != nil {
			body = webpFrameFile(in)
		}
		m, err = webp.Decode(bytes.NewReader(body))
	}
	if err != nil {
		return corrupt("%s: %v", in.format, err)
	}
	if b := m.Bounds(); b.Dx() != in.firstWidth || b.Dy() != in.firstHeight {
		return corrupt("%s: decoded %dx%d, headers say %dx%d", in.format, b.Dx(), b.Dy(), in.firstWidth, in.firstHeight)
	}
	return nil
}

// or returns v, or def when v is zero or negative.
func or[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
