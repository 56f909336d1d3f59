package imageproxy

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"math"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// photoJPEG returns a 3000x2000 (6 megapixel) JPEG of photo-like content,
// smooth gradients with grain, encoded at the highest quality that keeps it
// within 512 KiB: the largest body the proxy takes, with a decode of about
// 9 MB (4:2:0 YCbCr).
func photoJPEG(tb testing.TB) []byte {
	const w, h = 3000, 2000
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	x := uint32(88172645)
	for py := range h {
		for px := range w {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			grain := int(x%23) - 11
			r := 128 + 100*math.Sin(float64(px)/370) + float64(grain)
			g := 128 + 90*math.Cos(float64(py)/250+float64(px)/900) + float64(grain)
			b := 128 + 80*math.Sin(float64(px+py)/610) + float64(grain)
			i := m.PixOffset(px, py)
			m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = clamp(r), clamp(g), clamp(b), 255
		}
	}
	var best []byte
	lo, hi := 1, 100
	for lo <= hi {
		q := (lo + hi) / 2
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: q}); err != nil {
			tb.Fatal(err)
		}
		if buf.Len() <= 512<<10 {
			best, lo = buf.Bytes(), q+1
		} else {
			hi = q - 1
		}
	}
	if len(best) < 400<<10 {
		tb.Fatalf("photo JPEG is only %d bytes", len(best))
	}
	return best
}

func clamp(v float64) uint8 { return uint8(max(0, min(255, v))) }

// heapPeak samples the heap in use (runtime/metrics: heap objects, live or
// not yet swept, plus the unused part of in-use spans: the HeapInuse of
// MemStats) until stop is called, and returns the highest value seen.
func heapPeak() (stop func() uint64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64() + samples[1].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// BenchmarkConcurrentFetchMemory sends 64 concurrent requests through a
// Proxy with its default settings, each for a 512 KiB 3000x2000 JPEG from
// a TLS upstream, every answer read and dropped by the client, and reports
// the peak heap in use during the run (peak-heap-MiB).
//
// "decode-bound" runs with the default MaxDecodeMemory; "no-decode-bound"
// lifts it, which shows what the bound saves: without it the 16 fetches
// in flight decode at once.
//
//	go test -run '^$' -bench ConcurrentFetchMemory -benchtime 5x ./imageproxy
func BenchmarkConcurrentFetchMemory(b *testing.B) {
	const clients = 64
	photo := photoJPEG(b)
	b.Logf("image: %d bytes, 3000x2000 JPEG", len(photo))
	for _, bench := range []struct {
		name      string
		decodeMem int64
	}{
		{"decode-bound", 0},
		{"no-decode-bound", 1 << 40},
	} {
		b.Run(bench.name, func(b *testing.B) {
			n := newTestNet(b)
			up := n.serve(b, "photo.example.com", serveBytes("image/jpeg", photo))
			p := &Proxy{
				Fetcher: n.fetcher(b, func(f *Fetcher) {
					f.MaxDecodeMemory = bench.decodeMem
					// Memory is measured, not latency: on a loaded machine
					// the queue for decode memory may outlast 10 s.
					f.TotalTimeout = time.Minute
				}),
				RatePerSecond: 1e9, // one user per client; the rate limit is not measured here
				MaxQueueWait:  time.Minute,
			}
			srv := proxyServer(b, p)
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
			body := urlBody(up.url("/photo.jpg"))

			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			stop := heapPeak()
			var failed atomic.Int64
			var firstFailure atomic.Value
			for b.Loop() {
				var wg sync.WaitGroup
				for c := range clients {
					wg.Go(func() {
						req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
						req.Header.Set("X-Test-User", fmt.Sprintf("user%d", c))
						resp, err := client.Do(req)
						if err != nil {
							failed.Add(1)
							firstFailure.CompareAndSwap(nil, err.Error())
							return
						}
						got, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
						n, _ := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK || int(n)+len(got) != len(photo) {
							failed.Add(1)
							firstFailure.CompareAndSwap(nil, fmt.Sprintf("status %d: %.200s", resp.StatusCode, got))
						}
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			peak := stop()
			if f := failed.Load(); f != 0 {
				b.Fatalf("%d requests were not served the image; first: %v", f, firstFailure.Load())
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(base.HeapInuse)/(1<<20), "base-heap-MiB")
		})
	}
}
