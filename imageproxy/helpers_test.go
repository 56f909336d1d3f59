package imageproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The test network.
//
// Nothing here leaves this machine. Upstream image servers are real
// httptest TLS servers on loopback; the Fetcher reaches them only through
// public-looking addresses (93.184.215.0/24, 2606:2800:21f::/48) that the
// fake DNS hands out and testNet.connect maps to the loopback listener, after
// running the production dial-time Control on the public address. Every
// other address goes to the production dialer: loopback and unspecified
// addresses are really dialled (on the port of a trap listener, which counts
// what it accepts, so a Control that let one through would be seen), and
// any other address is never dialled at all: if the production Control
// passes it, it is recorded as a leak and the dial fails.

var (
	testCertOnce sync.Once
	testCert     tls.Certificate
	testRoots    *x509.CertPool
)

// testCertificate returns a self-signed certificate for the names and
// addresses the tests serve, and a pool that trusts it.
func testCertificate(t testing.TB) (tls.Certificate, *x509.CertPool) {
	testCertOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "imageproxy test"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			BasicConstraintsValid: true,
			IsCA:                  true,
			DNSNames:              []string{"example.com", "*.example.com", "*.example.org", "xn--bcher-kva.example"},
		}
		for i := 1; i < 64; i++ {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.IPv4(93, 184, 215, byte(i)))
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			panic(err)
		}
		testCert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
		testRoots = x509.NewCertPool()
		testRoots.AddCert(cert)
	})
	return testCert, testRoots
}

// trap is a loopback listener that records the connections it accepts.
type trap struct {
	ln        net.Listener
	mu        sync.Mutex
	accepted  []string // remote addresses, in the order accepted
	accounted int      // accepted connections already asserted on
}

func newTrap(t testing.TB, addr string) *trap {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	tr := &trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.mu.Lock()
			tr.accepted = append(tr.accepted, c.RemoteAddr().String())
			tr.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

func (tr *trap) port() uint16 { return uint16(tr.ln.Addr().(*net.TCPAddr).Port) }

// assertUntouched proves that no connection reached the trap since the last
// assertion.
func (tr *trap) assertUntouched(t testing.TB) { tr.assertAccepted(t, 0) }

// assertAccepted checks that want connections reached the trap since the
// last assertion. It connects once itself and waits until that sentinel is
// accepted: connections are accepted in the order they were made, so every
// earlier one has been counted by then.
func (tr *trap) assertAccepted(t testing.TB, want int) {
	t.Helper()
	c, err := net.Dial("tcp", tr.ln.Addr().String())
	if err != nil {
		t.Fatalf("sentinel dial %s: %v", tr.ln.Addr(), err)
	}
	sentinel := c.LocalAddr().String()
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tr.mu.Lock()
		i := slices.Index(tr.accepted, sentinel)
		tr.mu.Unlock()
		if i < 0 {
			continue
		}
		if got := i - tr.accounted; got != want {
			t.Errorf("trap %s accepted %d connections, want %d", tr.ln.Addr(), got, want)
		}
		tr.accounted = i + 1
		return
	}
	t.Fatalf("trap %s never accepted the sentinel", tr.ln.Addr())
}

// upstream is an image server on loopback, known to the Fetcher by a
// public-looking address.
type upstream struct {
	srv  *httptest.Server
	name string     // host name the fake DNS answers for it
	ip   netip.Addr // its public-looking address
	hits atomic.Int64
}

// url returns https://name/path.
func (u *upstream) url(path string) string { return "https://" + u.name + path }

type testNet struct {
	trap4, trap6 *trap
	leaks        atomic.Int64

	mu      sync.Mutex
	dns     map[string][][]string // successive answers per name; the last one repeats
	lookups map[string]int
	public  map[netip.AddrPort]string // public-looking address -> loopback server
	nextIP  byte
	control []string // addresses the production Control was run on
}

func newTestNet(t testing.TB) *testNet {
	return &testNet{
		trap4:   newTrap(t, "127.0.0.1:0"),
		trap6:   newTrap(t, "[::1]:0"),
		dns:     map[string][][]string{},
		lookups: map[string]int{},
		public:  map[netip.AddrPort]string{},
		nextIP:  1,
	}
}

