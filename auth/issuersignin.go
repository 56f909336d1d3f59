package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"pluginhost/models"
	"pluginhost/secret"
)

// PendingTTL is how long a sign-in with the identity provider may take,
// from the button to the provider's return.
const PendingTTL = 10 * time.Minute

// DefaultScopes are the scopes a sign-in asks for.
var DefaultScopes = []string{"openid", "profile", "email"}

// IssuerSignIn signs people in to the web host with the identity provider
// (--oidc-client-id): the authorization code flow with PKCE (S256), its
// state, nonce and code verifier sealed into a cookie of the browser that
// began it (Begin), so that only that browser can finish it (Finish), and
// only once the provider's ID token carries that nonce. The user is the
// issuer's user of the ID token's subject, an admin by its claims (or, when
// the ID token lacks the admin claim, by the provider's userinfo); the web
// host session follows.
type IssuerSignIn struct {
	Issuer *Issuer
	// ClientID and ClientSecret are the server's client at the provider;
	// no secret is a public client (PKCE alone).
	ClientID, ClientSecret string
	// Scopes are asked for; nil is DefaultScopes.
	Scopes   []string
	Sessions *Sessions
	// Sealer seals the pending sign-in's cookie.
	Sealer *secret.Sealer
	// HTTP makes the token and userinfo requests (nil: a client with a
	// 10 s timeout).
	HTTP *http.Client
}

// pending is a sign-in under way, sealed in its browser's cookie.
type pending struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
	Redirect string `json:"r"`
	Expires  int64  `json:"e"`
}

const sealPending = "issuer-signin"

func randomText() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Begin starts a sign-in that returns to redirectURI and then leads to
// next: the provider's authorization URL to send the browser to, and the
// value of the cookie that binds the sign-in to the browser.
func (s *IssuerSignIn) Begin(ctx context.Context, redirectURI, next string) (authURL, cookie string, err error) {
	d, err := s.Issuer.Keys.Discovery(ctx)
	if err != nil {
		return "", "", err
	}
	if d.AuthorizationEndpoint == "" || d.TokenEndpoint == "" {
		return "", "", fmt.Errorf("the identity provider %s names no authorization or token endpoint", s.Issuer.URL)
	}
	p := pending{State: randomText(), Nonce: randomText(), Verifier: randomText(), Next: next, Redirect: redirectURI,
		Expires: time.Now().Add(PendingTTL).Unix()}
	raw, _ := json.Marshal(p)
	challenge := sha256.Sum256([]byte(p.Verifier))
	scopes := s.Scopes
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {s.ClientID},
		"redirect_uri":          {redirectURI},
		"scope":                 {strings.Join(scopes, " ")},
		"state":                 {p.State},
		"nonce":                 {p.Nonce},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(challenge[:])},
		"code_challenge_method": {"S256"},
	}
	sep := "?"
	if strings.Contains(d.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	return d.AuthorizationEndpoint + sep + q.Encode(), base64.RawURLEncoding.EncodeToString(s.Sealer.Seal(raw, sealPending)), nil
}

var errNoPending = models.Errorf(models.ErrUnauthenticated,
	"no sign-in is under way in this browser (or it took more than 10 minutes): start again from the sign-in page")

// Finish completes a sign-in in the browser whose cookie is given, with the
// provider's state and code: it returns the web host session's cookie value,
// when it ends, and where to go next. A state other than the browser's, a
// code the provider refuses (a replayed one), an ID token with another
// nonce, or one that is not valid, is UNAUTHENTICATED.
func (s *IssuerSignIn) Finish(ctx context.Context, cookie, state, code string) (session string, ends time.Time, next string, err error) {
	sealed, err := base64.RawURLEncoding.DecodeString(cookie)
	if err != nil {
		return "", time.Time{}, "", errNoPending
	}
	raw, err := s.Sealer.Open(sealed, sealPending)
	var p pending
	if err != nil || json.Unmarshal(raw, &p) != nil || time.Now().Unix() >= p.Expires {
		return "", time.Time{}, "", errNoPending
	}
	if subtle.ConstantTimeCompare([]byte(state), []byte(p.State)) != 1 {
		return "", time.Time{}, "", models.Errorf(models.ErrUnauthenticated, "the provider's answer (state) is not for the sign-in this browser began")
	}
	if code == "" {
		return "", time.Time{}, "", models.Errorf(models.ErrUnauthenticated, "the provider's answer holds no code")
	}
	idToken, accessToken, err := s.exchange(ctx, code, p)
	if err != nil {
		return "", time.Time{}, "", err
	}
	claims, err := s.Issuer.verify(ctx, idToken, []string{s.ClientID})
	if err != nil {
		return "", time.Time{}, "", models.Errorf(models.ErrUnauthenticated, "the provider's ID token is not valid: %s",
			strings.TrimPrefix(models.ErrorMessage(err), "the bearer token is not valid: "))
	}
	if subtle.ConstantTimeCompare([]byte(claims.Nonce), []byte(p.Nonce)) != 1 {
		return "", time.Time{}, "", models.Errorf(models.ErrUnauthenticated, "the provider's ID token was not issued for the sign-in this browser began (nonce)")
	}
	if azp, _ := claims.Raw["azp"].(string); azp != "" && azp != s.ClientID {
		return "", time.Time{}, "", models.Errorf(models.ErrUnauthenticated, "the provider's ID token was issued to another client (azp)")
	}
	if s.Issuer.AdminClaim != "" && !hasClaim(claims.Raw, s.Issuer.AdminClaim) && accessToken != "" {
		s.userinfo(ctx, accessToken, claims)
	}
	user, err := s.Issuer.User(ctx, claims)
	if err != nil {
		return "", time.Time{}, "", err
	}
	session, ends, err = s.Sessions.StartIssuer(ctx, user, idToken)
	return session, ends, p.Next, err
}

