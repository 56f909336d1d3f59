package imageproxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"pluginhost/metrics"
	"pluginhost/models"
)

// Defaults of the Proxy fields. The spec leaves rate limits open ("Rate
// limits and request size limits of the HTTP API: not shown").
const (
	// DefaultRatePerSecond and DefaultBurst: a renderer showing a screen of
	// images fetches them in a burst, then rarely.
	DefaultRatePerSecond = 10.0
	DefaultBurst         = 20
	// DefaultMaxConcurrent bounds fetches in flight over all users. Each
	// may hold a body of up to 512 KiB while it waits for decode memory; at
	// 8, 64 concurrent requests for 512 KiB photos peak at about 53 MiB of
	// heap, at 16 at 50 to 67 MiB depending on the machine's load
	// (BenchmarkConcurrentFetchMemory), so 8 keeps them under 64 MiB.
	DefaultMaxConcurrent = 8
	// DefaultMaxQueueWait bounds how long a request waits for one of the
	// MaxConcurrent slots before it is told to retry.
	DefaultMaxQueueWait = 5 * time.Second
)

// MaxRequestBytes bounds the JSON request body {"url": "..."}.
const MaxRequestBytes = 8 << 10

// CodeRateLimited is the error code of a 429 answer: the user's rate or the
// proxy's capacity is exhausted; Retry-After says when to try again.
const CodeRateLimited models.Code = "RATE_LIMITED"

// Headers of every image answer. The CSP lets nothing in the answer run or
// load, even if a browser were to render it as a document.
const (
	imageCSP          = "default-src 'none'; sandbox"
	imageCacheControl = "private, max-age=300"
)

// Proxy is the HTTP side of the image proxy: it limits each user's rate and
// the fetches in flight, reads the request, calls the Fetcher and writes the
// answer of the contract (200 with the image, 422 UI_IMAGE_REJECTED with a
// reason, 429 RATE_LIMITED). A zero field means its default; fields must not
// change after the first call to Serve.
type Proxy struct {
	Fetcher       *Fetcher      // nil: New()
	RatePerSecond float64       // per user, DefaultRatePerSecond
	Burst         int           // per user, DefaultBurst
	MaxConcurrent int           // over all users, DefaultMaxConcurrent
	MaxQueueWait  time.Duration // DefaultMaxQueueWait
	Logger        *slog.Logger  // nil: slog.Default()

	once     sync.Once
	slots    *semaphore.Weighted
	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	swept    time.Time
}