// setDNS makes name resolve to the addresses of each answer in turn.
func (n *testNet) setDNS(name string, answers ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dns[name] = answers
}

// LookupIPAddr is the fake resolver.
func (n *testNet) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	answers, ok := n.dns[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(n.lookups[host], len(answers)-1)
	n.lookups[host]++
	var out []net.IPAddr
	for _, s := range answers[i] {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// connect is the Fetcher's Connect hook; see the comment at the top.
func (n *testNet) connect(ctx context.Context, d *net.Dialer, network string, addr netip.AddrPort) (net.Conn, error) {
	n.mu.Lock()
	target, mapped := n.public[addr]
	n.mu.Unlock()
	switch {
	case mapped:
		if err := n.runControl(d, network, addr); err != nil {
			return nil, err
		}
		plain := *d
		plain.Control = nil
		return plain.DialContext(ctx, "tcp", target)
	case addr.Addr().IsLoopback() || addr.Addr().IsUnspecified():
		port := n.trap4.port()
		if addr.Addr().Is6() && !addr.Addr().Is4In6() {
			port = n.trap6.port()
		}
		n.mu.Lock()
		n.control = append(n.control, addr.Addr().String())
		n.mu.Unlock()
		return d.DialContext(ctx, network, netip.AddrPortFrom(addr.Addr(), port).String())
	default:
		if err := n.runControl(d, network, addr); err != nil {
			return nil, err
		}
		n.leaks.Add(1)
		return nil, fmt.Errorf("testnet: %s passed the dial-time check; not dialling outside loopback", addr)
	}
}

func (n *testNet) runControl(d *net.Dialer, network string, addr netip.AddrPort) error {
	n.mu.Lock()
	n.control = append(n.control, addr.Addr().String())
	n.mu.Unlock()
	return d.Control(network, addr.String(), nil)
}

// serve starts a TLS image server known as name, resolving to the next
// public-looking address.
func (n *testNet) serve(t testing.TB, name string, h http.HandlerFunc) *upstream {
	cert, _ := testCertificate(t)
	u := &upstream{name: name}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		h(w, r)
	}))
	u.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)

	n.mu.Lock()
	u.ip = netip.AddrFrom4([4]byte{93, 184, 215, n.nextIP})
	n.nextIP++
	n.public[netip.AddrPortFrom(u.ip, 443)] = u.srv.Listener.Addr().String()
	n.mu.Unlock()
	n.setDNS(name, []string{u.ip.String()})
	return u
}

// fetcher returns a Fetcher on the test network with the given changes to
// the defaults.
func (n *testNet) fetcher(t testing.TB, change ...func(*Fetcher)) *Fetcher {
	_, roots := testCertificate(t)
	f := New()
	f.Resolver = n
	f.Connect = n.connect
	f.RootCAs = roots
	for _, c := range change {
		c(f)
	}
	return f
}

// assertNothingReached checks the traps and the leak counter.
func (n *testNet) assertNothingReached(t testing.TB) {
	t.Helper()
	n.trap4.assertUntouched(t)
	n.trap6.assertUntouched(t)
	if l := n.leaks.Load(); l != 0 {
		t.Errorf("%d non-loopback addresses passed the dial-time check", l)
	}
}

// serveBytes is a handler that answers 200 with body as contentType and its
// Content-Length, as image hosts do; an empty contentType sends no
// Content-Type at all.
func serveBytes(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType == "" {
			w.Header()["Content-Type"] = nil // no sniffing by net/http either
		} else {
			w.Header().Set("Content-Type", contentType)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantReason checks that err is a *Rejection with the reason.
func wantReason(t testing.TB, err error, reason string) *Rejection {
	t.Helper()
	var rej *Rejection
	if !errors.As(err, &rej) {
		t.Fatalf("err = %v, want a rejection with reason %s", err, reason)
	}
	if rej.Reason != reason {
		t.Fatalf("reason = %s (%s), want %s", rej.Reason, rej.Detail, reason)
	}
	return rej
}
