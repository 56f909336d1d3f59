package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"
	"gorm.io/gorm"

	"pluginhost/database"
	"pluginhost/models"
)

// Leeway is how far a JWT's exp, nbf and iat may be off the server's clock
// (the contract's 60 s): a token is accepted until exp plus Leeway, from
// nbf less Leeway, and with an iat up to Leeway ahead.
const Leeway = 60 * time.Second

// MaxJWTLength bounds a JWT the server reads, in bytes.
const MaxJWTLength = 16 << 10

// Algorithms are the only signature algorithms accepted, each with its key
// type: RS256 with an RSA key of at least MinRSABits, ES256 with a P-256
// key, EdDSA with an Ed25519 key. `none` and the HMAC algorithms are
// refused: a key the issuer publishes is public, never a shared secret.
var Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// MinRSABits is the smallest RSA key accepted.
const MinRSABits = 2048

// Issuer accepts the JWTs of the operator's OpenID Connect issuer as
// credentials (--oidc-issuer, --oidc-audience). A token is accepted when it
// is a compact JWS signed with RS256, ES256 or EdDSA by a key of the
// issuer's JWKS, its iss is exactly URL, its aud holds one of Audiences,
// and its exp, nbf and iat hold within Leeway. Its user is (issuer, sub),
// made on its first valid token and named by preferred_username, name or
// email; whether the user is an admin is decided by AdminClaim on every
// token. A verified token is remembered until it expires, so that a busy
// client costs neither a signature check nor a database read per request.
type Issuer struct {
	// URL is the issuer, as its tokens' iss and its discovery document's
	// issuer say it, exactly.
	URL string
	// Audiences are the aud values accepted: a token must name one.
	Audiences []string
	// AdminClaim and AdminValue make admins of the users whose claim
	// equals AdminValue or, as a list (or an object's keys), contains it.
	// A claim name is looked up whole, then as a dotted path into nested
	// objects (realm_access.roles). Empty: no user is an admin by claim.
	AdminClaim, AdminValue string
	DB                     *database.DB
	// Keys are the issuer's discovery document and signing keys.
	Keys *IssuerKeys
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	Log *slog.Logger

	mu         sync.Mutex
	cache      map[string]verified // by the token itself: no hash to compute per request
	cacheBytes int
}

// maxCachedJWTBytes bounds the tokens remembered, by their length.
const maxCachedJWTBytes = 32 << 20

// verified is a token remembered after its verification.
type verified struct {
	id    Identity
	until time.Time // exp + Leeway
}

