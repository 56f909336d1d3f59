package auth

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"pluginhost/metrics"
	"pluginhost/models"
)

// Identity is who a credential proves the caller is, and until when.
type Identity struct {
	User *models.User
	// Ends is when the credential stops being accepted (a token's expiry, a
	// JWT's exp, a session's end); zero: never. What it opened (a
	// websocket) ends then.
	Ends time.Time
	// Credential is the bearer credential presented (a server token or an
	// issuer's JWT) or the server token a session stands for; "" for a
	// session signed in with the issuer. Pages keep it out of their answers
	// and hand it to what they open; a server token's revocation closes
	// what it opened.
	Credential string
}

// Method is one way a caller proves who they are: the server's own tokens
// (Service), the issuer's JWTs (Issuer) and the web host's sessions
// (Sessions). Verify returns the identity a credential proves; a credential
// that proves none is UNAUTHENTICATED.
type Method interface {
	Verify(ctx context.Context, credential string) (Identity, error)
}

// known is a Method that remembers credentials it verified: Known answers
// without I/O, or reports false.
type known interface {
	Method
	Known(credential string) (Identity, bool)
}

// Authenticator is where every request is authenticated, by whichever
// Method its credential is for; handlers and websockets ask it for the
// caller and never read credentials themselves. It applies the bounds of
// Attempts to every bearer credential and form sign-in.
type Authenticator struct {
	// Tokens are the server's own tokens; Issuer, when set, the operator's
	// identity provider; Sessions, when set, the web host's sign-ins.
	Tokens   *Service
	Issuer   *Issuer
	Sessions *Sessions
	// Attempts bounds failed sign-in attempts; nil: unbounded.
	Attempts *Attempts
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client's address (see ClientAddress).
	TrustedProxies []netip.Prefix
}

var errNoCredential = models.Errorf(models.ErrUnauthenticated, "a valid bearer token is required (Authorization: Bearer <token>)")

// method returns the method a bearer credential is for: the server's
// tokens by their prefix, the issuer's JWTs by their form.
func (a *Authenticator) method(credential string) known {
	if a.Issuer != nil && !strings.HasPrefix(credential, TokenPrefix) && LooksLikeJWT(credential) {
		return a.Issuer
	}
	return a.Tokens
}

// Bearer authenticates a bearer credential (a server token or an issuer's
// JWT) presented from a client address (ClientAddress).
func (a *Authenticator) Bearer(ctx context.Context, client, credential string) (Identity, error) {
	m := a.method(credential)
	limit := a.Attempts.Allow(client)
	if limit.Address > 0 {
		return Identity{}, refusal(limit.Address, "address")
	}
	if id, ok := m.Known(credential); ok {
		return id, nil
	}
	if limit.Overall > 0 {
		return Identity{}, refusal(limit.Overall, "overall")
	}
	id, err := m.Verify(ctx, credential)
	if err != nil {
		a.failed(client, err)
	}
	return id, err
}

// failed counts a refused credential in /metrics and toward the client's
// attempts. A JWT refused only for its time (expired, not yet valid) is the
// issuer's own token arriving late or early, not a guess, and one refused
// because the issuer's keys could not be fetched is no fault of the
// client's: neither counts toward the attempts.
func (a *Authenticator) failed(client string, err error) {
	var e *models.Error
	if models.ErrorCode(err) != models.ErrUnauthenticated {
		return
	}
	metrics.SignInRefused("invalid")
	if errors.As(err, &e) && (e.Reason == ReasonTime || e.Reason == ReasonUnavailable) {
		return
	}
	a.Attempts.Fail(client)
}

// Reasons of refusals that are not counted as failed attempts: a JWT
// refused only for its time (exp, nbf, iat), and one that could not be
// checked because the issuer's keys could not be fetched.
const (
	ReasonTime        = "token_time"
	ReasonUnavailable = "issuer_unavailable"
)

// Request authenticates an API request by its bearer header.
func (a *Authenticator) Request(r *http.Request) (Identity, error) {
	credential, ok := FromHeader(r.Header.Get("Authorization"))
	if !ok {
		return Identity{}, errNoCredential
	}
	return a.Bearer(r.Context(), ClientAddress(r, a.TrustedProxies), credential)
}

// Presented is the credential a page request carried.
type Presented int

// What a page request carried.
const (
	PresentedNone    Presented = iota // nothing
	PresentedBearer                   // a bearer header or HTTP Basic
	PresentedSession                  // the web host's session cookie
)

// Page authenticates a page request: a bearer header, HTTP Basic with any
// user name and the credential as the password (a browser cannot send a
// bearer header when it opens a page), or the web host's session cookie.
// It also says what the request carried, so that a page can send a person
// without one to sign in.
func (a *Authenticator) Page(r *http.Request) (Identity, Presented, error) {
	credential, ok := FromHeader(r.Header.Get("Authorization"))
	if !ok {
		_, credential, ok = r.BasicAuth()
	}
	if ok {
		id, err := a.Bearer(r.Context(), ClientAddress(r, a.TrustedProxies), credential)
		return id, PresentedBearer, err
	}
	if c, err := r.Cookie(models.SessionCookie); err == nil && a.Sessions != nil {
		id, err := a.Sessions.Verify(r.Context(), c.Value)
		return id, PresentedSession, err
	}
	return Identity{}, PresentedNone, errNoCredential
}

// SignIn starts a web host session with a server token given to the
// sign-in form, counted as an attempt of the request's client: it returns
// the session cookie's value and when the session ends.
func (a *Authenticator) SignIn(r *http.Request, token string) (string, time.Time, error) {
	client := ClientAddress(r, a.TrustedProxies)
	limit := a.Attempts.Allow(client)
	if limit.Address > 0 {
		return "", time.Time{}, refusal(limit.Address, "address")
	}
	if _, ok := a.Tokens.Known(token); !ok && limit.Overall > 0 {
		return "", time.Time{}, refusal(limit.Overall, "overall")
	}
	value, _, ends, err := a.Sessions.Start(r.Context(), token)
	if err != nil {
		a.failed(client, err)
	}
	return value, ends, err
}

// Failed counts a refused sign-in of the request's client that did not go
// through Bearer or SignIn (the identity provider's return).
func (a *Authenticator) Failed(r *http.Request, err error) {
	a.failed(ClientAddress(r, a.TrustedProxies), err)
}

// Limited reports whether the request's client must wait before another
// sign-in attempt, as the error to answer.
func (a *Authenticator) Limited(r *http.Request) error {
	if l := a.Attempts.Allow(ClientAddress(r, a.TrustedProxies)); l.Address > 0 {
		return refusal(l.Address, "address")
	}
	return nil
}
