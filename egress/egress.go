// Package egress is how the host reaches the outside world on behalf of
// plugins (the image proxy and capability fetches): URLs are parsed by one set
// of rules, host names resolved, and every connection checked on the address
// actually dialled, so that only public unicast is reached (or a range the
// operator opened), whatever the DNS answers.
package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"pluginhost/models"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

// Reasons of an Error.
const (
	// ReasonInvalidURL: the URL is not absolute, has userinfo, no host, a
	// host that is not a valid (IDNA) name or IP literal, or a numeric host in
	// any form but a dotted quad.
	ReasonInvalidURL = "invalid_url"
	// ReasonNotHTTPS: the scheme is not https.
	ReasonNotHTTPS = "not_https"
	// ReasonBlockedAddress: the host is, resolves to, or was about to be
	// connected to an address outside public unicast that the operator did
	// not open.
	ReasonBlockedAddress = "blocked_address"
)

// Error is a URL or an address egress refuses. Detail says what exactly,
// for logs; it never holds the URL's path or query.
type Error struct {
	Reason string
	Detail string
	Host   string
	// Addr is the address refused (ReasonBlockedAddress), when one was.
	Addr netip.Addr
}

func (e *Error) Error() string { return e.Reason + ": " + e.Detail }

func refuse(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Policy decides which addresses may be reached: public unicast, and the
// ranges the operator opened (--egress-allow-private). The zero Policy
// allows public unicast only.
type Policy struct {
	AllowPrivate []netip.Prefix
}

// ParsePrefixes reads a comma-separated list of CIDR ranges (or single
// addresses), as --egress-allow-private takes them.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR range such as 10.0.0.0/8 or an address", part)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Check refuses an address outside public unicast unless the policy opens
// its range.
func (p *Policy) Check(a netip.Addr) *Error {
	name, denied := Denied(a)
	if !denied {
		return nil
	}
	if p != nil {
		plain := a.WithZone("")
		for _, open := range p.AllowPrivate {
			if open.Contains(plain) {
				return nil
			}
		}
	}
	e := refuse(ReasonBlockedAddress, "%s is %s", a, name)
	e.Addr = a.WithZone("")
	return e
}

// Control is a net.Dialer Control: the authoritative address check. It runs
// after name resolution, on the address the socket is about to connect to,
// so a DNS answer that changed since an early check (rebinding) cannot reach
// a denied address.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return refuse(ReasonBlockedAddress, "dial-time check: network %q", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse(ReasonBlockedAddress, "dial-time check: address %q: %v", address, err)
	}
	if e := p.Check(ap.Addr()); e != nil {
		e.Detail = "dial-time check: " + e.Detail
		return e
	}
	return nil
}

// Target is a URL that passed the URL rules.
type Target struct {
	URL  *url.URL   // what is requested: scheme, normalised host and port, path, query
	Host string     // the normalised host name, or the IP literal
	Port int        // 443 unless the URL gives one
	IP   netip.Addr // the IP literal, if the host is one
}

