package validator

import (
	"strings"

	"pluginhost/egress"
	"pluginhost/models"
)

// Problem codes of network and connections.
const (
	// CodeNetworkHost: a network.hosts entry that is not a DNS name (with
	// an optional leftmost * and port), or a connection host network.hosts
	// does not cover.
	CodeNetworkHost = "network_host"
)

// network checks the network declaration and returns its host entries.
// network.hosts is needed only for fetches: the network permission with no
// hosts (no network member, or no hosts in it) shows images and fetches
// nothing.
func (c *checker) network(m *object, perms map[string]bool) []string {
	v, ok := m.get("network")
	if !ok {
		return nil
	}
	if !perms[models.PermissionNetwork] {
		c.errorf("/network", CodePermissionRequired, "a network declaration requires the network permission")
	}
	n := c.object("/network", v, "hosts")
	if n == nil {
		return nil
	}
	hv, ok := n.get("hosts")
	if !ok {
		return nil
	}
	a, ok := c.array("/network/hosts", hv)
	if !ok {
		return nil
	}
	if len(a) > models.MaxNetworkHosts {
		c.errorf("/network/hosts", CodeCount, "network.hosts has %d hosts; at most %d are allowed", len(a), models.MaxNetworkHosts)
	}
	var hosts []string
	seen := map[string]bool{}
	for i, e := range a {
		p := c.ptr("/network/hosts", i)
		s, ok := c.str(p, e)
		if !ok {
			continue
		}
		hp, err := models.ParseHostPattern(s)
		if err != nil {
			c.errorf(p, CodeNetworkHost, "%v", err)
			continue
		}
		if seen[hp.String()] {
			c.errorf(p, CodeDuplicate, "host %q is listed more than once", s)
		}
		seen[hp.String()] = true
		hosts = append(hosts, s)
	}
	return hosts
}

// connections checks the connections against the network hosts.
func (c *checker) connections(m *object, perms map[string]bool, hosts []string) {
	v, ok := m.get("connections")
	if !ok {
		return
	}
	if !perms[models.PermissionNetwork] {
		c.errorf("/connections", CodePermissionRequired, "connections require the network permission and network.hosts")
	}
	a, ok := c.array("/connections", v)
	if !ok {
		return
	}
	if len(a) > models.MaxConnections {
		c.errorf("/connections", CodeCount, "%d connections; at most %d are allowed", len(a), models.MaxConnections)
	}
	ids := map[string]bool{}
	for i, e := range a {
		p := c.ptr("/connections", i)
		o := c.object(p, e, "id", "label", "kind", "hosts", "api_key", "oauth2")
		if o == nil {
			continue
		}
		if iv, ok := o.get("id"); !ok {
			c.errorf(c.ptr(p, "id"), CodeRequired, "connection id is required: a safe identifier such as github")
		} else if id, ok := c.str(c.ptr(p, "id"), iv); ok {
			switch {
			case !models.IsSafeIdentifier(id):
				c.errorf(c.ptr(p, "id"), CodeFormat, "%q is not a safe identifier: a lower-case letter, then lower-case letters, digits or _, at most 64 characters", id)
			case ids[id]:
				c.errorf(c.ptr(p, "id"), CodeDuplicate, "connection %q is declared more than once", id)
			}
			ids[id] = true
		}
		if lv, ok := o.get("label"); !ok {
			c.errorf(c.ptr(p, "label"), CodeRequired, "label is required: what the user is asked to connect, such as GitHub")
		} else if l, ok := c.str(c.ptr(p, "label"), lv); ok && (strings.TrimSpace(l) == "" || len([]rune(l)) > 100) {
			c.errorf(c.ptr(p, "label"), CodeFormat, "label must have 1 to 100 characters")
		}
		kind := ""
		if kv, ok := o.get("kind"); !ok {
			c.errorf(c.ptr(p, "kind"), CodeRequired, "kind is required: %s or %s", models.ConnectionAPIKey, models.ConnectionOAuth2)
		} else {
			kind, _ = c.enum(c.ptr(p, "kind"), kv, models.ConnectionAPIKey, models.ConnectionOAuth2)
		}
		c.connectionHosts(p, o, hosts)
		switch kind {
		case models.ConnectionAPIKey:
			if o.has("oauth2") {
				c.errorf(c.ptr(p, "oauth2"), CodeFormat, "oauth2 is for a connection of kind oauth2")
			}
			c.apiKey(p, o)
		case models.ConnectionOAuth2:
			if o.has("api_key") {
				c.errorf(c.ptr(p, "api_key"), CodeFormat, "api_key is for a connection of kind api_key")
			}
			c.oauth2(p, o)
		}
	}
}

