package egress

import "net/netip"

// deniedRanges lists every address range no host connection is made to (the image proxy, capability fetches). Only
// public unicast remains: the rows are the special-purpose ranges of the IANA
// IPv4 and IPv6 registries (RFC 6890 and successors) that the image proxy's issue named, plus
// a few neighbours that are equally never a public service. IPv6 is additionally
// limited to global unicast 2000::/3 (see globalUnicast6), so a range missing
// here outside 2000::/3 is still refused.
//
// The table is data, tested row by row in addr_test.go. Order matters only
// for the name reported: the first matching row names the range.
var deniedRanges = []struct {
	prefix netip.Prefix
	name   string
}{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/8"), "this network (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared CGNAT space (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, cloud metadata (169.254.0.0/16)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation TEST-NET-1 (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "deprecated 6to4 relay anycast (192.88.99.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation TEST-NET-2 (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation TEST-NET-3 (203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast (255.255.255.255)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},

	// IPv6.
	{netip.MustParsePrefix("::/128"), "unspecified (::)"},
	{netip.MustParsePrefix("::1/128"), "loopback (::1)"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped (::ffff:0:0/96)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (::/96)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (64:ff9b::/96)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo (2001::/32)"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (3fff::/20)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (ff00::/8)"},
}

// globalUnicast6 is the only IPv6 block handed out for public unicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Denied reports whether a is outside public unicast, and names its range.
// An IPv4-mapped IPv6 address is refused as such, whatever it embeds: no
// public service is reached by one.
func Denied(a netip.Addr) (name string, denied bool) {
	if !a.IsValid() {
		return "invalid address", true
	}
	// A zone (fe80::1%eth0) would make Prefix.Contains report false.
	a = a.WithZone("")
	for _, r := range deniedRanges {
		if r.prefix.Contains(a) {
			return r.name, true
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "outside IPv6 global unicast (2000::/3)", true
	}
	return "", false
}
