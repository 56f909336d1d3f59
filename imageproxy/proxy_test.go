package imageproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxyServer serves p as the REST layer would: it authenticates (here, the
// X-Test-User header names the user) and calls Serve.
func proxyServer(t testing.TB, p *Proxy) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Serve(w, r, r.Header.Get("X-Test-User"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
	err    struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
}

// post sends body as user and decodes an error answer.
func post(t testing.TB, srv *httptest.Server, user, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/plugin-instances/i1/ui-images:fetch", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-User", user)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	a.body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(a.body, &e); err != nil {
			t.Fatalf("status %d, body %q is not an error object", resp.StatusCode, a.body)
		}
		json.Unmarshal(e.Error, &a.err)
	}
	return a
}

func urlBody(u string) string {
	b, _ := json.Marshal(map[string]string{"url": u})
	return string(b)
}

func TestProxyServesOnlyTheVerifiedImage(t *testing.T) {
	n := newTestNet(t)
	png := readTestdata(t, "basn6a08.png")
	up := n.serve(t, "img.example.com", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Set-Cookie", "tracker=1")
		w.Header().Set("Content-Security-Policy", "script-src *")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("X-Upstream", "leak")
		w.Write(png)
	})
	srv := proxyServer(t, &Proxy{Fetcher: n.fetcher(t)})
	a := post(t, srv, "alice", urlBody(up.url("/a.png?v=1")))
	if a.status != http.StatusOK || !bytes.Equal(a.body, png) {
		t.Fatalf("status %d, %d bytes", a.status, len(a.body))
	}
	want := map[string]string{
		"Content-Type":            "image/png",
		"Content-Length":          "184",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; sandbox",
		"Content-Disposition":     "inline",
		"Cache-Control":           "private, max-age=300",
	}
	for k, v := range want {
		if got := a.header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"Set-Cookie", "Access-Control-Allow-Origin", "X-Upstream"} {
		if a.header.Get(k) != "" {
			t.Errorf("upstream header %s passed through", k)
		}
	}
}

func TestProxyRejections(t *testing.T) {
	n := newTestNet(t)
	up := n.serve(t, "svg.example.com", serveBytes("image/png", []byte("<svg/>")))
	srv := proxyServer(t, &Proxy{Fetcher: n.fetcher(t)})
	tests := []struct {
		name, body, reason string
	}{
		{"blocked address", urlBody("https://169.254.169.254/latest/meta-data/"), ReasonBlockedAddress},
		{"http", urlBody("http://img.example.com/a.png"), ReasonNotHTTPS},
		{"SVG as PNG", urlBody(up.url("/a.png")), ReasonUnsupportedFormat},
		// The request body: not {"url": string} is invalid_url.
		{"empty body", "", ReasonInvalidURL},
		{"not JSON", "url=https://img.example.com/", ReasonInvalidURL},
		{"truncated JSON", `{"url": "https://img.example.com/`, ReasonInvalidURL},
		{"array", `["https://img.example.com/"]`, ReasonInvalidURL},
		{"no url", `{}`, ReasonInvalidURL},
		{"null url", `{"url": null}`, ReasonInvalidURL},
		{"number url", `{"url": 1}`, ReasonInvalidURL},
		{"empty url", `{"url": ""}`, ReasonInvalidURL},
		{"two values", `{"url": "https://img.example.com/a.png"} {"url": "x"}`, ReasonInvalidURL},
		{"body over 8 KiB", `{"url": "https://img.example.com/a.png", "pad": "` + strings.Repeat("x", MaxRequestBytes) + `"}`, ReasonInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, srv, "alice", tt.body)
			if a.status != http.StatusUnprocessableEntity || a.err.Code != "UI_IMAGE_REJECTED" || a.err.Reason != tt.reason || a.err.Message == "" {
				t.Fatalf("status %d, error %+v; want 422 UI_IMAGE_REJECTED %s", a.status, a.err, tt.reason)
			}
			if a.header.Get("Content-Type") != "application/json" || a.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", a.header)
			}
		})
	}
	// A body just within the bound is read.
	pad := MaxRequestBytes - len(`{"url": "https://127.0.0.1/", "pad": ""}`)
	a := post(t, srv, "alice", `{"url": "https://127.0.0.1/", "pad": "`+strings.Repeat("x", pad)+`"}`)
	if a.err.Reason != ReasonBlockedAddress {
		t.Errorf("8 KiB body: %+v, want the URL read and refused as blocked_address", a.err)
	}
}

// TestProxyMessagesDoNotLeakDetail: the answer says which rule, not what
// the proxy learnt (such as the internal address a name resolves to).
func TestProxyMessagesDoNotLeakDetail(t *testing.T) {
	n := newTestNet(t)
	n.setDNS("intranet.example.com", []string{"10.20.30.40"})
	srv := proxyServer(t, &Proxy{Fetcher: n.fetcher(t)})
	a := post(t, srv, "alice", urlBody("https://intranet.example.com/a.png"))
	if a.err.Reason != ReasonBlockedAddress || bytes.Contains(a.body, []byte("10.20.30.40")) {
		t.Fatalf("answer %s", a.body)
	}
}

