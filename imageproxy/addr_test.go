package imageproxy

import (
	"net/netip"
	"strings"
	"testing"
)

// TestDeniedRange reads like issue 7: which addresses are refused, by which
// range, and that the public addresses right next to the ranges are not.
func TestDeniedRange(t *testing.T) {
	tests := []struct {
		addr string
		want string // a word of the range's name; "" for a public address
	}{
		{"0.0.0.0", "this network"},
		{"0.255.255.255", "this network"},
		{"10.0.0.1", "private"},
		{"100.64.0.0", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.255", "loopback"},
		{"169.254.169.254", "metadata"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.0.0.170", "IETF"},
		{"192.0.2.1", "TEST-NET-1"},
		{"198.51.100.1", "TEST-NET-2"},
		{"203.0.113.1", "TEST-NET-3"},
		{"192.168.0.1", "private"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"::ffff:8.8.8.8", "IPv4-mapped"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "NAT64"},
		{"64:ff9b:1::1", "NAT64"},
		{"2001::1", "Teredo"},
		{"2001:1::1", "IETF"},
		{"2001:db8::1", "documentation"},
		{"2002:7f00:1::", "6to4"},
		{"3fff::1", "documentation"},
		{"fc00::1", "unique local"},
		{"fd00:ec2::254", "unique local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf:ffff::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"100::1", "discard"},
		{"4000::1", "global unicast"},
		{"::2", "IPv4-compatible"},

		{"1.0.0.1", ""},
		{"8.8.8.8", ""},
		{"9.255.255.255", ""},
		{"11.0.0.0", ""},
		{"93.184.215.14", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"126.255.255.255", ""},
		{"128.0.0.0", ""},
		{"169.253.255.255", ""},
		{"169.255.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.0.1.255", ""},
		{"192.0.3.0", ""},
		{"192.167.255.255", ""},
		{"192.169.0.0", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"203.0.114.0", ""},
		{"223.255.255.255", ""},
		{"2001:200::1", ""},
		{"2001:4860:4860::8888", ""},
		{"2001:db9::1", ""},
		{"2003::1", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"3fff:1000::1", ""},
		{"3ffe::1", ""},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		name, denied := deniedRange(a)
		switch {
		case tt.want == "" && denied:
			t.Errorf("%s denied as %s, want allowed", tt.addr, name)
		case tt.want != "" && !denied:
			t.Errorf("%s allowed, want denied as %s", tt.addr, tt.want)
		case tt.want != "" && !strings.Contains(name, tt.want):
			t.Errorf("%s denied as %q, want %q", tt.addr, name, tt.want)
		}
		err := dialControl(network(a), netip.AddrPortFrom(a, 443).String(), nil)
		if (err == nil) != (tt.want == "") {
			t.Errorf("dialControl(%s) = %v", tt.addr, err)
		}
	}
}

func network(a netip.Addr) string {
	if a.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
