package netfetch_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/egress"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/tlstest"
	"pluginhost/models"
	"pluginhost/netfetch"
	"pluginhost/sandbox"
)

// resolver answers the test's names; a name in rebind answers its first
// address once, then the second: DNS rebinding.
type resolver struct {
	mu     sync.Mutex
	names  map[string][]string
	rebind map[string]int
}

func (r *resolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addrs, ok := r.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if n, ok := r.rebind[host]; ok {
		r.rebind[host] = n + 1
		if n > 0 {
			addrs = addrs[1:]
		}
		addrs = addrs[:1]
	}
	var out []net.IPAddr
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

type world struct {
	svc  *netfetch.Service
	db   *database.DB
	port int
	run  netfetch.Run
	hits sync.Map // path -> hits
}

func newWorld(t *testing.T) *world {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/fetch.db"})
	ca := tlstest.NewCA(t, "fetch test CA")
	w := &world{db: env.DB}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(rw http.ResponseWriter, r *http.Request) {
		w.hit(r.URL.Path)
		body, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for name := range r.Header {
			h[strings.ToLower(name)] = r.Header.Get(name)
		}
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]any{"method": r.Method, "query": r.URL.RawQuery, "headers": h, "body": string(body)})
	})
	mux.HandleFunc("/redirect", func(rw http.ResponseWriter, r *http.Request) {
		w.hit(r.URL.Path)
		http.Redirect(rw, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/cookie", func(rw http.ResponseWriter, r *http.Request) {
		http.SetCookie(rw, &http.Cookie{Name: "session", Value: "s3cr3t"})
		rw.Header().Set("X-Kept", "yes")
		io.WriteString(rw, "ok")
	})
	mux.HandleFunc("/big", func(rw http.ResponseWriter, r *http.Request) {
		rw.Write(make([]byte, netfetch.MaxResponseBody+1))
	})
	mux.HandleFunc("/limit", func(rw http.ResponseWriter, r *http.Request) {
		rw.Write([]byte(strings.Repeat("a", netfetch.MaxResponseBody)))
	})
	mux.HandleFunc("/broken", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Length", "100")
		rw.Header().Set("X-Kept", "yes")
		rw.WriteHeader(http.StatusAccepted)
		rw.Write([]byte("only ten.."))
	})
	mux.HandleFunc("/binary", func(rw http.ResponseWriter, r *http.Request) {
		rw.Write([]byte{0xff, 0xfe, 0x00, 0x01})
	})
	mux.HandleFunc("/slow", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "api.test", "other.test", "rebind.test", "private.test")}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	w.port = srv.Listener.Addr().(*net.TCPAddr).Port

	// A server whose certificate no trusted authority signed.
	stranger := httptest.NewUnstartedServer(mux)
	stranger.TLS = &tls.Config{Certificates: []tls.Certificate{tlstest.NewCA(t, "unknown CA").Issue(t, "stranger.test")}}
	stranger.StartTLS()
	t.Cleanup(stranger.Close)
	strangerPort := stranger.Listener.Addr().(*net.TCPAddr).Port

	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	w.svc = &netfetch.Service{
		Policy:  &egress.Policy{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		RootCAs: ca.Pool(),
		Resolver: &resolver{names: map[string][]string{
			"api.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}, "stranger.test": {"127.0.0.1"},
			"private.test": {"10.0.0.7"}, "metadata.test": {"169.254.169.254"}, "loopback.test": {"127.0.0.9"},
			"rebind.test": {"127.0.0.1", "169.254.169.254"},
		}, rebind: map[string]int{"rebind.test": 0}},
		Storage: env.Store,
	}
	hosts := []string{fmt.Sprintf("api.test:%d", w.port), fmt.Sprintf("rebind.test:%d", w.port), fmt.Sprintf("private.test:%d", w.port),
		"metadata.test", fmt.Sprintf("stranger.test:%d", strangerPort), fmt.Sprintf("api.test:%d", closedPort), fmt.Sprintf("loopback.test:%d", w.port)}
	w.run = netfetch.Run{
		Target: &access.Target{
			Instance:     &models.Instance{ID: "inst_fetch", Enabled: true, Grants: []string{models.PermissionNetwork}},
			Installation: &models.Installation{ID: "inl_fetch", PluginID: "com.test.fetch", UserID: "usr_fetch"},
			Manifest: &models.Manifest{ID: "com.test.fetch", Permissions: []string{models.PermissionNetwork}, Network: &models.Network{Hosts: hosts},
				Connections: []models.Connection{{ID: "svc", Label: "Service", Kind: models.ConnectionAPIKey, Hosts: hosts[:1],
					APIKey: &models.APIKeySpec{Header: "X-Key"}}}},
		},
		Capability: "fetch.test", UserID: "usr_fetch",
	}
	return w
}