func (c *checker) connectionHosts(p string, o *object, hosts []string) {
	hv, ok := o.get("hosts")
	if !ok {
		c.errorf(c.ptr(p, "hosts"), CodeRequired, "hosts is required: the hosts of network.hosts the credential is sent to")
		return
	}
	a, ok := c.array(c.ptr(p, "hosts"), hv)
	if !ok {
		return
	}
	if len(a) < 1 || len(a) > models.MaxConnectionHost {
		c.errorf(c.ptr(p, "hosts"), CodeCount, "hosts has %d entries; 1 to %d are allowed", len(a), models.MaxConnectionHost)
	}
	for j, e := range a {
		hp := c.ptr(p, "hosts", j)
		s, ok := c.str(hp, e)
		if !ok {
			continue
		}
		pat, err := models.ParseHostPattern(s)
		if err != nil {
			c.errorf(hp, CodeNetworkHost, "%v", err)
			continue
		}
		covered := false
		for _, h := range hosts {
			if h == s || !pat.Wildcard && models.HostsAllow([]string{h}, pat.Host, pat.Port) {
				covered = true
			}
		}
		if !covered {
			c.errorf(hp, CodeNetworkHost, "%q is not among network.hosts: a connection's hosts are a subset of them, so list it there too", s)
		}
	}
}

func (c *checker) apiKey(p string, o *object) {
	v, ok := o.get("api_key")
	if !ok {
		c.errorf(c.ptr(p, "api_key"), CodeRequired, "api_key is required for kind api_key: {header, format}, such as {\"header\": \"Authorization\", \"format\": \"Bearer {key}\"}")
		return
	}
	k := c.object(c.ptr(p, "api_key"), v, "header", "format")
	if k == nil {
		return
	}
	if hv, ok := k.get("header"); !ok {
		c.errorf(c.ptr(p, "api_key", "header"), CodeRequired, "header is required: the request header that carries the key")
	} else if h, ok := c.str(c.ptr(p, "api_key", "header"), hv); ok {
		lower := strings.ToLower(h)
		if lower != "authorization" && !models.FetchHeaderAllowed(h) {
			c.errorf(c.ptr(p, "api_key", "header"), CodeFormat, "%q cannot carry a key: a header name other than Host, Cookie and the headers that frame a request", h)
		}
	}
	if fv, ok := k.get("format"); ok {
		if f, ok := c.str(c.ptr(p, "api_key", "format"), fv); ok && (strings.Count(f, "{key}") != 1 || len(f) > 200 || strings.ContainsAny(f, "\r\n")) {
			c.errorf(c.ptr(p, "api_key", "format"), CodeFormat, "format must hold {key} once, such as \"Bearer {key}\", on one line of at most 200 characters")
		}
	}
}

func (c *checker) oauth2(p string, o *object) {
	v, ok := o.get("oauth2")
	if !ok {
		c.errorf(c.ptr(p, "oauth2"), CodeRequired, "oauth2 is required for kind oauth2: {authorization_url, token_url, scopes}")
		return
	}
	k := c.object(c.ptr(p, "oauth2"), v, "authorization_url", "token_url", "scopes")
	if k == nil {
		return
	}
	for _, f := range []string{"authorization_url", "token_url"} {
		uv, ok := k.get(f)
		if !ok {
			c.errorf(c.ptr(p, "oauth2", f), CodeRequired, "%s is required: the provider's https URL", f)
			continue
		}
		if u, ok := c.str(c.ptr(p, "oauth2", f), uv); ok {
			if _, err := egress.ParseURL(u); err != nil {
				c.errorf(c.ptr(p, "oauth2", f), CodeFormat, "%q is not an https URL: %s", u, err.Detail)
			}
		}
	}
	if sv, ok := k.get("scopes"); ok {
		if a, ok := c.array(c.ptr(p, "oauth2", "scopes"), sv); ok {
			if len(a) > 32 {
				c.errorf(c.ptr(p, "oauth2", "scopes"), CodeCount, "%d scopes; at most 32 are allowed", len(a))
			}
			for j, e := range a {
				if s, ok := c.str(c.ptr(p, "oauth2", "scopes", j), e); ok && (s == "" || len(s) > 200 || strings.ContainsAny(s, " \t\r\n\"\\")) {
					c.errorf(c.ptr(p, "oauth2", "scopes", j), CodeFormat, "a scope is 1 to 200 characters without spaces or quotes")
				}
			}
		}
	}
}