func hasClaim(raw map[string]any, name string) bool {
	if _, ok := raw[name]; ok {
		return true
	}
	_, ok := claimPath(raw, name)
	return ok
}

// tokenAnswer is the provider's answer to the code exchange.
type tokenAnswer struct {
	IDToken     string `json:"id_token"`
	AccessToken string `json:"access_token"`
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// exchange trades the code for the provider's tokens, with the verifier.
func (s *IssuerSignIn) exchange(ctx context.Context, code string, p pending) (idToken, accessToken string, err error) {
	d, err := s.Issuer.Keys.Discovery(ctx)
	if err != nil {
		return "", "", err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.Redirect}, "code_verifier": {p.Verifier}}
	post := s.ClientSecret != "" && len(d.TokenAuthMethods) > 0 &&
		!slices.Contains(d.TokenAuthMethods, "client_secret_basic") && slices.Contains(d.TokenAuthMethods, "client_secret_post")
	if s.ClientSecret == "" || post {
		form.Set("client_id", s.ClientID)
	}
	if post {
		form.Set("client_secret", s.ClientSecret)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if s.ClientSecret != "" && !post {
		req.SetBasicAuth(url.QueryEscape(s.ClientID), url.QueryEscape(s.ClientSecret))
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return "", "", fmt.Errorf("the identity provider's token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	var a tokenAnswer
	json.Unmarshal(body, &a)
	if resp.StatusCode != http.StatusOK {
		if a.Error != "" {
			return "", "", models.Errorf(models.ErrUnauthenticated, "the identity provider refused the sign-in's code (%s): it was used already, expired, or not issued for this browser",
				truncate(a.Error, 64))
		}
		return "", "", fmt.Errorf("the identity provider's token endpoint answered %s", resp.Status)
	}
	if a.IDToken == "" {
		return "", "", errors.New("the identity provider's token endpoint answered no ID token (is the openid scope allowed?)")
	}
	return a.IDToken, a.AccessToken, nil
}

// userinfo adds the provider's userinfo claims that the ID token lacks
// (best effort: without them the user is not an admin).
func (s *IssuerSignIn) userinfo(ctx context.Context, accessToken string, c *Claims) {
	d, err := s.Issuer.Keys.Discovery(ctx)
	if err != nil || d.UserinfoEndpoint == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.UserinfoEndpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := s.client().Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var info map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(&info) != nil {
		return
	}
	if sub, _ := info["sub"].(string); sub != c.Subject {
		return // the userinfo of another user is not this one's
	}
	for k, v := range info {
		if _, ok := c.Raw[k]; !ok {
			c.Raw[k] = v
		}
	}
}

func (s *IssuerSignIn) client() *http.Client {
	if s.HTTP != nil {
		return s.HTTP
	}
	return &http.Client{Timeout: fetchTimeout}
}

// EndURL returns where to send a browser whose issuer session ended, so
// that the provider ends its own session too, and then sends the browser
// back to returnTo: the provider's end_session_endpoint, or "" when it has
// none.
func (s *IssuerSignIn) EndURL(ctx context.Context, idToken, returnTo string) string {
	d, err := s.Issuer.Keys.Discovery(ctx)
	if err != nil || d.EndSessionEndpoint == "" {
		return ""
	}
	q := url.Values{"client_id": {s.ClientID}, "post_logout_redirect_uri": {returnTo}}
	if idToken != "" {
		q.Set("id_token_hint", idToken)
	}
	sep := "?"
	if strings.Contains(d.EndSessionEndpoint, "?") {
		sep = "&"
	}
	return d.EndSessionEndpoint + sep + q.Encode()
}
