package imageproxy

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFetchRealImages fetches real files of the four formats, made by
// other encoders (Go's test images, PngSuite, libwebp, ImageMagick,
// apngasm): each is accepted as served, with its size and frames.
func TestFetchRealImages(t *testing.T) {
	tests := []struct {
		file, contentType   string
		width, height       int
		frames              int
		wantFormat, comment string
	}{
		{"basn0g01.png", "image/png", 32, 32, 1, formatPNG, "1-bit gray"},
		{"basn0g16.png", "image/png", 32, 32, 1, formatPNG, "16-bit gray"},
		{"basn2c08.png", "image/png", 32, 32, 1, formatPNG, "RGB"},
		{"basn3p08.png", "image/png", 32, 32, 1, formatPNG, "palette"},
		{"basn3p08-trns.png", "image/png", 32, 32, 1, formatPNG, "palette with tRNS"},
		{"basn4a16.png", "image/png", 32, 32, 1, formatPNG, "16-bit gray and alpha"},
		{"basn6a08.png", "image/png", 32, 32, 1, formatPNG, "RGBA"},
		{"basn6a16.png", "image/png", 32, 32, 1, formatPNG, "16-bit RGBA"},
		{"basn3p04-31i.png", "image/png", 31, 31, 1, formatPNG, "interlaced"},
		{"ftp1n3p08.png", "image/png", 32, 32, 1, formatPNG, "transparent palette"},
		{"anim.png", "image/png", 32, 32, 4, formatPNG, "APNG by apngasm"},
		{"video-001.gif", "image/gif", 150, 103, 1, formatGIF, ""},
		{"video-001.interlaced.gif", "image/gif", 150, 103, 1, formatGIF, "interlaced"},
		{"video-005.gray.gif", "image/gif", 150, 103, 1, formatGIF, ""},
		{"triangle-001.gif", "image/gif", 256, 128, 1, formatGIF, ""},
		{"anim.gif", "image/gif", 32, 32, 4, formatGIF, "animated, by ImageMagick"},
		{"video-001.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "baseline"},
		{"video-001.progressive.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "progressive"},
		{"video-001.progressive.truncated.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "progressive, fewer scans but complete"},
		{"video-001.q50.422.progressive.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "4:2:2 progressive"},
		{"video-001.q50.420.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "4:2:0"},
		{"video-001.221212.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "odd sampling"},
		{"video-001.cmyk.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "CMYK"},
		{"video-001.rgb.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "RGB"},
		{"video-005.gray.jpeg", "image/jpeg", 150, 103, 1, formatJPEG, "gray"},
		{"blue-purple-pink.lossy.webp", "image/webp", 150, 100, 1, formatWebP, "VP8"},
		{"video-001.lossy.webp", "image/webp", 150, 103, 1, formatWebP, "VP8"},
		{"blue-purple-pink.lossless.webp", "image/webp", 150, 100, 1, formatWebP, "VP8L"},
		{"tux.lossless.webp", "image/webp", 386, 395, 1, formatWebP, "VP8L"},
		{"gopher-doc.with-alpha.lossless.webp", "image/webp", 75, 100, 1, formatWebP, "VP8L with alpha"},
		{"lossy-alpha.webp", "image/webp", 32, 32, 1, formatWebP, "VP8X, ALPH, VP8 by cwebp"},
		{"anim-lossless.webp", "image/webp", 32, 32, 4, formatWebP, "animated VP8L by img2webp"},
		{"anim-lossy.webp", "image/webp", 32, 32, 4, formatWebP, "animated ALPH+VP8 by img2webp"},
		{"basn6a08.png", "IMAGE/PNG; charset=binary", 32, 32, 1, formatPNG, "type is case-insensitive, parameters ignored"},
	}
	n := newTestNet(t)
	f := n.fetcher(t)
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.comment, func(t *testing.T) {
			body := readTestdata(t, tt.file)
			up := n.serve(t, strings.NewReplacer(".", "-", " ", "-").Replace(tt.file)+".example.com", serveBytes(tt.contentType, body))
			img, err := f.Fetch(context.Background(), up.url("/"+tt.file+"?size=large"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(img.Bytes, body) {
				t.Errorf("bytes differ from the file")
			}
			if img.Format != tt.wantFormat || img.ContentType != "image/"+tt.wantFormat {
				t.Errorf("format %s, content type %s, want %s", img.Format, img.ContentType, tt.wantFormat)
			}
			if img.Width != tt.width || img.Height != tt.height || img.Frames != tt.frames {
				t.Errorf("%dx%d, %d frames; want %dx%d, %d frames", img.Width, img.Height, img.Frames, tt.width, tt.height, tt.frames)
			}
		})
	}
}

// imageCase is one image served with one Content-Type and the expected
// reason of its refusal, or "" when it must be accepted.
type imageCase struct {
	name        string
	contentType string
	body        []byte
	reason      string
}

func runImageCases(t *testing.T, n *testNet, f *Fetcher, tests []imageCase) {
	t.Helper()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := n.serve(t, "case"+strconv.Itoa(i)+".example.com", serveBytes(tt.contentType, tt.body))
			img, err := f.Fetch(context.Background(), up.url("/image"))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !bytes.Equal(img.Bytes, tt.body) {
					t.Fatal("bytes differ")
				}
				return
			}
			if img != nil {
				t.Fatalf("accepted %dx%d, %d frames; want %s", img.Width, img.Height, img.Frames, tt.reason)
			}
			wantReason(t, err, tt.reason)
		})
	}
}

// TestFetchLimitsAtTheEdge accepts each limit's value and refuses one more.
func TestFetchLimitsAtTheEdge(t *testing.T) {
	n := newTestNet(t)
	f := n.fetcher(t)
	small := readTestdata(t, "basn6a08.png")
	runImageCases(t, n, f, []imageCase{
		// Width and height: 4096 px each.
		{"PNG 4096 wide", "image/png", grayPNG(t, 4096, 1), ""},
		{"PNG 4097 wide", "image/png", grayPNG(t, 4097, 1), ReasonDimensions},
		{"PNG 4096 high", "image/png", grayPNG(t, 1, 4096), ""},
		{"PNG 4097 high", "image/png", grayPNG(t, 1, 4097), ReasonDimensions},
		{"GIF screen 4096 wide", "image/gif", gifFrames(t, 4096, 1, 1, 1, 1), ""},
		{"GIF screen 4097 wide", "image/gif", gifFrames(t, 4097, 1, 1, 1, 1), ReasonDimensions},
		{"GIF screen 4097 high", "image/gif", gifFrames(t, 1, 4097, 1, 1, 1), ReasonDimensions},
		{"JPEG 4096 wide", "image/jpeg", encodeJPEG(t, noisyGray(4096, 8)), ""},
		{"JPEG 4097 wide", "image/jpeg", encodeJPEG(t, noisyGray(4097, 8)), ReasonDimensions},
		{"JPEG 4096 high", "image/jpeg", encodeJPEG(t, noisyGray(8, 4096)), ""},
		{"JPEG 4097 high", "image/jpeg", encodeJPEG(t, noisyGray(8, 4097)), ReasonDimensions},
		{"WebP lossless 4096 wide", "image/webp", readTestdata(t, "w4096.lossless.webp"), ""},
		{"WebP lossless 4097 wide", "image/webp", readTestdata(t, "w4097.lossless.webp"), ReasonDimensions},
		{"WebP lossless 4096 high", "image/webp", readTestdata(t, "h4096.lossless.webp"), ""},
		{"WebP lossless 4097 high", "image/webp", readTestdata(t, "h4097.lossless.webp"), ReasonDimensions},
		{"WebP lossy 4096 wide", "image/webp", readTestdata(t, "w4096.lossy.webp"), ""},
		{"WebP lossy 4097 wide", "image/webp", readTestdata(t, "w4097.lossy.webp"), ReasonDimensions},

		// Frames: at most 128 for animated.
		{"GIF 128 frames", "image/gif", gifFrames(t, 2, 2, 1, 1, 128), ""},
		{"GIF 129 frames", "image/gif", gifFrames(t, 2, 2, 1, 1, 129), ReasonFrames},
		{"APNG 128 frames", "image/png", apng(t, 2, 2, 128, 128), ""},
		{"APNG 129 frames", "image/png", apng(t, 2, 2, 129, 129), ReasonFrames},
		{"WebP 128 frames", "image/webp", webpAnimation(t, 128), ""},
		{"WebP 129 frames", "image/webp", webpAnimation(t, 129), ReasonFrames},

		// Total pixels (width x height x frames): 16,000,000.
		{"250x500x128 = 16,000,000 pixels", "image/gif", gifFrames(t, 250, 500, 1, 1, 128), ""},
		{"229x641x109 = 16,000,001 pixels", "image/gif", gifFrames(t, 229, 641, 1, 1, 109), ReasonPixels},

		// Response body: 512 KiB.
		{"PNG of exactly 512 KiB", "image/png", padPNG(t, small, 512<<10), ""},
		{"PNG of 512 KiB + 1 byte", "image/png", padPNG(t, small, 512<<10+1), ReasonTooLarge},
	})
}

// TestFetchBodyLimitWithoutContentLength streams the body chunked, with no
// length declared: the limit holds while reading, and a body over it is
// refused, not truncated.
func TestFetchBodyLimitWithoutContentLength(t *testing.T) {
	n := newTestNet(t)
	f := n.fetcher(t)
	small := readTestdata(t, "basn6a08.png")
	for _, tt := range []struct {
		size   int
		reason string
	}{
		{512 << 10, ""},
		{512<<10 + 1, ReasonTooLarge},
		{4 << 20, ReasonTooLarge},
	} {
		body := padPNG(t, small, tt.size)
		up := n.serve(t, "chunked"+strconv.Itoa(tt.size)+".example.com", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			for p := body; len(p) > 0; {
				k := min(len(p), 10000)
				w.Write(p[:k])
				w.(http.Flusher).Flush()
				p = p[k:]
			}
		})
		img, err := f.Fetch(context.Background(), up.url("/big.png"))
		if tt.reason == "" {
			if err != nil || len(img.Bytes) != tt.size {
				t.Fatalf("%d bytes chunked: %v", tt.size, err)
			}
			continue
		}
		wantReason(t, err, tt.reason)
	}
}

// TestFetchRefusesEarlyOnContentLength: a declared length over the limit is
// refused from the headers, before the body is read.
func TestFetchRefusesEarlyOnContentLength(t *testing.T) {
	n := newTestNet(t)
	sent := make(chan int, 1)
	up := n.serve(t, "huge.example.com", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		total := 0
		chunk := make([]byte, 64<<10)
		for total < 1<<30 {
			k, err := w.Write(chunk)
			total += k
			if err != nil {
				break
			}
		}
		sent <- total
	})
	_, err := n.fetcher(t).Fetch(context.Background(), up.url("/huge.png"))
	rej := wantReason(t, err, ReasonTooLarge)
	if !strings.Contains(rej.Detail, "Content-Length") {
		t.Errorf("detail %q, want the refusal to come from Content-Length", rej.Detail)
	}
	if total := <-sent; total > 64<<20 {
		t.Errorf("the server wrote %d bytes before the proxy hung up", total)
	}
}

// TestFetchRefusesBadImages: bombs, broken files and formats that do not
// agree with their Content-Type.
func TestFetchRefusesBadImages(t *testing.T) {
	n := newTestNet(t)
	f := n.fetcher(t)
	half := func(name string) []byte { b := readTestdata(t, name); return b[:len(b)/2] }
	lossless := readTestdata(t, "tux.lossless.webp")
	lossy := readTestdata(t, "blue-purple-pink.lossy.webp")
	jpegSOF3 := bytes.Replace(readTestdata(t, "video-001.jpeg"), []byte{0xFF, 0xC0}, []byte{0xFF, 0xC3}, 1)
	vp8Huge := append([]byte(nil), lossy...)
	i := bytes.Index(vp8Huge, []byte{0x9d, 0x01, 0x2a})
	vp8Huge[i+3], vp8Huge[i+4], vp8Huge[i+5], vp8Huge[i+6] = 0xff, 0x3f, 0xff, 0x3f // 16383x16383
	png := readTestdata(t, "basn6a08.png")

	runImageCases(t, n, f, []imageCase{
		// Huge declared dimensions in a tiny file.
		{"PNG IHDR 100000x100000", "image/png", pngWithIHDR(t, 100000, 100000), ReasonDimensions},
		{"PNG IHDR 1x2147483647", "image/png", pngWithIHDR(t, 1, 1<<31-1), ReasonDimensions},
		{"GIF logical screen 65535x65535", "image/gif", gifWithScreen(t, 65535, 65535), ReasonDimensions},
		{"JPEG SOF 65000x65000", "image/jpeg", jpegWithSOF(t, 65000, 65000), ReasonDimensions},
		{"WebP VP8X canvas 16777216 square", "image/webp", webpWithCanvas(t, 1<<24, 1<<24), ReasonDimensions},
		{"WebP VP8X canvas 5000x10", "image/webp", webpWithCanvas(t, 5000, 10), ReasonDimensions},
		{"WebP VP8 header 16383x16383", "image/webp", vp8Huge, ReasonDimensions},

		// Allowed dimensions, too many pixels.
		{"PNG IHDR 4096x4096, tiny file", "image/png", pngWithIHDR(t, 4096, 4096), ReasonPixels},
		{"GIF screen 4096x4096", "image/gif", gifWithScreen(t, 4096, 4096), ReasonPixels},
		{"APNG 64x64 x 40 frames", "image/png", apng(t, 64, 64, 40, 40), ""},
		{"APNG 400x400 x 101 frames", "image/png", apng(t, 400, 400, 101, 101), ReasonPixels},

		// Frames.
		{"APNG acTL declares 1,000,000 frames", "image/png", apng(t, 2, 2, 2, 1000000), ReasonFrames},
		{"APNG acTL 2 against 3 fcTL", "image/png", apng(t, 2, 2, 3, 2), ReasonUnsupportedFormat},
		{"APNG acTL 3 against 2 fcTL", "image/png", apng(t, 2, 2, 2, 3), ReasonUnsupportedFormat},
		{"GIF 1000 frames", "image/gif", gifFrames(t, 2, 2, 1, 1, 1000), ReasonFrames},
		{"WebP 1000 frames", "image/webp", webpAnimation(t, 1000), ReasonFrames},

		// Truncated and corrupt files: unsupported_format (see reasonCorrupt).
		{"PNG cut in half", "image/png", half("basn6a16.png"), ReasonUnsupportedFormat},
		{"PNG truncated IDAT (Go testdata)", "image/png", readTestdata(t, "invalid-trunc.png"), ReasonUnsupportedFormat},
		{"PNG bad CRC (Go testdata)", "image/png", readTestdata(t, "invalid-crc32.png"), ReasonUnsupportedFormat},
		{"PNG bad zlib (Go testdata)", "image/png", readTestdata(t, "invalid-zlib.png"), ReasonUnsupportedFormat},
		{"PNG without IEND (Go testdata)", "image/png", readTestdata(t, "invalid-noend.png"), ReasonUnsupportedFormat},
		{"PNG signature only", "image/png", pngMagic, ReasonUnsupportedFormat},
		{"GIF cut in half", "image/gif", half("video-001.gif"), ReasonUnsupportedFormat},
		{"GIF without trailer", "image/gif", readTestdata(t, "video-001.gif")[:len(readTestdata(t, "video-001.gif"))-1], ReasonUnsupportedFormat},
		{"animated GIF cut in half", "image/gif", half("anim.gif"), ReasonUnsupportedFormat},
		{"JPEG cut in half", "image/jpeg", half("video-001.jpeg"), ReasonUnsupportedFormat},
		{"JPEG cut inside the headers", "image/jpeg", readTestdata(t, "video-001.jpeg")[:100], ReasonUnsupportedFormat},
		{"WebP lossless cut in half", "image/webp", half("tux.lossless.webp"), ReasonUnsupportedFormat},
		{"WebP lossy cut in half", "image/webp", half("blue-purple-pink.lossy.webp"), ReasonUnsupportedFormat},
		{"animated WebP cut in half", "image/webp", half("anim-lossy.webp"), ReasonUnsupportedFormat},
		{"WebP VP8L with a broken bitstream", "image/webp", corruptTail(lossless), ReasonUnsupportedFormat},
		{"WebP canvas larger than its image", "image/webp", webpWithCanvas(t, 400, 400), ReasonUnsupportedFormat},

		// Format agreement.
		{"PNG served as image/jpeg", "image/jpeg", png, ReasonFormatMismatch},
		{"JPEG served as image/png", "image/png", readTestdata(t, "video-001.jpeg"), ReasonFormatMismatch},
		{"GIF served as image/webp", "image/webp", readTestdata(t, "video-001.gif"), ReasonFormatMismatch},
		{"WebP served as image/gif", "image/gif", lossy, ReasonFormatMismatch},
		{"SVG served as image/png", "image/png", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`), ReasonUnsupportedFormat},
		{"HTML served as image/png", "image/png", []byte("<!doctype html><script>alert(1)</script>"), ReasonUnsupportedFormat},
		{"SVG served as image/svg+xml", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), ReasonUnsupportedFormat},
		{"PNG served as text/html", "text/html", png, ReasonUnsupportedFormat},
		{"PNG served as application/octet-stream", "application/octet-stream", png, ReasonUnsupportedFormat},
		{"PNG served without Content-Type", "", png, ReasonUnsupportedFormat},
		{"JPEG served as image/jpg", "image/jpg", readTestdata(t, "video-001.jpeg"), ReasonUnsupportedFormat},
		{"BMP served as image/png", "image/png", append([]byte("BM"), make([]byte, 100)...), ReasonUnsupportedFormat},
		{"empty body", "image/png", nil, ReasonUnsupportedFormat},
		{"lossless JPEG (SOF3)", "image/jpeg", jpegSOF3, ReasonUnsupportedFormat},
	})
}

// corruptTail flips the bytes of the second half of a file, keeping its
// headers intact.
func corruptTail(b []byte) []byte {
	out := append([]byte(nil), b...)
	for i := len(out) / 2; i < len(out); i++ {
		out[i] ^= 0x5a
	}
	return out
}

// TestFetchResponseRules: only 200 counts; the body must be the image as it
// is, one Content-Type, no content coding.
func TestFetchResponseRules(t *testing.T) {
	n := newTestNet(t)
	f := n.fetcher(t)
	png := readTestdata(t, "basn6a08.png")
	tests := []struct {
		name    string
		handler http.HandlerFunc
		reason  string
	}{
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, ReasonUpstreamStatus},
		{"500 with an image body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(png)
		}, ReasonUpstreamStatus},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, ReasonUpstreamStatus},
		{"206 partial content", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(http.StatusPartialContent)
			w.Write(png)
		}, ReasonUpstreamStatus},
		{"301", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://img.example.com/a.png", http.StatusMovedPermanently)
		}, ReasonRedirect},
		{"304 without Location", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) }, ReasonRedirect},
		{"gzip content coding", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(png)
		}, ReasonUnsupportedFormat},
		{"two Content-Types", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Content-Type", "image/png")
			w.Header().Add("Content-Type", "text/html")
			w.Write(png)
		}, ReasonUnsupportedFormat},
		{"body shorter than Content-Length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Content-Length", strconv.Itoa(len(png)+100))
			w.Write(png)
		}, ReasonUpstreamStatus},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := n.serve(t, "status"+strconv.Itoa(i)+".example.com", tt.handler)
			_, err := f.Fetch(context.Background(), up.url("/a.png"))
			wantReason(t, err, tt.reason)
		})
	}
}

// TestFetchSendsNothingExtra: the request carries no credentials or
// cookies, asks for the four types and no content coding.
func TestFetchRequestHeaders(t *testing.T) {
	n := newTestNet(t)
	var got http.Header
	up := n.serve(t, "headers.example.com", func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		serveBytes("image/png", readTestdata(t, "basn6a08.png"))(w, r)
	})
	if _, err := n.fetcher(t).Fetch(context.Background(), up.url("/a.png")); err != nil {
		t.Fatal(err)
	}
	if got.Get("Accept-Encoding") != "identity" || got.Get("Authorization") != "" || got.Get("Cookie") != "" ||
		!strings.Contains(got.Get("Accept"), "image/webp") {
		t.Errorf("request headers %v", got)
	}
}

// TestFetchTLSIsVerified: an upstream whose certificate is not trusted is
// not an image host.
func TestFetchTLSIsVerified(t *testing.T) {
	n := newTestNet(t)
	up := n.serve(t, "untrusted.example.com", serveBytes("image/png", readTestdata(t, "basn6a08.png")))
	f := n.fetcher(t, func(f *Fetcher) { f.RootCAs = nil })
	_, err := f.Fetch(context.Background(), up.url("/a.png"))
	rej := wantReason(t, err, ReasonUpstreamStatus)
	if !strings.Contains(rej.Detail, "certificate") {
		t.Errorf("detail %q, want a certificate failure", rej.Detail)
	}
}

// TestFetchTimeouts: each wait has its own limit, and an answer within the
// limit is taken.
func TestFetchTimeouts(t *testing.T) {
	n := newTestNet(t)
	png := readTestdata(t, "basn6a08.png")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slowHeaders := n.serve(t, "slow-headers.example.com", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(300 * time.Millisecond):
		}
		serveBytes("image/png", png)(w, r)
	})
	slowBody := n.serve(t, "slow-body.example.com", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(png[:20])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	silent := n.silent(t, "silent.example.com") // accepts TCP, never answers TLS

	tests := []struct {
		name   string
		url    string
		change func(*Fetcher)
		reason string
	}{
		{"headers later than HeaderTimeout", slowHeaders.url("/a.png"), func(f *Fetcher) { f.HeaderTimeout = 100 * time.Millisecond }, ReasonTimeout},
		{"headers within HeaderTimeout", slowHeaders.url("/a.png"), func(f *Fetcher) { f.HeaderTimeout = 2 * time.Second }, ""},
		{"body later than TotalTimeout", slowBody.url("/a.png"), func(f *Fetcher) { f.TotalTimeout = 200 * time.Millisecond }, ReasonTimeout},
		{"no TLS handshake within TLSTimeout", "https://silent.example.com/a.png", func(f *Fetcher) { f.TLSTimeout = 100 * time.Millisecond }, ReasonTimeout},
		{"connect within no time", slowHeaders.url("/a.png"), func(f *Fetcher) { f.ConnectTimeout = time.Nanosecond }, ReasonTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := n.fetcher(t, tt.change).Fetch(context.Background(), tt.url)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantReason(t, err, tt.reason)
			if tt.url == "https://silent.example.com/a.png" && silent.accepted.Load() == 0 {
				t.Error("the silent server was never reached")
			}
		})
	}
}

// silentServer accepts connections and never says anything.
type silentServer struct {
	accepted atomic.Int64
}

// silent starts a TCP listener on loopback known as name.
func (n *testNet) silent(t testing.TB, name string) *silentServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			s.accepted.Add(1)
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	n.mu.Lock()
	ip := netip.AddrFrom4([4]byte{93, 184, 215, n.nextIP})
	n.nextIP++
	n.public[netip.AddrPortFrom(ip, 443)] = ln.Addr().String()
	n.mu.Unlock()
	n.setDNS(name, []string{ip.String()})
	return s
}

// TestFetchCallerGoneIsNotARejection: when the caller's context is
// canceled, Fetch says so, and gives no reason of the contract.
func TestFetchCallerGoneIsNotARejection(t *testing.T) {
	n := newTestNet(t)
	up := n.serve(t, "slow.example.com", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := n.fetcher(t).Fetch(ctx, up.url("/a.png"))
	var rej *Rejection
	if errors.As(err, &rej) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled and no rejection", err)
	}
}

// TestFetchLimitsAreFields: each limit is taken from its field.
func TestFetchLimitsAreFields(t *testing.T) {
	n := newTestNet(t)
	anim := readTestdata(t, "anim.gif") // 32x32, 4 frames
	up := n.serve(t, "anim.example.com", serveBytes("image/gif", anim))
	tests := []struct {
		name   string
		change func(*Fetcher)
		reason string
	}{
		{"defaults", func(*Fetcher) {}, ""},
		{"MaxBytes at the size", func(f *Fetcher) { f.MaxBytes = int64(len(anim)) }, ""},
		{"MaxBytes one under", func(f *Fetcher) { f.MaxBytes = int64(len(anim)) - 1 }, ReasonTooLarge},
		{"MaxDimension 32", func(f *Fetcher) { f.MaxDimension = 32 }, ""},
		{"MaxDimension 31", func(f *Fetcher) { f.MaxDimension = 31 }, ReasonDimensions},
		{"MaxFrames 4", func(f *Fetcher) { f.MaxFrames = 4 }, ""},
		{"MaxFrames 3", func(f *Fetcher) { f.MaxFrames = 3 }, ReasonFrames},
		{"MaxPixels 32*32*4", func(f *Fetcher) { f.MaxPixels = 32 * 32 * 4 }, ""},
		{"MaxPixels 32*32*4-1", func(f *Fetcher) { f.MaxPixels = 32*32*4 - 1 }, ReasonPixels},
		{"MaxDecodeMemory of 1 byte still decodes, alone", func(f *Fetcher) { f.MaxDecodeMemory = 1 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := n.fetcher(t, tt.change).Fetch(context.Background(), up.url("/anim.gif"))
			if tt.reason == "" {
				if err != nil || img.Frames != 4 {
					t.Fatalf("img %+v, err %v", img, err)
				}
				return
			}
			wantReason(t, err, tt.reason)
		})
	}
	if f := (&Fetcher{}); f.MaxBytes != 0 {
		t.Fatal("zero Fetcher is not zero")
	}
	f := &Fetcher{Resolver: n, Connect: n.connect}
	_, roots := testCertificate(t)
	f.RootCAs = roots
	if _, err := f.Fetch(context.Background(), up.url("/anim.gif")); err != nil {
		t.Errorf("the zero Fetcher (plus test network) does not work: %v", err)
	}
}

// TestDecodeWaitsForMemory: a decode waits for its share of
// MaxDecodeMemory, within the fetch's time limit.
func TestDecodeWaitsForMemory(t *testing.T) {
	n := newTestNet(t)
	up := n.serve(t, "mem.example.com", serveBytes("image/png", readTestdata(t, "basn6a08.png")))
	f := n.fetcher(t, func(f *Fetcher) {
		f.MaxDecodeMemory = 1 << 20
		f.TotalTimeout = 300 * time.Millisecond
	})
	f.once.Do(f.init)
	if err := f.decodeMem.Acquire(context.Background(), 1<<20); err != nil {
		t.Fatal(err)
	}
	_, err := f.Fetch(context.Background(), up.url("/a.png"))
	wantReason(t, err, ReasonTimeout)

	f.decodeMem.Release(1 << 20)
	if _, err := f.Fetch(context.Background(), up.url("/a.png")); err != nil {
		t.Fatalf("after the memory is back: %v", err)
	}
}