func (w *world) hit(path string) {
	v, _ := w.hits.LoadOrStore(path, new(int))
	*v.(*int)++
}

func (w *world) url(host, path string) string {
	return fmt.Sprintf("https://%s:%d%s", host, w.port, path)
}

func (w *world) fetch(t *testing.T, reqs ...sandbox.FetchRequest) (map[string]sandbox.FetchAnswer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	return w.svc.Fetcher(w.run)(ctx, 1, reqs)
}

// Answers: what the server said, as the module reads it.
func TestFetchAnswers(t *testing.T) {
	w := newWorld(t)
	get := func(id, path string) sandbox.FetchRequest {
		return sandbox.FetchRequest{ID: id, Method: "GET", URL: w.url("api.test", path)}
	}
	answers, err := w.fetch(t,
		sandbox.FetchRequest{ID: "post", Method: "post", URL: w.url("api.test", "/echo?city=Oslo"), Headers: map[string]string{"Accept": "application/json", "X-Trace": "1"},
			Body: base64.StdEncoding.EncodeToString([]byte("héllo")), BodyEncoding: "base64"},
		get("redirect", "/redirect"), get("cookie", "/cookie"), get("binary", "/binary"))
	if err != nil {
		t.Fatal(err)
	}
	var echoed struct {
		Method, Query, Body string
		Headers             map[string]string
	}
	json.Unmarshal([]byte(answers["post"].Body), &echoed)
	if answers["post"].Status != 200 || echoed.Method != "POST" || echoed.Query != "city=Oslo" || echoed.Body != "héllo" ||
		echoed.Headers["x-trace"] != "1" || echoed.Headers["user-agent"] != "pluginhost-fetch/1" {
		t.Errorf("post: %+v, echoed %+v", answers["post"], echoed)
	}
	if r := answers["redirect"]; r.Status != http.StatusFound || !strings.Contains(r.Headers["location"], "169.254.169.254") {
		t.Errorf("a redirect is returned, not followed: %+v", r)
	}
	if r := answers["cookie"]; r.Headers["set-cookie"] != "" || r.Headers["x-kept"] != "yes" || r.Body != "ok" {
		t.Errorf("Set-Cookie must never reach the module: %+v", r)
	}
	if r := answers["binary"]; r.BodyEncoding != "base64" || r.Body != base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00, 0x01}) {
		t.Errorf("a body that is not UTF-8 comes as base64: %+v", r)
	}
	// The audit trail: one record a fetch, with its host, method and
	// status, and nothing of the path's query, the headers or the bodies.
	var rows []database.FetchAuditRow
	for deadline := time.Now().Add(10 * time.Second); len(rows) < 4 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		w.db.Read.Where("instance_id = ?", "inst_fetch").Order("id").Find(&rows)
	}
	if len(rows) != 4 {
		t.Fatalf("%d audit records, want 4", len(rows))
	}
	for _, r := range rows {
		all := fmt.Sprintf("%+v", r)
		if r.Host != fmt.Sprintf("api.test:%d", w.port) || r.Capability != "fetch.test" || r.UserID != "usr_fetch" || r.Outcome != "ok" ||
			strings.Contains(all, "Oslo") || strings.Contains(all, "X-Trace") || strings.Contains(all, "h\u00e9llo") {
			t.Errorf("audit record %s", all)
		}
	}
	if rows[0].Method != "POST" || rows[0].Status != 200 || rows[0].BytesSent != int64(len("héllo")) {
		t.Errorf("the POST's record: %+v", rows[0])
	}
}

