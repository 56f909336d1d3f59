// Package netfetch makes the requests capabilities ask for (fetch rounds)
// under the host's policy: the plugin requests the network permission and
// lists the host, the user granted the Instance the network, the URL is
// https, the address is public (or opened by the operator), the module sets
// no header the host reserves; a connection's credential is attached by the
// host, only for the connection's hosts. Every request is audited and
// counted; its answer, or why it could not be made, goes back to the module.
package netfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"pluginhost/access"
	"pluginhost/egress"
	"pluginhost/metrics"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

// Limits of one request.
const (
	MaxRequestBody  = 64 << 10 // bytes sent
	MaxResponseBody = 1 << 20  // bytes received
	maxHeaders      = 32       // headers a module may set on one request
	maxHeaderValue  = 8 << 10
)

// Errors a module may be given instead of a response.
const (
	ErrorTimeout           = "timeout"
	ErrorConnectionRefused = "connection_refused"
	ErrorTLS               = "tls"
	ErrorDNS               = "dns"
	ErrorBodyTooLarge      = "body_too_large"
	ErrorOther             = "error"
)

// methods a request may use.
var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

// Service makes the fetches of every run.
type Service struct {
	Policy *egress.Policy // nil: public unicast only
	// RootCAs verifies servers; nil is the system's roots.
	RootCAs  *x509.CertPool
	Resolver egress.Resolver // nil: the system's
	// Credentials gives the credential a fetch with a connection carries
	// (the server's connections.Service).
	Credentials Credentials
	// Storage keeps the audit trail of fetches; nil keeps none (the local
	// bench).
	Storage *storage.Service
	Log     *slog.Logger

	once   sync.Once
	dialer *egress.Dialer
	client *http.Client
}

func (s *Service) init() {
	s.dialer = &egress.Dialer{Policy: s.Policy, Resolver: s.Resolver}
	s.client = NewClient(s.dialer, s.RootCAs)
}

