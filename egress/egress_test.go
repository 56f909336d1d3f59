package egress

import (
	"net/netip"
	"testing"
)

// TestDeniedRangesRowByRow checks every row of the deny table at its first
// and last address.
func TestDeniedRangesRowByRow(t *testing.T) {
	for _, r := range deniedRanges {
		first := r.prefix.Masked().Addr()
		last := lastAddr(r.prefix)
		for _, a := range []netip.Addr{first, last} {
			if _, denied := Denied(a); !denied {
				t.Errorf("%s (row %s) is not denied", a, r.name)
			}
			if err := (*Policy)(nil).Control(network(a), netip.AddrPortFrom(a, 443).String(), nil); err == nil {
				t.Errorf("dialControl lets %s (row %s) through", a, r.name)
			}
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func network(a netip.Addr) string {
	if a.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

func TestPolicyAllowPrivate(t *testing.T) {
	open, err := ParsePrefixes("127.0.0.0/8, ::1, 10.1.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{AllowPrivate: open}
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1", true}, {"::1", true}, {"10.1.2.3", true},
		{"10.2.0.1", false}, {"169.254.169.254", false}, {"192.168.1.1", false}, {"::ffff:127.0.0.1", false},
		{"93.184.215.14", true},
	} {
		err := p.Check(netip.MustParseAddr(tt.addr))
		if (err == nil) != tt.ok {
			t.Errorf("Check(%s) = %v, want ok=%v", tt.addr, err, tt.ok)
		}
	}
	if _, err := ParsePrefixes("10.0.0.0/8,nonsense"); err == nil {
		t.Error("a range that is not one was accepted")
	}
}

func TestParseURL(t *testing.T) {
	for _, tt := range []struct {
		url, reason, hostPort string
	}{
		{"https://api.example.com/v1?q=1", "", "api.example.com"},
		{"https://api.example.com:443/", "", "api.example.com"},
		{"https://API.Example.com.:8443/x", "", "api.example.com:8443"},
		{"https://[2001:4860::1]:8443/", "", "[2001:4860::1]:8443"},
		{"http://api.example.com/", ReasonNotHTTPS, ""},
		{"https://user:pw@api.example.com/", ReasonInvalidURL, ""},
		{"https://api.example.com:0/", ReasonInvalidURL, ""},
		{"https://api.example.com:65536/", ReasonInvalidURL, ""},
		{"https://api.example.com:/", ReasonInvalidURL, ""},
		{"https://2130706433/", ReasonInvalidURL, ""},
		{"https://0x7f.0.0.1/", ReasonInvalidURL, ""},
		{"/relative", ReasonInvalidURL, ""},
		{"https://a_b.example/", ReasonInvalidURL, ""},
	} {
		got, err := ParseURL(tt.url)
		switch {
		case tt.reason == "" && err != nil:
			t.Errorf("%s: %v", tt.url, err)
		case tt.reason != "" && (err == nil || err.Reason != tt.reason):
			t.Errorf("%s: got %v, want %s", tt.url, err, tt.reason)
		case tt.reason == "" && got.HostPort() != tt.hostPort:
			t.Errorf("%s: host %s, want %s", tt.url, got.HostPort(), tt.hostPort)
		}
	}
}