// Transport failures reach the module as error, and the round goes on. A
// TLS failure says "tls" once and how an operator trusts a private
// authority; an answer whose body failed holds its status and headers with
// the error.
func TestFetchTransportFailures(t *testing.T) {
	w := newWorld(t)
	hosts := w.run.Target.Manifest.Network.Hosts
	answers, err := w.fetch(t,
		sandbox.FetchRequest{ID: "big", Method: "GET", URL: w.url("api.test", "/big")},
		sandbox.FetchRequest{ID: "limit", Method: "GET", URL: w.url("api.test", "/limit")},
		sandbox.FetchRequest{ID: "tls", Method: "GET", URL: "https://" + hosts[4] + "/echo"},
		sandbox.FetchRequest{ID: "refused", Method: "GET", URL: "https://" + hosts[5] + "/echo"},
	)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"big": netfetch.ErrorBodyTooLarge, "tls": "tls: failed to verify certificate: x509: certificate signed by unknown authority",
		"refused": netfetch.ErrorConnectionRefused} {
		if !strings.HasPrefix(answers[id].Error, want) {
			t.Errorf("%s: %+v, want error %s", id, answers[id], want)
		}
	}
	if e := answers["tls"].Error; strings.Count(e, "tls:") != 1 || !strings.Contains(e, "--egress-ca FILE") {
		t.Errorf("a TLS failure reads %q: want \"tls:\" once and --egress-ca", e)
	}
	if a := answers["big"]; a.Status != 200 {
		t.Errorf("a body too large: %+v, want its status with the error", a)
	}
	if a := answers["limit"]; a.Error != "" || len(a.Body) != netfetch.MaxResponseBody {
		t.Errorf("a body at the limit: error %q, %d bytes", a.Error, len(a.Body))
	}
	answers, err = w.fetch(t, sandbox.FetchRequest{ID: "broken", Method: "GET", URL: w.url("api.test", "/broken")})
	if a := answers["broken"]; err != nil || a.Status != http.StatusAccepted || a.Headers["x-kept"] != "yes" || !strings.Contains(a.Error, "unexpected EOF") || a.Body != "" {
		t.Errorf("a body cut short: %+v %v, want the status, the headers and the error", a, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	answers, err = w.svc.Fetcher(w.run)(ctx, 1, []sandbox.FetchRequest{{ID: "slow", Method: "GET", URL: w.url("api.test", "/slow")}})
	if err != nil || answers["slow"].Error != netfetch.ErrorTimeout {
		t.Errorf("a fetch past the run's deadline: %+v %v", answers, err)
	}
}

// Every refusal fails the run with network_denied (or connection_required),
// names the request and its host in the message and in extensions.request
// and extensions.host, and says what would open it where an operator can;
// nothing is sent.
func TestFetchRefusals(t *testing.T) {
	w := newWorld(t)
	echo := w.url("api.test", "/echo")
	api := fmt.Sprintf("api.test:%d", w.port)
	for _, tt := range []struct {
		name   string
		change func(r *netfetch.Run)
		req    sandbox.FetchRequest
		reason string
		host   string
		says   string
	}{
		{"no permission", func(r *netfetch.Run) { r.Target.Manifest.Permissions = nil }, sandbox.FetchRequest{ID: "a", URL: echo},
			models.ReasonNetworkDenied, api, "does not request the network permission"},
		{"no grant", func(r *netfetch.Run) { r.Target.Instance.Grants = nil }, sandbox.FetchRequest{ID: "a", URL: echo},
			models.ReasonNetworkDenied, api, "no network grant"},
		{"no network.hosts", func(r *netfetch.Run) { r.Target.Manifest.Network = nil }, sandbox.FetchRequest{ID: "a", URL: echo},
			models.ReasonNetworkDenied, api, "lists no network.hosts"},
		{"a host not listed", nil, sandbox.FetchRequest{ID: "a", URL: w.url("other.test", "/echo")},
			models.ReasonNetworkDenied, fmt.Sprintf("other.test:%d", w.port), "other.test"},
		{"a listed host on another port", nil, sandbox.FetchRequest{ID: "a", URL: "https://api.test/echo"},
			models.ReasonNetworkDenied, "api.test", "fetch \"a\" to api.test: the host is not among"},
		{"plain http", nil, sandbox.FetchRequest{ID: "a", URL: strings.Replace(echo, "https:", "http:", 1)},
			models.ReasonNetworkDenied, api, "only https"},
		{"an IP literal", nil, sandbox.FetchRequest{ID: "a", URL: fmt.Sprintf("https://127.0.0.1:%d/echo", w.port)},
			models.ReasonNetworkDenied, fmt.Sprintf("127.0.0.1:%d", w.port), "127.0.0.1"},
		{"userinfo", nil, sandbox.FetchRequest{ID: "a", URL: fmt.Sprintf("https://me@api.test:%d/echo", w.port)},
			models.ReasonNetworkDenied, api, "userinfo"},
		{"a private address the operator did not open", nil, sandbox.FetchRequest{ID: "a", URL: w.url("private.test", "/echo")},
			models.ReasonNetworkDenied, fmt.Sprintf("private.test:%d", w.port), "10.0.0.7 is private (10.0.0.0/8); a server reaches such an address only when its operator opens it with --egress-allow-private 10.0.0.7/32"},
		{"a loopback address the operator did not open", nil, sandbox.FetchRequest{ID: "a", URL: w.url("loopback.test", "/echo")},
			models.ReasonNetworkDenied, fmt.Sprintf("loopback.test:%d", w.port), "127.0.0.9 is loopback (127.0.0.0/8); a server reaches such an address only when its operator opens it with --egress-allow-private 127.0.0.9/32"},
		{"the metadata address", nil, sandbox.FetchRequest{ID: "a", URL: "https://metadata.test/"},
			models.ReasonNetworkDenied, "metadata.test", "169.254.169.254"},
		{"DNS rebinding, caught when dialled", nil, sandbox.FetchRequest{ID: "a", URL: w.url("rebind.test", "/echo")},
			models.ReasonNetworkDenied, fmt.Sprintf("rebind.test:%d", w.port), "dial-time check"},
		{"an Authorization header", nil, sandbox.FetchRequest{ID: "a", URL: echo, Headers: map[string]string{"Authorization": "Bearer x"}},
			models.ReasonNetworkDenied, api, "Authorization"},
		{"a Cookie header", nil, sandbox.FetchRequest{ID: "a", URL: echo, Headers: map[string]string{"cookie": "a=b"}},
			models.ReasonNetworkDenied, api, "cookie"},
		{"a Host header", nil, sandbox.FetchRequest{ID: "a", URL: echo, Headers: map[string]string{"Host": "internal"}},
			models.ReasonNetworkDenied, api, "Host"},
		{"Transfer-Encoding", nil, sandbox.FetchRequest{ID: "a", URL: echo, Headers: map[string]string{"Transfer-Encoding": "chunked"}},
			models.ReasonNetworkDenied, api, "Transfer-Encoding"},
		{"a header value with a line break", nil, sandbox.FetchRequest{ID: "a", URL: echo, Headers: map[string]string{"X-A": "1\r\nHost: internal"}},
			models.ReasonNetworkDenied, api, "line break"},
		{"a header name that is not a token", nil, sandbox.FetchRequest{ID: "a", URL: echo, Headers: map[string]string{"X A:": "1"}},
			models.ReasonNetworkDenied, api, "not the module's"},
		{"a body past 64 KiB", nil, sandbox.FetchRequest{ID: "a", Method: "POST", URL: echo, Body: strings.Repeat("x", netfetch.MaxRequestBody+1)},
			models.ReasonNetworkDenied, api, "65537 bytes"},
		{"a body that is not base64", nil, sandbox.FetchRequest{ID: "a", Method: "POST", URL: echo, Body: "%%", BodyEncoding: "base64"},
			models.ReasonBadOutput, api, "not base64"},
		{"a method the host does not send", nil, sandbox.FetchRequest{ID: "a", Method: "CONNECT", URL: echo},
			models.ReasonNetworkDenied, api, "CONNECT"},
		{"an undeclared connection", nil, sandbox.FetchRequest{ID: "a", URL: echo, Connection: "github"},
			models.ReasonNetworkDenied, api, "no connection \"github\""},
		{"a connection sent off its hosts", nil, sandbox.FetchRequest{ID: "a", URL: w.url("rebind.test", "/echo"), Connection: "svc"},
			models.ReasonNetworkDenied, fmt.Sprintf("rebind.test:%d", w.port), "only to its hosts"},
		{"a connection that cannot be used", nil, sandbox.FetchRequest{ID: "a", URL: echo, Connection: "svc"},
			models.ReasonConnectionRequired, api, "cannot be used"},
		{"one bad request refuses the round", nil, sandbox.FetchRequest{ID: "b", URL: "http://api.test/"},
			models.ReasonNetworkDenied, "api.test", "only https"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := w.run
			target := *run.Target
			inst, m := *target.Instance, *target.Manifest
			target.Instance, target.Manifest, run.Target = &inst, &m, &target
			if tt.change != nil {
				tt.change(&run)
			}
			before := w.hitsOf("/echo")
			reqs := []sandbox.FetchRequest{tt.req}
			if tt.req.ID == "b" {
				reqs = []sandbox.FetchRequest{{ID: "a", URL: echo}, tt.req}
			}
			if reqs[0].Method == "" {
				reqs[0].Method = "GET"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			_, err := w.svc.Fetcher(run)(ctx, 1, reqs)
			var e *models.Error
			if !errors.As(err, &e) || e.Reason != tt.reason || !strings.Contains(e.Message, tt.says) {
				t.Fatalf("got %v, want %s saying %q", err, tt.reason, tt.says)
			}
			if ext := e.Extensions(); ext["request"] != tt.req.ID || ext["host"] != tt.host || !strings.HasPrefix(e.Message, fmt.Sprintf("fetch %q to %s: ", tt.req.ID, tt.host)) {
				t.Fatalf("extensions %v (message %q), want request %q and host %q, the message naming it", ext, e.Message, tt.req.ID, tt.host)
			}
			if w.hitsOf("/echo") != before {
				t.Fatal("a refused round reached the server")
			}
		})
	}
}

func (w *world) hitsOf(path string) int {
	v, ok := w.hits.Load(path)
	if !ok {
		return 0
	}
	return *v.(*int)
}
