package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"pluginhost/metrics"
)

// DefaultRefetchInterval is the least time between two fetches of the keys
// for tokens that name a key the host does not know (the contract's once a
// minute): a flood of such tokens costs the issuer one request a minute.
const DefaultRefetchInterval = time.Minute

// Key fetching bounds.
const (
	// firstLoadRetry is the least time between two attempts to load the
	// keys while none has succeeded yet.
	firstLoadRetry = 5 * time.Second
	// keysMaxAge: keys older than this are fetched again in the background
	// on their next use, so that a key the issuer withdrew stops working.
	keysMaxAge = time.Hour
	// fetchTimeout bounds one fetch of the discovery document or the keys.
	fetchTimeout = 10 * time.Second
	// maxDocument bounds the discovery document and the JWKS, in bytes.
	maxDocument = 1 << 20
	// maxKeys bounds the keys kept of one JWKS.
	maxKeys = 64
)

// Discovery is what the host reads of the issuer's
// /.well-known/openid-configuration.
type Discovery struct {
	Issuer                string   `json:"issuer"`
	JWKSURI               string   `json:"jwks_uri"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	UserinfoEndpoint      string   `json:"userinfo_endpoint"`
	EndSessionEndpoint    string   `json:"end_session_endpoint"`
	TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
}

// IssuerKeys are the issuer's discovery document and signing keys, fetched
// on first need and kept: fetched again when a token names a key not among
// them (at most once per RefetchInterval, one fetch for all the tokens
// waiting), and in the background once they are an hour old. A fetch that
// fails keeps the keys known, which go on working while the issuer is down.
type IssuerKeys struct {
	// Issuer is the issuer's URL; HTTP fetches from it (nil: a client
	// with a 10 s timeout).
	Issuer string
	HTTP   *http.Client
	// RefetchInterval is the least time between two fetches for unknown
	// keys; zero is DefaultRefetchInterval.
	RefetchInterval time.Duration
	Now             func() time.Time
	Log             *slog.Logger

	mu          sync.Mutex
	discovery   *Discovery
	keys        []jose.JSONWebKey
	loadedAt    time.Time     // of the keys; zero: never loaded
	triedAt     time.Time     // the last fetch begun
	refetchedAt time.Time     // the last fetch begun for an unknown kid, once loaded
	fetching    chan struct{} // closed when the fetch under way ends
	fetchErr    error         // of the last fetch
}

func (k *IssuerKeys) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// Discovery returns the issuer's discovery document, fetching it (and the
// keys) when it was never fetched.
func (k *IssuerKeys) Discovery(ctx context.Context) (*Discovery, error) {
	k.mu.Lock()
	d := k.discovery
	k.mu.Unlock()
	if d != nil {
		return d, nil
	}
	if err := k.refresh(ctx, true); err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.discovery == nil {
		return nil, fmt.Errorf("the identity provider %s is unreachable: %v", k.Issuer, k.fetchErr)
	}
	return k.discovery, nil
}

// Key returns the key a token names by kid (or, when it names none, the
// only key fit for its algorithm), fit for the algorithm alg. An unknown kid
// fetches the keys again, when the last such fetch is older than
// RefetchInterval.
func (k *IssuerKeys) Key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	key, found, err := k.lookup(kid, alg)
	if found || err != nil {
		return key, err
	}
	if err := k.refresh(ctx, false); err != nil {
		return nil, err
	}
	key, found, err = k.lookup(kid, alg)
	if err != nil {
		return nil, err
	}
	if !found {
		k.mu.Lock()
		loaded := !k.loadedAt.IsZero()
		k.mu.Unlock()
		if !loaded {
			e := refusedError("the identity provider's keys could not be fetched; try again later")
			e.Reason = ReasonUnavailable
			return nil, e
		}
		return nil, refused("it names a key the issuer does not publish")
	}
	return key, nil
}

// lookup finds the key among those known; found reports whether the kid
// was known at all, err whether it is unfit.
func (k *IssuerKeys) lookup(kid, alg string) (*jose.JSONWebKey, bool, error) {
	k.mu.Lock()
	keys := k.keys
	if !k.loadedAt.IsZero() && k.now().Sub(k.loadedAt) >= keysMaxAge && k.fetching == nil {
		go k.run(k.begin())
	}
	k.mu.Unlock()
	var match *jose.JSONWebKey
	n := 0
	for j := range keys {
		if kid != "" && keys[j].KeyID != kid {
			continue
		}
		if kid == "" && !keyFits(&keys[j], alg) {
			continue
		}
		match = &keys[j]
		n++
	}
	switch {
	case n == 0:
		return nil, false, nil
	case n > 1 && kid == "":
		return nil, true, refused("it names no key (kid) and the issuer publishes several")
	case n > 1:
		return nil, true, refused("the issuer publishes several keys with its kid")
	}
	if !keyFits(match, alg) {
		return nil, true, refused("its algorithm %s does not fit the key it names", alg)
	}
	return match, true, nil
}

// keyFits reports whether a key may verify a signature of the algorithm.
func keyFits(key *jose.JSONWebKey, alg string) bool {
	if key.Algorithm != "" && key.Algorithm != alg {
		return false
	}
	switch p := key.Key.(type) {
	case *rsa.PublicKey:
		return alg == string(jose.RS256) && p.N.BitLen() >= MinRSABits
	case *ecdsa.PublicKey:
		return alg == string(jose.ES256) && p.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	}
	return false
}

// refresh fetches the keys, or waits for the fetch under way. Unless
// always (a first need, or the keys' age), it is a fetch for an unknown
// kid: once the keys were loaded, it fetches only when RefetchInterval has
// passed since the last fetch for an unknown kid began (before that, when
// firstLoadRetry has passed since the last attempt); otherwise it returns
// at once, the keys unchanged. The first load is not a fetch again, so a
// key rotated in soon after the start is fetched at once.
func (k *IssuerKeys) refresh(ctx context.Context, always bool) error {
	k.mu.Lock()
	if ch := k.fetching; ch != nil {
		k.mu.Unlock()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	interval, last := k.RefetchInterval, k.refetchedAt
	if interval <= 0 {
		interval = DefaultRefetchInterval
	}
	if k.loadedAt.IsZero() {
		interval, last = min(interval, firstLoadRetry), k.triedAt
	}
	if !always && !last.IsZero() && k.now().Sub(last) < interval {
		k.mu.Unlock()
		return nil
	}
	ch := k.begin()
	if !always && !k.loadedAt.IsZero() {
		k.refetchedAt = k.triedAt
	}
	k.mu.Unlock()
	k.run(ch)
	return nil
}

// begin marks a fetch under way; k.mu is held.
func (k *IssuerKeys) begin() chan struct{} {
	ch := make(chan struct{})
	k.fetching, k.triedAt = ch, k.now()
	return ch
}

// run fetches, keeps what it got, and ends the fetch under way (ch).
func (k *IssuerKeys) run(ch chan struct{}) {
	d, keys, err := k.fetch()
	metrics.IssuerKeyFetch(err)
	k.mu.Lock()
	k.fetchErr = err
	if err == nil {
		if k.loadedAt.IsZero() && k.Log != nil {
			k.Log.Info("the identity provider's keys loaded", "issuer", k.Issuer, "keys", len(keys))
		}
		k.discovery, k.keys, k.loadedAt = d, keys, k.now()
	} else if k.Log != nil {
		k.Log.Warn("auth: fetching the identity provider's keys failed; the keys known are kept", "issuer", k.Issuer, "err", err)
	}
	k.fetching = nil
	k.mu.Unlock()
	close(ch)
}

// fetch reads the discovery document and the keys it names. It runs on
// its own deadline: the request that started it may go away, the others
// waiting for it may not.
func (k *IssuerKeys) fetch() (*Discovery, []jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	var d Discovery
	if err := k.getJSON(ctx, strings.TrimSuffix(k.Issuer, "/")+"/.well-known/openid-configuration", &d); err != nil {
		return nil, nil, fmt.Errorf("discovery: %w", err)
	}
	if d.Issuer != k.Issuer {
		return nil, nil, fmt.Errorf("discovery: the document names the issuer %q, not %q", d.Issuer, k.Issuer)
	}
	for name, u := range map[string]string{"jwks_uri": d.JWKSURI, "authorization_endpoint": d.AuthorizationEndpoint,
		"token_endpoint": d.TokenEndpoint, "userinfo_endpoint": d.UserinfoEndpoint, "end_session_endpoint": d.EndSessionEndpoint} {
		if u == "" && name != "jwks_uri" {
			continue
		}
		if err := checkEndpoint(u); err != nil {
			return nil, nil, fmt.Errorf("discovery: %s: %w", name, err)
		}
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := k.getJSON(ctx, d.JWKSURI, &set); err != nil {
		return nil, nil, fmt.Errorf("keys: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) != nil || !key.Valid() || !key.IsPublic() || key.Use != "" && key.Use != "sig" {
			continue // a key of a kind the host does not use (encryption, HMAC, another curve)
		}
		if len(keys) < maxKeys {
			keys = append(keys, key)
		}
	}
	return &d, keys, nil
}

// checkEndpoint accepts an https URL, or http on a loopback address.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", raw)
	}
	if u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%q: https only (http on a loopback address)", raw)
}

func (k *IssuerKeys) client() *http.Client {
	if k.HTTP != nil {
		return k.HTTP
	}
	return &http.Client{Timeout: fetchTimeout}
}

func (k *IssuerKeys) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return err
	}
	if len(body) > maxDocument {
		return fmt.Errorf("%s answered more than %d bytes", u, maxDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %v", u, err)
	}
	return nil
}