// Serve answers POST .../ui-images:fetch for userID, who the caller has
// authenticated and allowed to use the network on this Instance. The body
// is {"url": "https://..."}; a body that is not such JSON, is over
// MaxRequestBytes or lacks the url is refused like a bad URL, with 422 and
// reason invalid_url, because for the renderer it is one more image that
// cannot be shown.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, userID string) {
	p.once.Do(p.init)
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}

	if wait, ok := p.allow(userID, time.Now()); !ok {
		log.LogAttrs(r.Context(), slog.LevelInfo, "ui image rate limited", slog.String("user", userID))
		metrics.ImageProxy("rate_limited")
		writeRateLimited(w, wait, "too many image requests")
		return
	}

	var req struct {
		URL *string `json:"url"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err := dec.Decode(&req); err != nil || req.URL == nil || dec.More() {
		rej := reject(ReasonInvalidURL, "request body is not {\"url\": string} within %d bytes", MaxRequestBytes)
		p.logRejection(r.Context(), log, userID, rej)
		metrics.ImageProxy(rej.Reason)
		writeRejection(w, rej)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), or(p.MaxQueueWait, DefaultMaxQueueWait))
	err := p.slots.Acquire(ctx, 1)
	cancel()
	if err != nil {
		if r.Context().Err() == nil {
			log.LogAttrs(r.Context(), slog.LevelWarn, "ui image proxy busy", slog.String("user", userID))
		}
		metrics.ImageProxy("busy")
		writeRateLimited(w, time.Second, "the image proxy is busy")
		return
	}
	defer p.slots.Release(1)

	img, err := p.Fetcher.Fetch(r.Context(), *req.URL)
	var rej *Rejection
	switch {
	case errors.As(err, &rej):
		p.logRejection(r.Context(), log, userID, rej)
		metrics.ImageProxy(rej.Reason)
		writeRejection(w, rej)
		return
	case err != nil:
		log.LogAttrs(r.Context(), slog.LevelInfo, "ui image fetch abandoned", slog.String("user", userID), slog.String("error", err.Error()))
		metrics.ImageProxy("error")
		writeError(w, http.StatusInternalServerError, models.ErrInternal, models.ErrorMessage(err), "")
		return
	}
	metrics.ImageProxy("ok")
	log.LogAttrs(r.Context(), slog.LevelDebug, "ui image served", slog.String("user", userID),
		slog.String("format", img.Format), slog.Int("bytes", len(img.Bytes)))
	h := w.Header()
	h.Set("Content-Type", img.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(img.Bytes)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", imageCSP)
	h.Set("Content-Disposition", "inline")
	h.Set("Cache-Control", imageCacheControl)
	w.WriteHeader(http.StatusOK)
	w.Write(img.Bytes)
}

func (p *Proxy) init() {
	if p.Fetcher == nil {
		p.Fetcher = New()
	}
	p.slots = semaphore.NewWeighted(int64(or(p.MaxConcurrent, DefaultMaxConcurrent)))
	p.limiters = make(map[string]*rate.Limiter)
}

// allow takes one token from userID's bucket, or says how long until one is
// there. Buckets that have refilled completely are dropped now and then: a
// full bucket is the same as a new one.
func (p *Proxy) allow(userID string, now time.Time) (time.Duration, bool) {
	perSecond := p.RatePerSecond
	if perSecond <= 0 {
		perSecond = DefaultRatePerSecond
	}
	burst := or(p.Burst, DefaultBurst)

	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.swept) > time.Minute {
		for id, l := range p.limiters {
			if l.TokensAt(now) >= float64(burst) {
				delete(p.limiters, id)
			}
		}
		p.swept = now
	}
	l, ok := p.limiters[userID]
	if !ok {
		l = rate.NewLimiter(rate.Limit(perSecond), burst)
		p.limiters[userID] = l
	}
	res := l.ReserveN(now, 1)
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return wait, false
	}
	return 0, true
}

// logRejection logs the host and the reason, never the URL's path or query
// nor the fetched body.
func (p *Proxy) logRejection(ctx context.Context, log *slog.Logger, userID string, rej *Rejection) {
	log.LogAttrs(ctx, slog.LevelInfo, "ui image rejected", slog.String("user", userID),
		slog.String("host", rej.Host), slog.String("reason", rej.Reason), slog.String("detail", rej.Detail))
}

// rejectionMessages are the messages of the 422 answers. The Detail of a
// rejection stays in the log: it may name internal addresses.
var rejectionMessages = map[string]string{
	ReasonInvalidURL:        "the image URL is not a valid absolute https URL on port 443",
	ReasonNotHTTPS:          "the image URL is not https",
	ReasonBlockedAddress:    "the image host is not a public address",
	ReasonRedirect:          "the image URL redirects; redirects are not followed",
	ReasonUpstreamStatus:    "the image host did not deliver a sound image",
	ReasonTimeout:           "the image host took too long",
	ReasonTooLarge:          "the image is larger than the size limit",
	ReasonUnsupportedFormat: "the image is not PNG, JPEG, GIF or WebP",
	ReasonFormatMismatch:    "the image's Content-Type does not match its content",
	ReasonDimensions:        "the image is wider or taller than the limit",
	ReasonFrames:            "the image has more frames than the limit",
	ReasonPixels:            "the image has more pixels over all frames than the limit",
}

func writeRejection(w http.ResponseWriter, rej *Rejection) {
	writeError(w, http.StatusUnprocessableEntity, models.ErrImageRejected, rejectionMessages[rej.Reason], rej.Reason)
}

func writeRateLimited(w http.ResponseWriter, wait time.Duration, message string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	writeError(w, http.StatusTooManyRequests, CodeRateLimited, message, "")
}

// writeError writes the REST error body {"error": {"code", "message", "reason"}}.
func writeError(w http.ResponseWriter, status int, code models.Code, message, reason string) {
	type body struct {
		Code    models.Code `json:"code"`
		Message string      `json:"message"`
		Reason  string      `json:"reason,omitempty"`
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Error body `json:"error"`
	}{body{code, message, reason}})
}
