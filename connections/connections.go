// Package connections keeps the accounts plugins use (the manifest's
// connections): an API key the user gives, or an OAuth 2 grant made with the
// authorization code flow and PKCE. Secrets are sealed at rest, belong to one
// Instance and one connection, and leave the host only attached to a fetch to
// one of the connection's hosts; nothing else (the module, the UI, the AI,
// logs, the audit trail) ever sees them.
package connections

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
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"gorm.io/gorm"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/egress"
	"pluginhost/models"
	"pluginhost/netfetch"
	"pluginhost/secret"
)

// Limits and lifetimes.
const (
	// StateLifetime is how long an authorization link may be used.
	StateLifetime = 10 * time.Minute
	// MaxAPIKeyBytes bounds an API key.
	MaxAPIKeyBytes = 4096
	// StartPath is the start link startOAuth answers, on this server: a
	// browser signed in as the user who asked opens it, and is sent on to
	// the provider.
	StartPath = models.OAuthStartPath
	// CallbackPath is where providers send the user back.
	CallbackPath = "/v1/oauth/callback"
	// StateCookie binds an authorization to the browser that opened its
	// start link: set by StartPath, required by CallbackPath (HttpOnly,
	// SameSite=Lax, so that it comes back on the provider's redirect).
	StateCookie = "pluginhost_oauth"
	// StateCookiePath is the cookie's path: the start link and the
	// callback, nothing else.
	StateCookiePath = "/v1/oauth/"
	// refreshAhead is how long before it expires an access token is
	// refreshed.
	refreshAhead = 30 * time.Second
	// maxTokenAnswer bounds a token endpoint's answer.
	maxTokenAnswer = 64 << 10
)

// Service keeps the connections of every Instance.
type Service struct {
	DB     *database.DB
	Gate   *access.Gate
	Sealer *secret.Sealer
	// HTTP reaches the providers' token endpoints (through egress, as
	// fetches do).
	HTTP *http.Client
	Log  *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu         sync.Mutex
	refreshing map[string]*sync.Mutex
}

// Status is one connection of an Instance as the user sees it: never its
// secret.
type Status struct {
	ID        string
	Label     string
	Kind      string
	Connected bool
	Account   string
	ExpiresAt *time.Time
	// RefusedStatus is the HTTP status (401 or 403) with which the
	// provider last refused the credential, and RefusedAt when; 0 and nil
	// while it accepts it.
	RefusedStatus int
	RefusedAt     *time.Time
}