// NewClient returns an HTTP client that reaches hosts only through the
// egress dialer: no proxy from the environment, no redirects followed, no
// cookies, HTTP/1.1.
func NewClient(d *egress.Dialer, roots *x509.CertPool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:    5 * time.Second,
			ResponseHeaderTimeout:  10 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
			DisableCompression:     true,
			MaxIdleConns:           64,
			MaxIdleConnsPerHost:    4,
			IdleConnTimeout:        30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Client is the HTTP client of the service (for the connections' token
// endpoints, which go through the same egress).
func (s *Service) Client() *http.Client {
	s.once.Do(s.init)
	return s.client
}

// Credentials gives the header and value a fetch with a connection
// carries for an Instance, or the error that fails the run
// (connection_required); Answered hears the status the connection's
// provider answered such a fetch with (a 401 or 403 is a refusal of the
// credential).
type Credentials interface {
	Credential(ctx context.Context, t *access.Target, conn models.Connection) (header, value string, err error)
	Answered(ctx context.Context, instanceID, connection string, status int) error
}

// Run is what a run's fetches are allowed: its Instance (through the gate)
// and capability.
type Run struct {
	Target     *access.Target
	Capability string
	UserID     string
	// Refused, when set, hears each connection whose provider refused the
	// credential a fetch of the run carried (401 or 403).
	Refused func(connection string)
}

// Fetcher returns the sandbox.Fetcher of one run.
func (s *Service) Fetcher(run Run) sandbox.Fetcher {
	s.once.Do(s.init)
	return func(ctx context.Context, round int, reqs []sandbox.FetchRequest) (map[string]sandbox.FetchAnswer, error) {
		answers, err := s.round(ctx, run, reqs)
		if err != nil {
			var e *models.Error
			if errors.As(err, &e) {
				metrics.FetchRefused(e.Reason)
			}
		}
		return answers, err
	}
}

// prepared is a request that passed the policy.
type prepared struct {
	req        sandbox.FetchRequest
	target     *egress.Target
	body       []byte
	credential [2]string // header and value, when a connection is named
}

func denied(format string, args ...any) *models.Error {
	return models.CapabilityFailed(models.ReasonNetworkDenied, format, args...)
}

// named names the request and its host on an error that refuses a round:
// in extensions.request and extensions.host, and at the head of its
// message. Other errors pass unchanged.
func named(err error, r sandbox.FetchRequest, host string) error {
	var e *models.Error
	if !errors.As(err, &e) {
		return err
	}
	n := *e
	n.Request, n.Host = r.ID, host
	at := fmt.Sprintf("fetch %q", r.ID)
	if host != "" {
		at += " to " + host
	}
	n.Message = at + ": " + e.Message
	return &n
}

// hostOf is the host (and port, when not 443) a request's URL names, as far
// as it can be read: the name a refusal gives.
func hostOf(raw string) string {
	if t, e := egress.ParseURL(raw); e == nil {
		return t.HostPort()
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// PrivateHint says how an operator opens an address the policy refused
// (the range of that address alone when the refusal names one).
func PrivateHint(e *egress.Error) string {
	cidr := "CIDR"
	if e.Addr.IsValid() {
		cidr = netip.PrefixFrom(e.Addr, e.Addr.BitLen()).String()
	}
	return "a server reaches such an address only when its operator opens it with --egress-allow-private " + cidr + " (pluginhost serve or run)"
}

// check applies the policy to every request of the round before any is
// made: one refusal refuses the round, naming the request and its host.
func (s *Service) check(ctx context.Context, run Run, reqs []sandbox.FetchRequest) ([]prepared, error) {
	t := run.Target
	m := t.Manifest
	if !m.HasPermission(models.PermissionNetwork) {
		return nil, named(denied("plugin %s does not request the network permission, so its capabilities cannot fetch", t.Installation.PluginID),
			reqs[0], hostOf(reqs[0].URL))
	}
	if !t.Instance.HasGrant(models.PermissionNetwork) {
		return nil, named(denied("this Instance has no network grant: the user grants it (setInstanceGrant network) before its capabilities may fetch"),
			reqs[0], hostOf(reqs[0].URL))
	}
	var hosts []string
	if m.Network != nil {
		hosts = m.Network.Hosts
	}
	out := make([]prepared, len(reqs))
	for i, r := range reqs {
		p, err := s.prepare(ctx, t, hosts, r)
		if err != nil {
			return nil, named(err, r, hostOf(r.URL))
		}
		out[i] = p
	}
	// The early address check: a name that resolves outside the policy is
	// refused before any request is made (the dial checks again).
	for _, p := range out {
		if err := s.dialer.CheckHost(ctx, p.target.Host); err != nil {
			var e *egress.Error
			if errors.As(err, &e) {
				return nil, named(denied("%s; %s", e.Detail, PrivateHint(e)), p.req, p.target.HostPort())
			}
		}
	}
	return out, nil
}

// prepare applies the policy to one request.
func (s *Service) prepare(ctx context.Context, t *access.Target, hosts []string, r sandbox.FetchRequest) (prepared, error) {
	p := prepared{req: r}
	tgt, e := egress.ParseURL(r.URL)
	if e != nil {
		if e.Reason == egress.ReasonNotHTTPS {
			return p, denied("%s", e.Detail)
		}
		return p, denied("the URL is not one the host fetches: %s", e.Detail)
	}
	if tgt.IP.IsValid() {
		return p, denied("the host is an IP address; network.hosts lists names")
	}
	if len(hosts) == 0 {
		return p, denied("the plugin lists no network.hosts, so its capabilities fetch nowhere (network.hosts is needed only for fetches)")
	}
	if !models.HostsAllow(hosts, tgt.Host, tgt.Port) {
		return p, denied("the host is not among the plugin's network.hosts")
	}
	p.target = tgt
	method := strings.ToUpper(r.Method)
	if r.Method == "" {
		method = "GET"
	}
	if !methods[method] {
		return p, denied("method %q; one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", r.Method)
	}
	p.req.Method = method
	if len(r.Headers) > maxHeaders {
		return p, denied("%d headers; at most %d", len(r.Headers), maxHeaders)
	}
	for name, value := range r.Headers {
		if !models.FetchHeaderAllowed(name) {
			return p, denied("header %q is not the module's to set (the host sets Authorization, Cookie, Host and the headers that frame a request)", truncate(name, 64))
		}
		if len(value) > maxHeaderValue || strings.ContainsAny(value, "\r\n\x00") {
			return p, denied("the value of header %s holds a line break or is over %d bytes", name, maxHeaderValue)
		}
	}
	p.body = []byte(r.Body)
	if r.BodyEncoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(r.Body)
		if err != nil {
			return p, models.CapabilityFailed(models.ReasonBadOutput, "the body is not base64: %v", err)
		}
		p.body = b
	}
	if len(p.body) > MaxRequestBody {
		return p, denied("a body of %d bytes; at most %d", len(p.body), MaxRequestBody)
	}
	if r.Connection != "" {
		conn, ok := t.Manifest.Connection(r.Connection)
		if !ok {
			return p, denied("plugin %s declares no connection %q", t.Installation.PluginID, r.Connection)
		}
		if !models.HostsAllow(conn.Hosts, tgt.Host, tgt.Port) {
			return p, denied("connection %q is sent only to its hosts (%s), not to %s", conn.ID, strings.Join(conn.Hosts, ", "), tgt.HostPort())
		}
		if s.Credentials == nil {
			return p, models.ConnectionRequired(conn.ID, "connection %q cannot be used here", conn.ID)
		}
		header, value, err := s.Credentials.Credential(ctx, t, conn)
		if err != nil {
			return p, err
		}
		p.credential = [2]string{header, value}
	}
	return p, nil
}

// round checks and makes one round of requests, at once.
func (s *Service) round(ctx context.Context, run Run, reqs []sandbox.FetchRequest) (map[string]sandbox.FetchAnswer, error) {
	ps, err := s.check(ctx, run, reqs)
	if err != nil {
		return nil, err
	}
	answers := make([]sandbox.FetchAnswer, len(ps))
	records := make([]storage.FetchRecord, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], records[i], errs[i] = s.do(ctx, p)
		}()
	}
	wg.Wait()
	t := run.Target
	for i := range records {
		r := &records[i]
		r.UserID, r.InstallationID, r.InstanceID, r.Capability = run.UserID, t.Installation.ID, t.Instance.ID, run.Capability
	}
	if s.Storage != nil {
		if err := s.Storage.RecordFetches(context.WithoutCancel(ctx), records); err != nil && s.Log != nil {
			s.Log.Error("fetch: audit records lost", "err", err, "instance", t.Instance.ID)
		}
	}
	// What a connection's provider answered says whether it takes the
	// credential: the user is told where it is kept.
	for i, p := range ps {
		if p.req.Connection == "" || errs[i] != nil || answers[i].Status == 0 {
			continue
		}
		if s.Credentials != nil {
			if err := s.Credentials.Answered(context.WithoutCancel(ctx), t.Instance.ID, p.req.Connection, answers[i].Status); err != nil && s.Log != nil {
				s.Log.Error("fetch: a connection's answer was not recorded", "err", err, "instance", t.Instance.ID)
			}
		}
		if (answers[i].Status == http.StatusUnauthorized || answers[i].Status == http.StatusForbidden) && run.Refused != nil {
			run.Refused(p.req.Connection)
		}
	}
	out := make(map[string]sandbox.FetchAnswer, len(ps))
	for i, p := range ps {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out[p.req.ID] = answers[i]
	}
	return out, nil
}

// do makes one request. An address the policy refuses at dial time fails
// the run (network_denied); any other failure is the module's answer.
func (s *Service) do(ctx context.Context, p prepared) (sandbox.FetchAnswer, storage.FetchRecord, error) {
	begun := time.Now()
	rec := storage.FetchRecord{Host: p.target.HostPort(), Method: p.req.Method, Connection: p.req.Connection, At: begun.UTC(),
		BytesSent: int64(len(p.body))}
	finish := func(a sandbox.FetchAnswer, outcome string) (sandbox.FetchAnswer, storage.FetchRecord, error) {
		rec.Duration, rec.Outcome, rec.Status = time.Since(begun), outcome, a.Status
		metrics.Fetch(outcome, rec.Duration)
		return a, rec, nil
	}
	var body io.Reader
	if len(p.body) > 0 || p.req.Method == "POST" || p.req.Method == "PUT" || p.req.Method == "PATCH" {
		body = strings.NewReader(string(p.body))
	}
	req, err := http.NewRequestWithContext(ctx, p.req.Method, p.target.URL.String(), body)
	if err != nil {
		return finish(sandbox.FetchAnswer{Error: "the request could not be made: " + errText(err)}, ErrorOther)
	}
	for name, value := range p.req.Headers {
		req.Header.Set(name, value)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "pluginhost-fetch/1")
	}
	if p.credential[0] != "" {
		req.Header.Set(p.credential[0], p.credential[1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var e *egress.Error
		if errors.As(err, &e) {
			rec.Duration, rec.Outcome = time.Since(begun), "network_denied"
			return sandbox.FetchAnswer{}, rec, named(denied("%s; %s", e.Detail, PrivateHint(e)), p.req, rec.Host)
		}
		kind, text := Classify(ctx, err)
		return finish(sandbox.FetchAnswer{Error: text}, kind)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	rec.BytesReceived = int64(len(data))
	// A body that failed: the status and headers came, with the error.
	if err != nil {
		kind, text := Classify(ctx, err)
		return finish(sandbox.FetchAnswer{Status: resp.StatusCode, Headers: headers(resp.Header), Error: text}, kind)
	}
	if len(data) > MaxResponseBody {
		return finish(sandbox.FetchAnswer{Status: resp.StatusCode, Headers: headers(resp.Header), Error: ErrorBodyTooLarge}, ErrorBodyTooLarge)
	}
	a := sandbox.FetchAnswer{Status: resp.StatusCode, Headers: headers(resp.Header)}
	if utf8.Valid(data) {
		a.Body = string(data)
	} else {
		a.Body, a.BodyEncoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return finish(a, "ok")
}

// headers flattens the response's headers for the module: lower-case
// names, values joined; never Set-Cookie.
func headers(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		lower := strings.ToLower(name)
		if lower == "set-cookie" || lower == "set-cookie2" {
			continue
		}
		out[lower] = strings.Join(h[name], ", ")
	}
	return out
}

// caHint says how an operator makes a server trust a private certificate
// authority.
const caHint = "the server trusts a private certificate authority only when its operator adds it with --egress-ca FILE (pluginhost serve and run)"

// Classify names a transport failure for the module and the metrics: its
// kind (one of the Error* constants) and the text the module is given,
// which says what would make it work where the operator can.
func Classify(ctx context.Context, err error) (kind, text string) {
	var dns *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout():
		return ErrorTimeout, ErrorTimeout
	case errors.As(err, &dns):
		return ErrorDNS, "dns: " + dns.Err
	case errors.As(err, &recordErr):
		return ErrorTLS, "tls: the server did not answer in TLS: is the port an https one?"
	case errors.As(err, &hostErr):
		return ErrorTLS, tlsText(err)
	case errors.As(err, &certErr), errors.As(err, &unknownAuth):
		return ErrorTLS, tlsText(err) + "; " + caHint
	case strings.Contains(err.Error(), "connection refused"):
		return ErrorConnectionRefused, ErrorConnectionRefused
	case strings.Contains(err.Error(), "tls:"):
		return ErrorTLS, tlsText(err)
	}
	return ErrorOther, errText(err)
}

// tlsText is the text of a TLS failure, saying "tls:" once.
func tlsText(err error) string {
	return "tls: " + strings.Replace(errText(err), "tls: ", "", 1)
}

// errText is an error's text without the URL a *url.Error carries (its
// query may hold what the module put there).
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return truncate(err.Error(), 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
