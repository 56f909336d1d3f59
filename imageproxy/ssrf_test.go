package imageproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestSSRF runs the attempts to reach something other than a public image
// host. Every one is refused with its reason, and none reaches a listener:
// the loopback traps accept nothing and no other address passes the
// dial-time check.
func TestSSRF(t *testing.T) {
	n := newTestNet(t)
	png := readTestdata(t, "basn6a08.png")
	public := n.serve(t, "img.example.com", serveBytes("image/png", png))
	other := n.serve(t, "other.example.com", serveBytes("image/png", png))
	redirectTo := func(location string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, location, http.StatusFound) }
	}
	n.serve(t, "redirect-internal.example.com", redirectTo("https://127.0.0.1/image.png"))
	n.serve(t, "redirect-metadata.example.com", redirectTo("https://169.254.169.254/latest/meta-data/"))
	n.serve(t, "redirect-public.example.com", redirectTo(other.url("/image.png")))
	n.serve(t, "redirect-http.example.com", redirectTo("http://img.example.com/image.png"))
	moved := n.serve(t, "moved.example.com", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", other.url("/image.png"))
		w.WriteHeader(http.StatusPermanentRedirect)
	})

	n.setDNS("metadata.google.internal", []string{"169.254.169.254"})
	n.setDNS("internal.example.com", []string{"10.1.2.3"})
	n.setDNS("router.example.com", []string{"192.168.1.1"})
	n.setDNS("cgnat.example.com", []string{"100.64.0.1"})
	n.setDNS("localhost", []string{"127.0.0.1", "::1"})
	n.setDNS("mixed.example.com", []string{"93.184.215.200", "127.0.0.1"})
	n.setDNS("ula.example.com", []string{"fd00:ec2::254"})
	n.setDNS("nat64.example.com", []string{"64:ff9b::a9fe:a9fe"})
	n.setDNS("docs6.example.com", []string{"2001:db8::1"})
	n.setDNS("mapped.example.com", []string{"::ffff:10.0.0.1"})
	// Rebinding: a public answer for the early check, loopback for the dial.
	n.setDNS("rebind.example.com", []string{public.ip.String()}, []string{"127.0.0.1"})
	n.setDNS("rebind6.example.com", []string{public.ip.String()}, []string{"::1"})
	n.setDNS("rebind-unspecified.example.com", []string{public.ip.String()}, []string{"0.0.0.0"})
	n.setDNS("rebind-metadata.example.com", []string{public.ip.String()}, []string{"169.254.169.254"})

	tests := []struct {
		name, url, reason string
	}{
		// Numeric host forms are refused, never interpreted.
		{"decimal IPv4", "https://2130706433/", ReasonInvalidURL},
		{"octal IPv4", "https://0177.0.0.1/", ReasonInvalidURL},
		{"hex IPv4", "https://0x7f000001/", ReasonInvalidURL},
		{"hex-dotted IPv4", "https://0x7f.0.0.1/", ReasonInvalidURL},
		{"short IPv4 127.1", "https://127.1/", ReasonInvalidURL},
		{"short IPv4 127.0.1", "https://127.0.1/", ReasonInvalidURL},
		{"zero", "https://0/", ReasonInvalidURL},
		{"five parts", "https://1.2.3.4.5/", ReasonInvalidURL},
		{"percent-encoded IPv4", "https://%31%32%37.0.0.1/", ReasonInvalidURL},

		// IPv4 literals outside public unicast.
		{"loopback", "https://127.0.0.1/", ReasonBlockedAddress},
		{"loopback 127.255.255.254", "https://127.255.255.254/", ReasonBlockedAddress},
		{"loopback with port 443", "https://127.0.0.1:443/", ReasonBlockedAddress},
		{"loopback with trailing dot", "https://127.0.0.1./", ReasonBlockedAddress},
		{"fullwidth loopback (IDNA maps it)", "https://１２７．０．０．１/", ReasonBlockedAddress},
		{"unspecified", "https://0.0.0.0/", ReasonBlockedAddress},
		{"private 10/8", "https://10.0.0.1/", ReasonBlockedAddress},
		{"private 172.16/12", "https://172.31.255.255/", ReasonBlockedAddress},
		{"private 192.168/16", "https://192.168.1.1/", ReasonBlockedAddress},
		{"CGNAT 100.64/10", "https://100.64.0.1/", ReasonBlockedAddress},
		{"CGNAT top", "https://100.127.255.254/", ReasonBlockedAddress},
		{"metadata", "https://169.254.169.254/latest/meta-data/", ReasonBlockedAddress},
		{"IETF 192.0.0/24", "https://192.0.0.170/", ReasonBlockedAddress},
		{"TEST-NET-1", "https://192.0.2.1/", ReasonBlockedAddress},
		{"TEST-NET-2", "https://198.51.100.7/", ReasonBlockedAddress},
		{"TEST-NET-3", "https://203.0.113.9/", ReasonBlockedAddress},
		{"benchmarking 198.18/15", "https://198.19.0.1/", ReasonBlockedAddress},
		{"multicast", "https://224.0.0.1/", ReasonBlockedAddress},
		{"reserved 240/4", "https://240.0.0.1/", ReasonBlockedAddress},
		{"broadcast", "https://255.255.255.255/", ReasonBlockedAddress},

		// IPv6 literals.
		{"IPv6 loopback", "https://[::1]/", ReasonBlockedAddress},
		{"IPv6 unspecified", "https://[::]/", ReasonBlockedAddress},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/", ReasonBlockedAddress},
		{"IPv4-mapped loopback, hex", "https://[::ffff:7f00:1]/", ReasonBlockedAddress},
		{"IPv4-mapped metadata", "https://[::ffff:169.254.169.254]/", ReasonBlockedAddress},
		{"IPv4-mapped public", "https://[::ffff:93.184.215.1]/", ReasonBlockedAddress},
		{"IPv4-compatible", "https://[::127.0.0.1]/", ReasonBlockedAddress},
		{"NAT64", "https://[64:ff9b::7f00:1]/", ReasonBlockedAddress},
		{"local NAT64", "https://[64:ff9b:1::a00:1]/", ReasonBlockedAddress},
		{"6to4", "https://[2002:7f00:1::]/", ReasonBlockedAddress},
		{"Teredo", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", ReasonBlockedAddress},
		{"link-local", "https://[fe80::1]/", ReasonBlockedAddress},
		{"link-local with zone", "https://[fe80::1%25eth0]/", ReasonInvalidURL},
		{"unique local", "https://[fc00::1]/", ReasonBlockedAddress},
		{"AWS IPv6 metadata", "https://[fd00:ec2::254]/", ReasonBlockedAddress},
		{"site-local", "https://[fec0::1]/", ReasonBlockedAddress},
		{"IPv6 multicast", "https://[ff02::1]/", ReasonBlockedAddress},
		{"IPv6 documentation", "https://[2001:db8::1]/", ReasonBlockedAddress},
		{"IPv6 documentation 3fff::/20", "https://[3fff::1]/", ReasonBlockedAddress},
		{"IPv6 outside 2000::/3", "https://[4000::1]/", ReasonBlockedAddress},
		{"IPv4 in brackets", "https://[127.0.0.1]/", ReasonInvalidURL},

		// Names whose answers are not public.
		{"metadata name", "https://metadata.google.internal/computeMetadata/v1/", ReasonBlockedAddress},
		{"name resolving to 10/8", "https://internal.example.com/a.png", ReasonBlockedAddress},
		{"name resolving to 192.168/16", "https://router.example.com/a.png", ReasonBlockedAddress},
		{"name resolving to CGNAT", "https://cgnat.example.com/a.png", ReasonBlockedAddress},
		{"localhost", "https://localhost/a.png", ReasonBlockedAddress},
		{"localhost with trailing dot", "https://localhost./a.png", ReasonBlockedAddress},
		{"upper-case localhost", "https://LOCALHOST/a.png", ReasonBlockedAddress},
		{"one public, one loopback answer", "https://mixed.example.com/a.png", ReasonBlockedAddress},
		{"name resolving to ULA", "https://ula.example.com/a.png", ReasonBlockedAddress},
		{"name resolving to NAT64 metadata", "https://nat64.example.com/a.png", ReasonBlockedAddress},
		{"name resolving to IPv6 documentation", "https://docs6.example.com/a.png", ReasonBlockedAddress},
		{"name resolving to IPv4-mapped private", "https://mapped.example.com/a.png", ReasonBlockedAddress},

		// DNS rebinding: the early check sees a public address, the
		// dial-time Control the loopback one.
		{"rebinding to 127.0.0.1", "https://rebind.example.com/a.png", ReasonBlockedAddress},
		{"rebinding to ::1", "https://rebind6.example.com/a.png", ReasonBlockedAddress},
		{"rebinding to 0.0.0.0", "https://rebind-unspecified.example.com/a.png", ReasonBlockedAddress},
		{"rebinding to metadata", "https://rebind-metadata.example.com/a.png", ReasonBlockedAddress},

		// Userinfo and fragment tricks: the host is what RFC 3986 says.
		{"userinfo before internal host", "https://img.example.com@127.0.0.1/", ReasonInvalidURL},
		{"userinfo with password", "https://user:pass@img.example.com/a.png", ReasonInvalidURL},
		{"fragment hiding @", "https://127.0.0.1#@img.example.com/", ReasonBlockedAddress},
		{"backslash before @", "https://img.example.com\\@127.0.0.1/", ReasonInvalidURL},

		// Ports, schemes, shapes.
		{"port 8443", "https://img.example.com:8443/a.png", ReasonInvalidURL},
		{"port 80", "https://img.example.com:80/a.png", ReasonInvalidURL},
		{"port 0443", "https://img.example.com:0443/a.png", ReasonInvalidURL},
		{"empty port", "https://img.example.com:/a.png", ReasonInvalidURL},
		{"http", "http://img.example.com/a.png", ReasonNotHTTPS},
		{"http to loopback", "http://127.0.0.1/", ReasonNotHTTPS},
		{"ftp", "ftp://img.example.com/a.png", ReasonNotHTTPS},
		{"file", "file:///etc/passwd", ReasonNotHTTPS},
		{"gopher", "gopher://127.0.0.1:70/_GET", ReasonNotHTTPS},
		{"data", "data:image/png;base64,iVBORw0KGgo=", ReasonNotHTTPS},
		{"javascript", "javascript:alert(1)", ReasonNotHTTPS},
		{"scheme-relative", "//127.0.0.1/a.png", ReasonInvalidURL},
		{"relative", "/a.png", ReasonInvalidURL},
		{"no host", "https:///a.png", ReasonInvalidURL},
		{"host of one dot", "https://./a.png", ReasonInvalidURL},
		{"host of two trailing dots", "https://img.example.com../a.png", ReasonInvalidURL},
		{"IDNA name that is not valid", "https://xn--a.example.com/a.png", ReasonInvalidURL},
		{"opaque https", "https:img.example.com", ReasonInvalidURL},
		{"underscore in name", "https://img_1.example.com/a.png", ReasonInvalidURL},
		{"too long", "https://img.example.com/" + strings.Repeat("a", maxURLLength), ReasonInvalidURL},

		// Redirects are never followed, wherever they point.
		{"redirect to loopback", "https://redirect-internal.example.com/a.png", ReasonRedirect},
		{"redirect to metadata", "https://redirect-metadata.example.com/a.png", ReasonRedirect},
		{"redirect to public", "https://redirect-public.example.com/a.png", ReasonRedirect},
		{"redirect to http", "https://redirect-http.example.com/a.png", ReasonRedirect},
		{"308 to public", "https://moved.example.com/a.png", ReasonRedirect},
	}
	f := n.fetcher(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := f.Fetch(context.Background(), tt.url)
			if img != nil {
				t.Fatalf("fetched %s: %d bytes", tt.url, len(img.Bytes))
			}
			rej := wantReason(t, err, tt.reason)
			if strings.HasPrefix(tt.name, "rebinding") && !strings.HasPrefix(rej.Detail, "dial-time check:") {
				t.Errorf("detail = %q, want the dial-time check to have refused it", rej.Detail)
			}
		})
	}
	if len(tests) < 40 {
		t.Errorf("%d attempts, want at least 40", len(tests))
	}
	n.assertNothingReached(t)
	if h := other.hits.Load(); h != 0 {
		t.Errorf("redirect target was requested %d times", h)
	}
	if h := public.hits.Load(); h != 0 {
		t.Errorf("the public server behind the rebinding names was requested %d times", h)
	}
	if h := moved.hits.Load(); h != 1 {
		t.Errorf("moved.example.com: %d requests, want 1", h)
	}

	// The same Fetcher reaches a public host: the refusals above are not
	// because nothing can be fetched.
	img, err := f.Fetch(context.Background(), public.url("/ok.png"))
	if err != nil || img.Format != formatPNG {
		t.Fatalf("public fetch: %v", err)
	}
}

