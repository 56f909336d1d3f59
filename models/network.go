package models

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Limits of a manifest's network and connections.
const (
	MaxNetworkHosts   = 16 // network.hosts entries
	MaxConnections    = 8  // connections
	MaxConnectionHost = 16 // hosts of one connection
)

// Kinds of connection.
const (
	ConnectionAPIKey = "api_key"
	ConnectionOAuth2 = "oauth2"
)

// OAuthStartPath is where the start link of an OAuth authorization points,
// on the server: a browser signed in as the user opens it (see package
// connections).
const OAuthStartPath = "/v1/oauth/start"

// Network is the manifest's network declaration: where capabilities may
// fetch.
type Network struct {
	Hosts []string `json:"hosts"`
}

// Connection is an account a plugin's capabilities use: an API key the user
// gives, or an OAuth 2 grant. The host keeps its secret and attaches it to
// fetches to its hosts.
type Connection struct {
	ID     string      `json:"id"`
	Label  string      `json:"label"`
	Kind   string      `json:"kind"`
	Hosts  []string    `json:"hosts"`
	APIKey *APIKeySpec `json:"api_key,omitempty"`
	OAuth2 *OAuth2Spec `json:"oauth2,omitempty"`
}

// APIKeySpec says how an API key is sent: in Header, as Format with {key}
// replaced by the key ("{key}" when empty).
type APIKeySpec struct {
	Header string `json:"header"`
	Format string `json:"format,omitempty"`
}

// APIKeyHeader is the header, and its value, that carry an API key of an
// api_key connection.
func (c Connection) APIKeyHeader(key string) (header, value string) {
	format := "{key}"
	if c.APIKey == nil {
		return "", ""
	}
	if c.APIKey.Format != "" {
		format = c.APIKey.Format
	}
	return c.APIKey.Header, strings.Replace(format, "{key}", key, 1)
}

// OAuth2Spec is a provider's authorization code flow.
type OAuth2Spec struct {
	AuthorizationURL string   `json:"authorization_url"`
	TokenURL         string   `json:"token_url"`
	Scopes           []string `json:"scopes,omitempty"`
}

// Connection returns the manifest's connection of an id.
func (m *Manifest) Connection(id string) (Connection, bool) {
	for _, c := range m.Connections {
		if c.ID == id {
			return c, true
		}
	}
	return Connection{}, false
}

// HostPattern is one entry of network.hosts: a DNS name, or *. and a DNS
// name (one or more labels in place of the *), and a port (443 unless
// given).
type HostPattern struct {
	Host     string // without the "*." of a wildcard
	Wildcard bool
	Port     int
}

// ParseHostPattern reads one network.hosts entry; the error says which rule
// it breaks.
func ParseHostPattern(s string) (HostPattern, error) {
	p := HostPattern{Port: 443}
	host := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.Contains(s[i+1:], "]") {
		port := s[i+1:]
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.HasPrefix(port, "0") || strings.HasPrefix(port, "+") {
			return p, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		p.Port, host = n, s[:i]
	}
	if strings.HasPrefix(host, "[") || strings.Contains(host, ":") {
		return p, fmt.Errorf("%q: an IP literal; hosts are DNS names", s)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return p, fmt.Errorf("%q: an IP literal; hosts are DNS names", s)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.Wildcard, host = true, rest
	}
	if strings.Contains(host, "*") {
		return p, fmt.Errorf("%q: a * stands only as the whole leftmost label, as in *.example.org", s)
	}
	if host != strings.ToLower(host) {
		return p, fmt.Errorf("%q: host names are written in lower case", s)
	}
	if !IsDNSName(host) || !strings.Contains(host, ".") && host != "localhost" {
		return p, fmt.Errorf("%q is not a DNS name such as api.example.com", s)
	}
	if last := host[strings.LastIndexByte(host, '.')+1:]; strings.Trim(last, "0123456789") == "" {
		return p, fmt.Errorf("%q: a numeric last label makes an IP address, not a DNS name", s)
	}
	p.Host = host
	return p, nil
}

// Matches reports whether a URL's host and port fall under the pattern.
func (p HostPattern) Matches(host string, port int) bool {
	if port != p.Port {
		return false
	}
	if p.Wildcard {
		return strings.HasSuffix(host, "."+p.Host)
	}
	return host == p.Host
}

// String is the pattern as network.hosts writes it.
func (p HostPattern) String() string {
	s := p.Host
	if p.Wildcard {
		s = "*." + s
	}
	if p.Port != 443 {
		s += ":" + strconv.Itoa(p.Port)
	}
	return s
}

// HostsAllow reports whether any of the hosts entries matches host and
// port; entries that do not parse match nothing.
func HostsAllow(hosts []string, host string, port int) bool {
	for _, h := range hosts {
		if p, err := ParseHostPattern(h); err == nil && p.Matches(host, port) {
			return true
		}
	}
	return false
}

// IsDNSName reports whether host is a DNS name of lower-case letters, digits
// and hyphens: labels of 1 to 63 characters, not starting or ending with a
// hyphen, 253 characters in all.
func IsDNSName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(host, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// forbiddenFetchHeaders are request headers a capability may not set: the
// host sets them, or they could smuggle a request or a credential.
var forbiddenFetchHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "cookie2": true, "host": true,
	"content-length": true, "transfer-encoding": true, "connection": true, "keep-alive": true,
	"upgrade": true, "te": true, "trailer": true, "proxy-connection": true, "expect": true,
	"x-forwarded-for": true, "x-forwarded-host": true, "forwarded": true,
}

// FetchHeaderAllowed reports whether a capability may send a request header
// of this name: a valid header name the host does not reserve.
func FetchHeaderAllowed(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return !forbiddenFetchHeaders[strings.ToLower(name)]
}