// CheckIssuerURL checks an issuer URL as --oidc-issuer takes it: https, or
// http on a loopback address (tests and local development), without a
// query or fragment.
func CheckIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an issuer URL (https://HOST[/PATH])", raw)
	}
	if len(raw) > 255 {
		return fmt.Errorf("an issuer URL has at most 255 characters")
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("issuer %q: http is allowed only on a loopback address (localhost, 127.0.0.1, ::1); use https", raw)
	}
	return fmt.Errorf("issuer %q: the scheme must be https", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (i *Issuer) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

// LooksLikeJWT reports whether a credential has the shape of a compact JWS,
// three parts separated by dots, cheaply: whether the parts are base64url
// is found when the token is read.
func LooksLikeJWT(s string) bool {
	return len(s) <= MaxJWTLength && strings.Count(s, ".") == 2
}

// Known returns the identity of a token verified before and not yet
// expired, without I/O.
func (i *Issuer) Known(token string) (Identity, bool) {
	i.mu.Lock()
	v, ok := i.cache[token]
	i.mu.Unlock()
	if !ok || !i.now().Before(v.until) {
		return Identity{}, false
	}
	return v.id, true
}

// Verify checks a JWT of the issuer and returns its user (made on its
// first valid token), with Ends at its exp.
func (i *Issuer) Verify(ctx context.Context, token string) (Identity, error) {
	if id, ok := i.Known(token); ok {
		return id, nil
	}
	c, err := i.verify(ctx, token, i.Audiences)
	if err != nil {
		return Identity{}, err
	}
	user, err := i.User(ctx, c)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{User: user, Ends: c.Expiry, Credential: token}
	i.mu.Lock()
	if i.cache == nil || len(i.cache) >= maxCached || i.cacheBytes+len(token) > maxCachedJWTBytes {
		i.cache, i.cacheBytes = map[string]verified{}, 0
	}
	if _, ok := i.cache[token]; !ok {
		i.cacheBytes += len(token)
	}
	i.cache[token] = verified{id: id, until: c.Expiry.Add(Leeway)}
	i.mu.Unlock()
	return id, nil
}

// Claims are what the host reads of a verified token.
type Claims struct {
	Subject string
	Expiry  time.Time
	Nonce   string
	// Raw are all the token's claims, for the name and the admin claim.
	Raw map[string]any
}

// refused is the error of a token that is not accepted.
func refused(format string, args ...any) error {
	return refusedError(format, args...)
}

func refusedError(format string, args ...any) *models.Error {
	return models.Errorf(models.ErrUnauthenticated, "the bearer token is not valid: "+format, args...)
}

// refusedTime is the error of a token refused only for its time.
func refusedTime(format string, args ...any) error {
	e := models.Errorf(models.ErrUnauthenticated, "the bearer token is not valid: "+format, args...)
	e.Reason = ReasonTime
	return e
}

// header is what the host reads of a token's protected header before
// anything else.
type header struct {
	Alg  string          `json:"alg"`
	Kid  *string         `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

// verify checks a token's form, signature and claims, for one of the
// audiences.
func (i *Issuer) verify(ctx context.Context, token string, audiences []string) (*Claims, error) {
	if !LooksLikeJWT(token) || !base64URLParts(token) {
		return nil, refused("it is not a JWT")
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(token[:strings.IndexByte(token, '.')])
	var h header
	if err != nil || json.Unmarshal(rawHeader, &h) != nil {
		return nil, refused("its header does not decode")
	}
	if !acceptedAlgorithm(h.Alg) {
		return nil, refused("the algorithm %q is not accepted (RS256, ES256 or EdDSA only)", truncate(h.Alg, 16))
	}
	if h.Crit != nil {
		return nil, refused("it has critical header parameters, which the host does not understand")
	}
	sig, err := jose.ParseSignedCompact(token, Algorithms)
	if err != nil || len(sig.Signatures) != 1 {
		return nil, refused("it does not parse as a signed JWT")
	}
	kid := ""
	if h.Kid != nil {
		kid = *h.Kid
	}
	key, err := i.Keys.Key(ctx, kid, h.Alg)
	if err != nil {
		return nil, err
	}
	payload, err := sig.Verify(key.Key)
	if err != nil {
		return nil, refused("its signature does not verify with the issuer's key")
	}
	return i.checkClaims(payload, audiences)
}

// base64URLParts reports whether every character of a token is base64url
// or a dot.
func base64URLParts(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func acceptedAlgorithm(alg string) bool {
	for _, a := range Algorithms {
		if string(a) == alg {
			return true
		}
	}
	return false
}

// checkClaims checks iss, sub, aud, exp, nbf and iat.
func (i *Issuer) checkClaims(payload []byte, audiences []string) (*Claims, error) {
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var raw map[string]any
	if err := d.Decode(&raw); err != nil {
		return nil, refused("its claims are not a JSON object")
	}
	if iss, _ := raw["iss"].(string); iss != i.URL {
		return nil, refused("its issuer (iss) is not %s", i.URL)
	}
	sub, _ := raw["sub"].(string)
	if sub == "" || len(sub) > 255 {
		return nil, refused("its subject (sub) must have 1 to 255 characters")
	}
	if !audienceOK(raw["aud"], audiences) {
		return nil, refused("its audience (aud) names none of %s", strings.Join(audiences, ", "))
	}
	now := i.now()
	exp, ok, err := numericDate(raw, "exp")
	switch {
	case err != nil:
		return nil, refused("exp: %v", err)
	case !ok:
		return nil, refused("it has no expiry (exp)")
	case now.After(exp.Add(Leeway)):
		return nil, refusedTime("it expired at %s", models.FormatTime(exp))
	}
	if nbf, ok, err := numericDate(raw, "nbf"); err != nil {
		return nil, refused("nbf: %v", err)
	} else if ok && now.Before(nbf.Add(-Leeway)) {
		return nil, refusedTime("it is not valid before %s (nbf)", models.FormatTime(nbf))
	}
	if iat, ok, err := numericDate(raw, "iat"); err != nil {
		return nil, refused("iat: %v", err)
	} else if ok && now.Before(iat.Add(-Leeway)) {
		return nil, refusedTime("it was issued in the future (iat %s)", models.FormatTime(iat))
	}
	nonce, _ := raw["nonce"].(string)
	return &Claims{Subject: sub, Expiry: exp, Nonce: nonce, Raw: raw}, nil
}

func audienceOK(aud any, accepted []string) bool {
	has := func(s string) bool {
		for _, a := range accepted {
			if s == a {
				return true
			}
		}
		return false
	}
	switch v := aud.(type) {
	case string:
		return has(v)
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && has(s) {
				return true
			}
		}
	}
	return false
}

// numericDate reads a NumericDate claim (seconds since the epoch, maybe
// with a fraction).
func numericDate(raw map[string]any, name string) (time.Time, bool, error) {
	v, ok := raw[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false, errors.New("not a number")
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > 1<<40 {
		return time.Time{}, false, errors.New("out of range")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

// Admin reports whether a token's claims make its user an admin.
func (i *Issuer) Admin(raw map[string]any) bool {
	if i.AdminClaim == "" {
		return false
	}
	v, ok := raw[i.AdminClaim]
	if !ok {
		v, ok = claimPath(raw, i.AdminClaim)
	}
	if !ok {
		return false
	}
	return claimHolds(v, i.AdminValue)
}

// claimPath looks a dotted name up in nested objects.
func claimPath(raw map[string]any, name string) (any, bool) {
	var cur any = raw
	for part := range strings.SplitSeq(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// claimHolds reports whether a claim's value equals want or, as a list or
// an object, contains it (as an element or a key).
func claimHolds(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == want {
				return true
			}
		}
	case map[string]any:
		_, ok := v[want]
		return ok
	case bool:
		return fmt.Sprint(v) == want
	case json.Number:
		return v.String() == want
	}
	return false
}

// UserName is the name of an issuer's user: preferred_username, name or
// email, the first that is set, else the subject; cut to
// MaxUserNameLength characters, without control characters.
func UserName(raw map[string]any, sub string) string {
	for _, k := range []string{"preferred_username", "name", "email"} {
		if s, ok := raw[k].(string); ok {
			if s = cleanName(s); s != "" {
				return s
			}
		}
	}
	return cleanName(sub)
}

func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > MaxUserNameLength {
		s = string([]rune(s)[:MaxUserNameLength])
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// User returns the user of verified claims, made on its first valid
// token; its name and admin flag follow the newest token's claims.
func (i *Issuer) User(ctx context.Context, c *Claims) (*models.User, error) {
	name := UserName(c.Raw, c.Subject)
	admin := i.Admin(c.Raw)
	var row database.UserRow
	for range 2 {
		err := i.DB.Write.WithContext(ctx).Where("issuer = ? AND subject = ?", i.URL, c.Subject).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			row = database.UserRow{ID: models.NewID(models.PrefixUser), Name: name, Admin: admin, Issuer: i.URL, Subject: c.Subject,
				CreatedAt: i.now().UnixMicro()}
			err = database.Retry(ctx, func() error { return i.DB.Write.WithContext(ctx).Create(&row).Error })
			if database.IsDuplicate(err) {
				continue // made at the same time by another request: read it
			}
			if err == nil && i.Log != nil {
				i.Log.Info("user of the identity provider made on its first token", "user", row.ID, "admin", admin)
			}
		}
		if err != nil {
			return nil, err
		}
		if row.Name != name || row.Admin != admin {
			row.Name, row.Admin = name, admin
			err := database.Retry(ctx, func() error {
				return i.DB.Write.WithContext(ctx).Model(&database.UserRow{}).Where("id = ?", row.ID).
					Updates(map[string]any{"name": name, "admin": admin}).Error
			})
			if err != nil {
				return nil, err
			}
		}
		return row.Model(), nil
	}
	return nil, fmt.Errorf("user of issuer subject: made and not found")
}