// TestDialControlRefusesBeforeConnect dials the loopback traps directly
// through a dialer with the production Control: the Control receives the
// address about to be connected and refuses it, so the trap accepts
// nothing. The same dial without the Control does reach the trap, which
// shows the trap would have counted it.
func TestDialControlRefusesBeforeConnect(t *testing.T) {
	n := newTestNet(t)
	for _, tr := range []*trap{n.trap4, n.trap6} {
		addr := tr.ln.Addr().String()
		network := "tcp4"
		if strings.HasPrefix(addr, "[") {
			network = "tcp6"
		}
		d := &net.Dialer{Control: dialControl}
		conn, err := d.Dial(network, addr)
		if err == nil {
			conn.Close()
			t.Fatalf("dial %s with the dial-time check: connected", addr)
		}
		rej := wantReason(t, err, ReasonBlockedAddress)
		if !strings.Contains(rej.Detail, "loopback") {
			t.Errorf("detail = %q, want it to name the loopback range", rej.Detail)
		}
		tr.assertUntouched(t)

		conn, err = (&net.Dialer{}).Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		tr.assertAccepted(t, 1)
	}
}

// TestDialRefusesWithoutTheEarlyCheck calls the transport's dial function
// itself, skipping the early check of Fetch: the dial-time Control alone
// refuses every denied address.
func TestDialRefusesWithoutTheEarlyCheck(t *testing.T) {
	n := newTestNet(t)
	n.setDNS("loopback.example.com", []string{"127.0.0.1"})
	f := n.fetcher(t)
	for _, addr := range []string{"127.0.0.1:443", "[::1]:443", "0.0.0.0:443", "[::]:443", "[::ffff:127.0.0.1]:443",
		"loopback.example.com:443", "169.254.169.254:443", "10.0.0.1:443", "[fd00:ec2::254]:443", "[fe80::1%lo]:443"} {
		conn, err := f.dial(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
			t.Fatalf("dial %s: connected", addr)
		}
		rej := wantReason(t, err, ReasonBlockedAddress)
		if !strings.HasPrefix(rej.Detail, "dial-time check:") {
			t.Errorf("dial %s: detail %q, want the dial-time check", addr, rej.Detail)
		}
	}
	n.assertNothingReached(t)
}