// HostPort is the host with its port, as network.hosts lists them: the
// port only when it is not 443.
func (t *Target) HostPort() string {
	if t.Port == 443 {
		return t.Host
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// MaxURLLength bounds a URL before it is parsed.
const MaxURLLength = 2048

var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.VerifyDNSLength(true))

// ParseURL applies the URL rules: absolute https, no userinfo, a port from 1
// to 65535, a host that is an IPv6 literal, a dotted-quad IPv4 literal or a
// name valid after IDNA mapping (UTS #46, lookup profile). Numeric hosts in
// any other form (2130706433, 0x7f000001, 0177.0.0.1, 127.1) are refused as
// invalid rather than interpreted, since clients disagree on their meaning.
// One trailing dot of a name is dropped.
func ParseURL(raw string) (*Target, *Error) {
	if raw == "" || len(raw) > MaxURLLength {
		return nil, refuse(ReasonInvalidURL, "URL is empty or longer than %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL itself, which may carry a query
		}
		return nil, refuse(ReasonInvalidURL, "%v", err)
	}
	switch {
	case u.Scheme == "":
		return nil, refuse(ReasonInvalidURL, "not an absolute URL")
	case u.Scheme != "https":
		return nil, &Error{Reason: ReasonNotHTTPS, Detail: fmt.Sprintf("scheme %q; only https", u.Scheme), Host: u.Hostname()}
	case u.Opaque != "":
		return nil, refuse(ReasonInvalidURL, "opaque URL")
	}
	host := u.Hostname()
	bad := func(format string, args ...any) (*Target, *Error) {
		e := refuse(ReasonInvalidURL, format, args...)
		e.Host = host
		return nil, e
	}
	t := &Target{Port: 443}
	switch {
	case u.User != nil:
		return bad("userinfo in URL")
	case host == "":
		return bad("no host")
	case strings.HasSuffix(u.Host, ":"):
		return bad("an empty port")
	case u.Port() != "":
		p, err := strconv.Atoi(u.Port())
		if err != nil || p < 1 || p > 65535 || strings.HasPrefix(u.Port(), "0") {
			return bad("port %q", u.Port())
		}
		t.Port = p
	}
	if strings.HasPrefix(u.Host, "[") { // an IP literal, which must be IPv6
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return bad("IPv6 literal %q", host)
		}
		t.IP, t.Host = a, a.String()
	} else {
		name := strings.TrimSuffix(host, ".")
		if name == "" {
			return bad("empty host name")
		}
		ascii, err := idnaProfile.ToASCII(name)
		if err != nil {
			return bad("host name: %v", err)
		}
		if a, err := netip.ParseAddr(ascii); err == nil && a.Is4() {
			t.IP, t.Host = a, a.String()
		} else if numericHost(ascii) {
			return bad("numeric host %q is not a dotted-quad IPv4 address", ascii)
		} else if !models.IsDNSName(ascii) {
			return bad("host %q is not a DNS name", ascii)
		} else {
			t.Host = ascii
		}
	}
	hostport := t.Host
	if t.IP.Is6() {
		hostport = "[" + t.Host + "]"
	}
	if t.Port != 443 {
		hostport += ":" + strconv.Itoa(t.Port)
	}
	t.URL = &url.URL{Scheme: "https", Host: hostport, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
	return t, nil
}

// numericHost reports whether the last label of a host name is a number
// (decimal, or hex with 0x): such a host is an IPv4 address in some
// notation (WHATWG URL, inet_aton), never a DNS name.
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// Resolver resolves host names; *net.Resolver implements it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DefaultConnectTimeout bounds one TCP connect, per address.
const DefaultConnectTimeout = 5 * time.Second

// Dialer connects to hosts under a Policy. A zero field means its default.
type Dialer struct {
	Policy         *Policy       // nil: public unicast only
	Resolver       Resolver      // nil: net.DefaultResolver
	ConnectTimeout time.Duration // DefaultConnectTimeout
	// Connect replaces the last step of a dial, for tests. It receives the
	// dialer whose Control makes the authoritative address check, the
	// network ("tcp4" or "tcp6") and the address chosen. nil, which
	// production must keep, means d.DialContext(ctx, network, addr.String()).
	Connect func(ctx context.Context, d *net.Dialer, network string, addr netip.AddrPort) (net.Conn, error)
}

// Lookup returns the addresses of a host: its IP literal, or what the
// resolver answers. Addresses are unmapped only where the resolver hands
// over a 4-byte address in 16 bytes (net.IP's habit), so an IPv4-mapped
// literal stays one and is refused.
func (d *Dialer) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	answers, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	addrs := make([]netip.Addr, 0, len(answers))
	for _, ans := range answers {
		var a netip.Addr
		if v4 := ans.IP.To4(); v4 != nil {
			a = netip.AddrFrom4([4]byte(v4))
		} else if v6 := ans.IP.To16(); v6 != nil {
			a = netip.AddrFrom16([16]byte(v6))
		}
		if !a.IsValid() {
			return nil, &Error{Reason: ReasonBlockedAddress, Detail: host + " resolves to an invalid address", Host: host}
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	return addrs, nil
}

// CheckHost resolves a host and refuses it when any of its addresses is
// outside the policy: the early check, before a request is made.
func (d *Dialer) CheckHost(ctx context.Context, host string) error {
	addrs, err := d.Lookup(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if e := d.Policy.Check(a); e != nil {
			e.Host = host
			return e
		}
	}
	return nil
}

// DialContext resolves the host of address again and connects to its
// addresses in turn through a dialer whose Control refuses an address
// outside the policy on the IP actually dialled; a refusal ends the dial.
func (d *Dialer) DialContext(ctx context.Context, _, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, refuse(ReasonInvalidURL, "dial %q: %v", address, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return nil, refuse(ReasonInvalidURL, "dial %q: port", address)
	}
	addrs, err := d.Lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	timeout := d.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	nd := &net.Dialer{Timeout: timeout, Control: d.Policy.Control}
	var lastErr error
	for _, a := range addrs {
		network := "tcp4"
		if a.Is6() && !a.Is4In6() {
			network = "tcp6"
		}
		ap := netip.AddrPortFrom(a, uint16(port))
		var conn net.Conn
		if d.Connect != nil {
			conn, err = d.Connect(ctx, nd, network, ap)
		} else {
			conn, err = nd.DialContext(ctx, network, ap.String())
		}
		if err == nil {
			return conn, nil
		}
		var e *Error
		if errors.As(err, &e) {
			e.Host = host
			return nil, e
		}
		lastErr = err
	}
	return nil, lastErr
}

// RootCAs returns the system's roots, plus the certificates of a PEM file
// when one is named (--egress-ca).
func RootCAs(extraPEM string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if extraPEM == "" {
		return pool, nil
	}
	b, err := os.ReadFile(extraPEM)
	if err != nil {
		return nil, fmt.Errorf("--egress-ca: %w", err)
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--egress-ca: %s holds no PEM certificate", extraPEM)
	}
	return pool, nil
}