// secretValue is what a credential seals.
type secretValue struct {
	Key          string `json:"key,omitempty"`
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	TokenType    string `json:"token_type,omitempty"`
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func sealContext(instanceID, connection string) string { return instanceID + "/" + connection }

// declared returns the connection of the target's manifest.
func declared(t *access.Target, id string) (models.Connection, error) {
	c, ok := t.Manifest.Connection(id)
	if !ok {
		return c, models.Errorf(models.ErrInvalid, "plugin %s declares no connection %q", t.Installation.PluginID, id)
	}
	return c, nil
}

// List returns the connections the target's manifest declares, each with
// whether this Instance has it connected.
//
// An OAuth connection whose client was set for other URLs than the
// manifest's (the package changed them since) is not connected: it cannot
// be used until an admin sets the client again.
func (s *Service) List(ctx context.Context, t *access.Target) ([]Status, error) {
	if len(t.Manifest.Connections) == 0 {
		return []Status{}, nil
	}
	var rows []database.CredentialRow
	if err := s.DB.Read.WithContext(ctx).Select("name", "account", "expires_at", "kind", "refused_at", "refused_status").
		Where("instance_id = ?", t.Instance.ID).Find(&rows).Error; err != nil {
		return nil, err
	}
	byName := map[string]database.CredentialRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	var clients []database.OAuthClientRow
	if err := s.DB.Read.WithContext(ctx).Select("connection", "authorization_url", "token_url").
		Where("plugin_id = ?", t.Installation.PluginID).Find(&clients).Error; err != nil {
		return nil, err
	}
	usable := map[string]bool{}
	for _, cl := range clients {
		if c, ok := t.Manifest.Connection(cl.Connection); ok && boundTo(cl, c) == nil {
			usable[c.ID] = true
		}
	}
	out := make([]Status, 0, len(t.Manifest.Connections))
	for _, c := range t.Manifest.Connections {
		st := Status{ID: c.ID, Label: c.Label, Kind: c.Kind}
		if r, ok := byName[c.ID]; ok && r.Kind == c.Kind && (c.Kind != models.ConnectionOAuth2 || usable[c.ID]) {
			st.Connected, st.Account = true, r.Account
			if r.ExpiresAt > 0 {
				at := time.UnixMicro(r.ExpiresAt).UTC()
				st.ExpiresAt = &at
			}
			if r.RefusedStatus != 0 {
				at := time.UnixMicro(r.RefusedAt).UTC()
				st.RefusedStatus, st.RefusedAt = r.RefusedStatus, &at
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// ConnectAPIKey keeps an API key for a connection of kind api_key of the
// caller's enabled Instance, replacing the one it had.
func (s *Service) ConnectAPIKey(ctx context.Context, c models.Caller, instanceID, connection, key string) (*Status, error) {
	t, err := s.Gate.Open(ctx, c, instanceID, access.Use)
	if err != nil {
		return nil, err
	}
	conn, err := declared(t, connection)
	if err != nil {
		return nil, err
	}
	if conn.Kind != models.ConnectionAPIKey {
		return nil, models.Errorf(models.ErrInvalid, "connection %q is connected through OAuth (startOAuth), not with a key", connection)
	}
	key = strings.TrimSpace(key)
	switch {
	case key == "":
		return nil, models.Errorf(models.ErrInvalid, "the key is empty")
	case len(key) > MaxAPIKeyBytes:
		return nil, models.Errorf(models.ErrInvalid, "the key has %d bytes; at most %d are allowed", len(key), MaxAPIKeyBytes)
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return nil, models.Errorf(models.ErrInvalid, "the key holds a control character (a line break?); paste it alone")
	}
	if err := s.store(ctx, t, conn, secretValue{Key: key}, "", 0); err != nil {
		return nil, err
	}
	return &Status{ID: conn.ID, Label: conn.Label, Kind: conn.Kind, Connected: true}, nil
}

// store keeps a connection's sealed secret, replacing the Instance's
// earlier one.
func (s *Service) store(ctx context.Context, t *access.Target, conn models.Connection, v secretValue, account string, expiresAt int64) error {
	plain, _ := json.Marshal(v)
	now := s.now().UnixMicro()
	row := database.CredentialRow{
		ID: models.NewID(models.PrefixCredential), InstallationID: t.Installation.ID, InstanceID: t.Instance.ID, UserID: t.Installation.UserID,
		Name: conn.ID, Kind: conn.Kind, Secret: s.Sealer.Seal(plain, sealContext(t.Instance.ID, conn.ID)),
		Account: truncate(account, 200), ExpiresAt: expiresAt, CreatedAt: now, UpdatedAt: now,
	}
	return s.DB.Transact(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("instance_id = ? AND name = ?", t.Instance.ID, conn.ID).Delete(&database.CredentialRow{}).Error; err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
}

// Disconnect deletes a connection's secret and its authorizations under
// way. An Instance that is disabled may be disconnected too.
func (s *Service) Disconnect(ctx context.Context, c models.Caller, instanceID, connection string) error {
	t, err := s.Gate.Open(ctx, c, instanceID, access.Manage)
	if err != nil {
		return err
	}
	if _, err := declared(t, connection); err != nil {
		return err
	}
	return s.DB.Transact(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("instance_id = ? AND name = ?", instanceID, connection).Delete(&database.CredentialRow{}).Error; err != nil {
			return err
		}
		return tx.Where("instance_id = ? AND connection = ?", instanceID, connection).Delete(&database.OAuthStateRow{}).Error
	})
}

// SetOAuthClient sets the operator's OAuth client of a plugin's connection;
// admins only. The client is bound to the connection's authorization_url and
// token_url as the newest package of the plugin installed on this server
// names them, and is sent to no other URL: a later package that changes
// either leaves the connection unusable until an admin sets the client
// again.
func (s *Service) SetOAuthClient(ctx context.Context, admin *models.User, pluginID, connection, clientID, clientSecret string) error {
	if admin == nil || !admin.Admin {
		return models.Errorf(models.ErrForbidden, "only an admin sets OAuth clients")
	}
	switch {
	case !models.IsDottedIdentifier(pluginID):
		return models.Errorf(models.ErrInvalid, "%q is not a plugin id", pluginID)
	case !models.IsSafeIdentifier(connection):
		return models.Errorf(models.ErrInvalid, "%q is not a connection id", connection)
	case clientID == "" || len(clientID) > 512 || strings.IndexFunc(clientID, unicode.IsControl) >= 0:
		return models.Errorf(models.ErrInvalid, "clientId must be 1 to 512 characters without control characters")
	case len(clientSecret) > 4096 || strings.IndexFunc(clientSecret, unicode.IsControl) >= 0:
		return models.Errorf(models.ErrInvalid, "clientSecret must be at most 4096 characters without control characters")
	}
	m, version, err := s.installedManifest(ctx, pluginID)
	if err != nil {
		return err
	}
	conn, ok := m.Connection(connection)
	if !ok || conn.Kind != models.ConnectionOAuth2 || conn.OAuth2 == nil {
		return models.Errorf(models.ErrInvalid, "plugin %s %s, as installed, declares no OAuth connection %q", pluginID, version, connection)
	}
	row := database.OAuthClientRow{PluginID: pluginID, Connection: connection, ClientID: clientID,
		ClientSecret: s.Sealer.Seal([]byte(clientSecret), "client/"+pluginID+"/"+connection), UpdatedAt: s.now().UnixMicro(),
		AuthorizationURL: conn.OAuth2.AuthorizationURL, TokenURL: conn.OAuth2.TokenURL}
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("plugin_id = ? AND connection = ?", pluginID, connection).Delete(&database.OAuthClientRow{}).Error; err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		return err
	}
	s.log().Info("oauth client set", "plugin", pluginID, "connection", connection, "version", version,
		"authorization_url", conn.OAuth2.AuthorizationURL, "token_url", conn.OAuth2.TokenURL, "by", admin.ID)
	return nil
}

// installedManifest returns the manifest of the newest version of a plugin
// installed on this server (by any user) signed by the key that owns the
// plugin id, and that version.
func (s *Service) installedManifest(ctx context.Context, pluginID string) (*models.Manifest, string, error) {
	owned := s.DB.Read.WithContext(ctx).Model(&database.PluginOwnerRow{}).Select("publisher_key_id").Where("plugin_id = ?", pluginID)
	var versions []string
	if err := s.DB.Read.WithContext(ctx).Model(&database.InstallationRow{}).Distinct("version").
		Where("plugin_id = ? AND status = ? AND publisher_key_id IN (?)", pluginID, models.InstallationInstalled, owned).Pluck("version", &versions).Error; err != nil {
		return nil, "", err
	}
	if len(versions) == 0 {
		return nil, "", models.Errorf(models.ErrInvalid, "plugin %s is not installed on this server: a client is bound to the URLs its installed manifest names, so set it once the plugin is installed", pluginID)
	}
	newest := versions[0]
	for _, v := range versions[1:] {
		if models.CompareVersions(v, newest) > 0 {
			newest = v
		}
	}
	var row database.InstallationRow
	if err := s.DB.Read.WithContext(ctx).Select("id", "manifest").Where("plugin_id = ? AND status = ? AND version = ? AND publisher_key_id IN (?)",
		pluginID, models.InstallationInstalled, newest, owned).Order("updated_at DESC, id").Take(&row).Error; err != nil {
		return nil, "", err
	}
	instl, err := row.Model()
	if err != nil {
		return nil, "", err
	}
	return instl.Manifest, newest, nil
}

// oauthClient is the operator's client of a connection, with the URLs it
// is bound to.
type oauthClient struct {
	id, secret                 string
	authorizationURL, tokenURL string
}

// boundTo refuses a client row for a connection whose manifest names other
// URLs than the ones the client was set for.
func boundTo(row database.OAuthClientRow, conn models.Connection) error {
	switch {
	case conn.OAuth2 == nil:
		return fmt.Errorf("connection %q is not an OAuth connection", conn.ID)
	case row.TokenURL != conn.OAuth2.TokenURL:
		return fmt.Errorf("its OAuth client was set for the token URL %s, and the installed package names %s", row.TokenURL, conn.OAuth2.TokenURL)
	case row.AuthorizationURL != conn.OAuth2.AuthorizationURL:
		return fmt.Errorf("its OAuth client was set for the authorization URL %s, and the installed package names %s", row.AuthorizationURL, conn.OAuth2.AuthorizationURL)
	}
	return nil
}

// clientFor returns the operator's client of a connection as the target's
// manifest declares it: only when the manifest names the URLs the client was
// set for. unusable makes the error of a client that is missing or bound to
// other URLs.
func (s *Service) clientFor(ctx context.Context, pluginID string, conn models.Connection, unusable func(format string, args ...any) error) (*oauthClient, error) {
	var row database.OAuthClientRow
	err := s.DB.Read.WithContext(ctx).Where("plugin_id = ? AND connection = ?", pluginID, conn.ID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, unusable("the server has no OAuth client for connection %q of plugin %s: an admin sets one (setOAuthClient)", conn.ID, pluginID)
	}
	if err != nil {
		return nil, err
	}
	if err := boundTo(row, conn); err != nil {
		return nil, unusable("connection %q of plugin %s cannot be used: %v; an admin sets the client again (setOAuthClient) to send it there", conn.ID, pluginID, err)
	}
	plain, err := s.Sealer.Open(row.ClientSecret, "client/"+pluginID+"/"+conn.ID)
	if err != nil {
		return nil, err
	}
	return &oauthClient{id: row.ClientID, secret: string(plain), authorizationURL: row.AuthorizationURL, tokenURL: row.TokenURL}, nil
}

// invalid is the error of a connection that cannot start an authorization.
func invalid(format string, args ...any) error {
	return models.Errorf(models.ErrInvalid, format, args...)
}

// required is the error of a run whose connection cannot be used.
func required(format string, args ...any) error {
	return models.CapabilityFailed(models.ReasonConnectionRequired, format, args...)
}

// StartOAuth begins the authorization of an oauth2 connection of the
// caller's enabled Instance and returns its start link on this server
// (baseURL + StartPath), to be opened, once and within StateLifetime, in a
// browser signed in as the caller (Begin).
func (s *Service) StartOAuth(ctx context.Context, c models.Caller, instanceID, connection, baseURL string) (string, error) {
	t, err := s.Gate.Open(ctx, c, instanceID, access.Use)
	if err != nil {
		return "", err
	}
	conn, err := declared(t, connection)
	if err != nil {
		return "", err
	}
	if conn.Kind != models.ConnectionOAuth2 || conn.OAuth2 == nil {
		return "", models.Errorf(models.ErrInvalid, "connection %q takes a key (connectApiKey), not OAuth", connection)
	}
	if _, err := s.clientFor(ctx, t.Installation.PluginID, conn, invalid); err != nil {
		return "", err
	}
	link := randomToken(32)
	base := strings.TrimRight(baseURL, "/")
	now := s.now()
	row := database.OAuthStateRow{
		State: stateKey(link), InstallationID: t.Installation.ID, UserID: c.UserID, InstanceID: instanceID, Connection: connection,
		RedirectURI: base + CallbackPath, CreatedAt: now.UnixMicro(), ExpiresAt: now.Add(StateLifetime).UnixMicro(),
	}
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		// Links and states of this Instance that expired are dropped as new
		// ones come.
		if err := tx.Where("instance_id = ? AND expires_at < ?", instanceID, now.UnixMicro()).Delete(&database.OAuthStateRow{}).Error; err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		return "", err
	}
	return base + StartPath + "?" + url.Values{"link": {link}}.Encode(), nil
}

// ErrOtherUser is wrapped by Begin's error for a link another user
// started: the browser is asked to sign in as that user.
var ErrOtherUser = errors.New("the link was started by another user")

// Begin opens a start link in a browser signed in as userID, whose state
// cookie is browser (a random value the browser keeps): the link is taken
// (once), and the authorization goes on as the provider's state, bound to
// the user, the Instance and the browser, expiring after StateLifetime. It
// returns the provider's authorization URL to send the browser to. A link
// of another user is refused (wrapping ErrOtherUser) and stays usable.
func (s *Service) Begin(ctx context.Context, userID, link, browser string) (string, error) {
	if link == "" || browser == "" {
		return "", models.Errorf(models.ErrInvalid, "this authorization link is incomplete: connect again from the app")
	}
	var start database.OAuthStateRow
	err := s.DB.Read.WithContext(ctx).Where("state = ? AND browser = ?", stateKey(link), "").Take(&start).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", models.Errorf(models.ErrInvalid, "this authorization link is unknown or was used already: connect again from the app")
	}
	if err != nil {
		return "", err
	}
	now := s.now()
	switch {
	case start.UserID != userID:
		return "", fmt.Errorf("%w: %w", ErrOtherUser, models.Errorf(models.ErrPermissionDenied, "this authorization link was started by another user: sign in as the user who started it, then open the link again"))
	case now.UnixMicro() > start.ExpiresAt:
		return "", models.Errorf(models.ErrInvalid, "this authorization link expired (they last %v): connect again from the app", StateLifetime)
	}
	t, err := s.Gate.Open(ctx, models.Caller{UserID: start.UserID}, start.InstanceID, access.Use)
	if err != nil {
		return "", err
	}
	conn, err := declared(t, start.Connection)
	if err != nil || conn.OAuth2 == nil {
		return "", models.Errorf(models.ErrInvalid, "the plugin no longer declares OAuth connection %q", start.Connection)
	}
	client, err := s.clientFor(ctx, t.Installation.PluginID, conn, invalid)
	if err != nil {
		return "", err
	}
	state, verifier := randomToken(32), randomToken(48)
	row := start
	row.State, row.Browser = stateKey(state), stateKey(browser)
	row.Verifier = s.Sealer.Seal([]byte(verifier), "state/"+start.InstanceID+"/"+start.Connection)
	row.CreatedAt, row.ExpiresAt = now.UnixMicro(), now.Add(StateLifetime).UnixMicro()
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		res := tx.Where("state = ? AND browser = ?", start.State, "").Delete(&database.OAuthStateRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return gorm.ErrRecordNotFound // taken by a concurrent opening
		}
		return tx.Create(&row).Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", models.Errorf(models.ErrInvalid, "this authorization link is unknown or was used already: connect again from the app")
	}
	if err != nil {
		return "", err
	}
	u, err := url.Parse(client.authorizationURL)
	if err != nil {
		return "", err
	}
	challenge := sha256.Sum256([]byte(verifier))
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", client.id)
	q.Set("redirect_uri", row.RedirectURI)
	q.Set("state", state)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(challenge[:]))
	q.Set("code_challenge_method", "S256")
	if len(conn.OAuth2.Scopes) > 0 {
		q.Set("scope", strings.Join(conn.OAuth2.Scopes, " "))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// NewBrowserValue returns a fresh value for a browser's state cookie.
func NewBrowserValue() string { return randomToken(32) }

// stateKey is how a link, a state or a browser's cookie is kept: its hash,
// so that the table holds nothing a reader could use.
func stateKey(state string) string {
	h := sha256.Sum256([]byte(state))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func randomToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Callback completes an authorization: it goes on only in the browser that
// opened the start link (its state cookie is browser) and, when the request
// that brought the user back is signed in (the web host's session is
// SameSite=Strict and does not come back on the provider's redirect; a
// bearer header may), as the user who started it. Then the state is taken
// (once), the code exchanged for tokens with the verifier at the token URL
// the client is bound to, and the tokens sealed for the Instance. A refusal
// before the state is taken leaves it to the right browser. It returns the
// Instance and the connection.
func (s *Service) Callback(ctx context.Context, userID, browser, state, code, providerError string) (instanceID, connection string, err error) {
	if state == "" {
		return "", "", models.Errorf(models.ErrInvalid, "the provider sent the user back without a state")
	}
	unknown := models.Errorf(models.ErrInvalid, "this authorization is unknown or was completed already: connect again")
	var row database.OAuthStateRow
	err = s.DB.Read.WithContext(ctx).Where("state = ?", stateKey(state)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && row.Browser == "" {
		return "", "", unknown
	}
	if err != nil {
		return "", "", err
	}
	switch {
	case browser == "" || subtle.ConstantTimeCompare([]byte(stateKey(browser)), []byte(row.Browser)) != 1:
		return "", "", models.Errorf(models.ErrPermissionDenied, "this authorization was started in another browser: finish it in the browser that started it, or connect again from this one")
	case userID != "" && userID != row.UserID:
		return "", "", models.Errorf(models.ErrPermissionDenied, "this authorization was started by another user")
	}
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		res := tx.Where("state = ? AND browser = ?", row.State, row.Browser).Delete(&database.OAuthStateRow{})
		if res.Error == nil && res.RowsAffected != 1 {
			return gorm.ErrRecordNotFound // taken by a concurrent callback
		}
		return res.Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", "", unknown
	}
	if err != nil {
		return "", "", err
	}
	if s.now().UnixMicro() > row.ExpiresAt {
		return row.InstanceID, row.Connection, models.Errorf(models.ErrInvalid, "this authorization expired (they last %v): connect again", StateLifetime)
	}
	if providerError != "" {
		return row.InstanceID, row.Connection, models.Errorf(models.ErrInvalid, "the provider did not authorize: %s", truncate(providerError, 200))
	}
	if code == "" {
		return row.InstanceID, row.Connection, models.Errorf(models.ErrInvalid, "the provider sent the user back without a code")
	}
	t, err := s.Gate.Open(ctx, models.Caller{UserID: row.UserID}, row.InstanceID, access.Use)
	if err != nil {
		return row.InstanceID, row.Connection, err
	}
	conn, err := declared(t, row.Connection)
	if err != nil || conn.OAuth2 == nil {
		return row.InstanceID, row.Connection, models.Errorf(models.ErrInvalid, "the plugin no longer declares OAuth connection %q", row.Connection)
	}
	verifier, err := s.Sealer.Open(row.Verifier, "state/"+row.InstanceID+"/"+row.Connection)
	if err != nil {
		return row.InstanceID, row.Connection, err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {row.RedirectURI}, "code_verifier": {string(verifier)}}
	tok, err := s.token(ctx, t.Installation.PluginID, conn, form, invalid)
	if err != nil {
		return row.InstanceID, row.Connection, err
	}
	if err := s.store(ctx, t, conn, tok.secretValue(), tok.account(), tok.expiresAt(s.now())); err != nil {
		return row.InstanceID, row.Connection, err
	}
	return row.InstanceID, row.Connection, nil
}

// tokenAnswer is a token endpoint's answer (RFC 6749, section 5).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

func (a tokenAnswer) secretValue() secretValue {
	return secretValue{AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, TokenType: a.TokenType}
}

func (a tokenAnswer) expiresAt(now time.Time) int64 {
	if a.ExpiresIn <= 0 {
		return 0
	}
	return now.Add(time.Duration(a.ExpiresIn) * time.Second).UnixMicro()
}

// account names the account from an OpenID id_token, when the provider
// sends one: its email, preferred_username or subject. It is shown to the
// user; nothing is decided on it.
func (a tokenAnswer) account() string {
	parts := strings.Split(a.IDToken, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Email    string `json:"email"`
		Username string `json:"preferred_username"`
		Subject  string `json:"sub"`
	}
	json.Unmarshal(payload, &claims)
	for _, v := range []string{claims.Email, claims.Username, claims.Subject} {
		if v != "" {
			return v
		}
	}
	return ""
}

// token posts a grant with the operator's client to the token URL the
// client is bound to, and only when the connection, as the installed
// package declares it, still names that URL (else the error unusable
// makes).
func (s *Service) token(ctx context.Context, pluginID string, conn models.Connection, form url.Values, unusable func(string, ...any) error) (*tokenAnswer, error) {
	client, err := s.clientFor(ctx, pluginID, conn, unusable)
	if err != nil {
		return nil, err
	}
	form.Set("client_id", client.id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, client.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(client.id), url.QueryEscape(client.secret))
	resp, err := s.HTTP.Do(req)
	if err != nil {
		var refused *egress.Error
		if errors.As(err, &refused) {
			return nil, models.Errorf(models.ErrInvalid, "the provider's token endpoint could not be reached: %s; %s", refused.Detail, netfetch.PrivateHint(refused))
		}
		_, text := netfetch.Classify(ctx, err) // without the URL
		return nil, models.Errorf(models.ErrInvalid, "the provider's token endpoint could not be reached: %s", text)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return nil, err
	}
	var a tokenAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		// Some providers answer form-encoded.
		if v, perr := url.ParseQuery(string(body)); perr == nil && v.Get("access_token") != "" {
			a = tokenAnswer{AccessToken: v.Get("access_token"), TokenType: v.Get("token_type"), RefreshToken: v.Get("refresh_token")}
		} else {
			return nil, models.Errorf(models.ErrInvalid, "the provider's token endpoint answered HTTP %d, not a token", resp.StatusCode)
		}
	}
	if a.Error != "" || resp.StatusCode != http.StatusOK || a.AccessToken == "" {
		reason := a.Error
		if reason == "" {
			reason = fmt.Sprintf("HTTP %d", resp.StatusCode)
		}
		return nil, &tokenRefused{reason: truncate(reason, 100)}
	}
	return &a, nil
}

// tokenRefused is a token endpoint's refusal (invalid_grant and the like).
type tokenRefused struct{ reason string }

func (e *tokenRefused) Error() string { return "the provider refused the grant: " + e.reason }

// Answered records how a connection's provider answered a fetch that
// carried its credential: a 401 or 403 marks the credential refused (the
// status and the time), which the user sees on the connection until a new
// one is given or a later fetch is answered with a success (2xx), which
// clears it. Other statuses say nothing of the credential.
func (s *Service) Answered(ctx context.Context, instanceID, connection string, status int) error {
	q := s.DB.Write.WithContext(ctx).Model(&database.CredentialRow{}).Where("instance_id = ? AND name = ?", instanceID, connection)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return q.Updates(map[string]any{"refused_at": s.now().UnixMicro(), "refused_status": status}).Error
	case status >= 200 && status < 300:
		return q.Where("refused_status <> 0").Updates(map[string]any{"refused_at": 0, "refused_status": 0}).Error
	}
	return nil
}

// Credential returns the header and value a fetch to one of the
// connection's hosts carries for the Instance, refreshing an OAuth access
// token that is about to expire. A connection that is not connected (or
// whose grant the provider no longer honours) is connection_required.
func (s *Service) Credential(ctx context.Context, t *access.Target, conn models.Connection) (header, value string, err error) {
	row, v, err := s.open(ctx, t.Instance.ID, conn)
	if err != nil {
		return "", "", err
	}
	switch conn.Kind {
	case models.ConnectionAPIKey:
		header, value = conn.APIKeyHeader(v.Key)
		return header, value, nil
	case models.ConnectionOAuth2:
		// A token is used only while the package names the URLs the
		// client was set for.
		if _, err := s.clientFor(ctx, t.Installation.PluginID, conn, required); err != nil {
			return "", "", err
		}
		if row.ExpiresAt > 0 && s.now().Add(refreshAhead).UnixMicro() >= row.ExpiresAt {
			if v, err = s.refresh(ctx, t, conn); err != nil {
				return "", "", err
			}
		}
		tokenType := v.TokenType
		if tokenType == "" || strings.EqualFold(tokenType, "bearer") {
			tokenType = "Bearer"
		}
		return "Authorization", tokenType + " " + v.AccessToken, nil
	}
	return "", "", fmt.Errorf("connection %q of kind %q", conn.ID, conn.Kind)
}

// open reads and unseals an Instance's credential of a connection.
func (s *Service) open(ctx context.Context, instanceID string, conn models.Connection) (*database.CredentialRow, *secretValue, error) {
	var row database.CredentialRow
	err := s.DB.Write.WithContext(ctx).Where("instance_id = ? AND name = ?", instanceID, conn.ID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && row.Kind != conn.Kind {
		return nil, nil, models.ConnectionRequired(conn.ID, "connection %q (%s) is not connected for this Instance: connect it first", conn.ID, conn.Label)
	}
	if err != nil {
		return nil, nil, err
	}
	plain, err := s.Sealer.Open(row.Secret, sealContext(instanceID, conn.ID))
	if err != nil {
		return nil, nil, err
	}
	var v secretValue
	if err := json.Unmarshal(plain, &v); err != nil {
		return nil, nil, err
	}
	return &row, &v, nil
}

// refresh exchanges the refresh token for new tokens, one refresh at a
// time per credential on this server.
func (s *Service) refresh(ctx context.Context, t *access.Target, conn models.Connection) (*secretValue, error) {
	key := sealContext(t.Instance.ID, conn.ID)
	s.mu.Lock()
	if s.refreshing == nil {
		s.refreshing = map[string]*sync.Mutex{}
	}
	m := s.refreshing[key]
	if m == nil {
		m = &sync.Mutex{}
		s.refreshing[key] = m
	}
	s.mu.Unlock()
	m.Lock()
	defer m.Unlock()
	row, v, err := s.open(ctx, t.Instance.ID, conn) // refreshed meanwhile?
	if err != nil {
		return nil, err
	}
	if row.ExpiresAt == 0 || s.now().Add(refreshAhead).UnixMicro() < row.ExpiresAt {
		return v, nil
	}
	if v.RefreshToken == "" {
		return nil, models.ConnectionRequired(conn.ID, "the access of connection %q expired and the provider gave no refresh token: connect it again", conn.ID)
	}
	tok, err := s.token(ctx, t.Installation.PluginID, conn, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {v.RefreshToken}}, required)
	var refused *tokenRefused
	if errors.As(err, &refused) {
		return nil, models.ConnectionRequired(conn.ID, "the grant of connection %q is no longer valid (%s): connect it again", conn.ID, refused.reason)
	}
	if err != nil {
		return nil, err
	}
	nv := tok.secretValue()
	if nv.RefreshToken == "" {
		nv.RefreshToken = v.RefreshToken // the provider keeps the old one valid
	}
	account := tok.account()
	if account == "" {
		account = row.Account
	}
	if err := s.store(ctx, t, conn, nv, account, tok.expiresAt(s.now())); err != nil {
		return nil, err
	}
	return &nv, nil
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

type baseURLKey struct{}

// WithBaseURL records in ctx the server's address as the request's browser
// reached it, for the redirect of StartOAuth.
func WithBaseURL(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseURLKey{}, base)
}

// BaseURL returns what WithBaseURL recorded, or "".
func BaseURL(ctx context.Context) string {
	s, _ := ctx.Value(baseURLKey{}).(string)
	return s
}

// Of lists the connections of one of the caller's Instances (List), which
// may be disabled.
func (s *Service) Of(ctx context.Context, c models.Caller, instanceID string) ([]Status, error) {
	t, err := s.Gate.Open(ctx, c, instanceID, access.Manage)
	if err != nil {
		return nil, err
	}
	return s.List(ctx, t)
}