func TestProxyRateLimitPerUser(t *testing.T) {
	n := newTestNet(t)
	srv := proxyServer(t, &Proxy{Fetcher: n.fetcher(t), RatePerSecond: 0.1, Burst: 3})
	blocked := urlBody("https://127.0.0.1/") // refused without any fetch
	for i := range 3 {
		if a := post(t, srv, "alice", blocked); a.status != http.StatusUnprocessableEntity {
			t.Fatalf("request %d within the burst: status %d", i+1, a.status)
		}
	}
	a := post(t, srv, "alice", blocked)
	if a.status != http.StatusTooManyRequests || a.err.Code != "RATE_LIMITED" {
		t.Fatalf("request past the burst: status %d, %+v", a.status, a.err)
	}
	if ra := a.header.Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After %q, want 10 (one token at 0.1/s)", ra)
	}
	if a := post(t, srv, "bob", blocked); a.status != http.StatusUnprocessableEntity {
		t.Errorf("another user: status %d, want their own bucket", a.status)
	}
}

func TestProxyRateLimitDefaults(t *testing.T) {
	n := newTestNet(t)
	p := &Proxy{Fetcher: n.fetcher(t)}
	srv := proxyServer(t, p)
	blocked := urlBody("https://127.0.0.1/")
	got := 0
	for range DefaultBurst + 5 {
		if post(t, srv, "carol", blocked).status == http.StatusTooManyRequests {
			break
		}
		got++
	}
	// Within the loop's time a token or two may come back at 10/s.
	if got < DefaultBurst || got > DefaultBurst+3 {
		t.Errorf("%d requests before 429, want the burst of %d", got, DefaultBurst)
	}
}

// TestProxyLimiterForgetsFullBuckets: a user's bucket that has refilled is
// dropped, so idle users cost nothing.
func TestProxyLimiterForgetsFullBuckets(t *testing.T) {
	p := &Proxy{RatePerSecond: 1, Burst: 2}
	p.once.Do(p.init)
	t0 := time.Now()
	for i := range 100 {
		p.allow(strings.Repeat("u", i+1), t0)
	}
	p.allow("late", t0.Add(2*time.Minute))
	if len(p.limiters) != 1 {
		t.Errorf("%d buckets kept, want only the late user's", len(p.limiters))
	}
	if _, ok := p.allow("late", t0.Add(2*time.Minute)); !ok {
		t.Error("second request of the late user refused")
	}
	if _, ok := p.allow("late", t0.Add(2*time.Minute)); ok {
		t.Error("third request at the same instant allowed past a burst of 2")
	}
}

// TestProxyBoundsFetchesInFlight: with MaxConcurrent fetches running, one
// more waits at most MaxQueueWait, then is told to retry; one that gets a
// slot within the wait is served.
func TestProxyBoundsFetchesInFlight(t *testing.T) {
	n := newTestNet(t)
	png := readTestdata(t, "basn6a08.png")
	release := make(chan struct{})
	up := n.serve(t, "slow.example.com", func(w http.ResponseWriter, r *http.Request) {
		<-release
		serveBytes("image/png", png)(w, r)
	})
	p := &Proxy{Fetcher: n.fetcher(t), MaxConcurrent: 2, MaxQueueWait: 200 * time.Millisecond}
	srv := proxyServer(t, p)

	var wg sync.WaitGroup
	statuses := make(chan int, 3)
	for _, user := range []string{"u1", "u2"} {
		wg.Go(func() { statuses <- post(t, srv, user, urlBody(up.url("/a.png"))).status })
	}
	for up.hits.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	a := post(t, srv, "u3", urlBody(up.url("/a.png")))
	if a.status != http.StatusTooManyRequests || a.err.Code != "RATE_LIMITED" || a.header.Get("Retry-After") == "" {
		t.Fatalf("third fetch while two run: status %d, %+v", a.status, a.err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("the third request waited %v, less than MaxQueueWait", d)
	}

	// A request that gets a slot within its wait is served.
	p2 := &Proxy{Fetcher: n.fetcher(t), MaxConcurrent: 1, MaxQueueWait: 5 * time.Second}
	srv2 := proxyServer(t, p2)
	wg.Go(func() { statuses <- post(t, srv2, "u4", urlBody(up.url("/b.png"))).status })
	for up.hits.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan answer)
	go func() { done <- post(t, srv2, "u5", urlBody(up.url("/c.png"))) }()
	time.Sleep(100 * time.Millisecond)
	if up.hits.Load() != 3 {
		t.Fatal("the queued request reached the upstream before a slot was free")
	}
	close(release)
	if a := <-done; a.status != http.StatusOK {
		t.Errorf("queued request: status %d %+v", a.status, a.err)
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusOK {
			t.Errorf("a running fetch ended with %d", s)
		}
	}
}

// TestProxyLogsHostAndReasonOnly: a rejection is logged with the host and
// the reason, never the URL's path or query, nor the fetched body.
func TestProxyLogsHostAndReasonOnly(t *testing.T) {
	n := newTestNet(t)
	up := n.serve(t, "html.example.com", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("<html>BODY-SECRET</html>"))
	})
	var logs bytes.Buffer
	srv := proxyServer(t, &Proxy{Fetcher: n.fetcher(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	post(t, srv, "alice", urlBody(up.url("/private/PATH-SECRET.png?token=QUERY-SECRET")))
	post(t, srv, "alice", urlBody("http://img.example.com/x?token=QUERY-SECRET2"))
	post(t, srv, "alice", urlBody("https://img.example.com:8443/x?token=QUERY-SECRET3"))
	post(t, srv, "alice", urlBody("https://img.example.com/%zz?token=QUERY-SECRET4"))
	out := logs.String()
	for _, want := range []string{"host=html.example.com", "reason=unsupported_format", "reason=not_https", "reason=invalid_url", "user=alice"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"SECRET", "PATH", "token"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
}