func TestDialControlNetworks(t *testing.T) {
	for _, tt := range []struct {
		network, address string
		ok               bool
	}{
		{"tcp4", "93.184.215.14:443", true},
		{"tcp6", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", true},
		{"udp4", "93.184.215.14:443", false},
		{"unix", "/run/docker.sock", false},
		{"tcp4", "not-an-address", false},
		{"tcp6", "[fe80::1%eth0]:443", false},
	} {
		err := dialControl(tt.network, tt.address, nil)
		if (err == nil) != tt.ok {
			t.Errorf("dialControl(%s, %s) = %v, want ok=%v", tt.network, tt.address, err, tt.ok)
		}
		if err != nil {
			var rej *Rejection
			if !errors.As(err, &rej) || rej.Reason != ReasonBlockedAddress {
				t.Errorf("dialControl(%s, %s) = %v, want blocked_address", tt.network, tt.address, err)
			}
		}
	}
}

// TestFetchIDNAHost: host names are IDNA-mapped (UTS #46) before they are
// resolved and sent, so the name that is checked is the name that is used.
func TestFetchIDNAHost(t *testing.T) {
	n := newTestNet(t)
	png := readTestdata(t, "basn6a08.png")
	n.serve(t, "xn--bcher-kva.example", serveBytes("image/png", png))
	n.serve(t, "img.example.com", serveBytes("image/png", png))
	f := n.fetcher(t)
	for _, u := range []string{
		"https://bücher.example/a.png",
		"https://BÜCHER.example/a.png",
		"https://xn--bcher-kva.example/a.png",
		"https://ｉｍｇ．ｅｘａｍｐｌｅ．ｃｏｍ/a.png",
		"https://IMG.Example.COM./a.png",
	} {
		if _, err := f.Fetch(context.Background(), u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for name := range n.lookups {
		if name != "xn--bcher-kva.example" && name != "img.example.com" {
			t.Errorf("resolved %q, want only the mapped names", name)
		}
	}
}
