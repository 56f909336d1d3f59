package database

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"pluginhost/models"
)

// UserRow is a row of users. A user is (Issuer, Subject): the server's own
// token users have the empty issuer and their name as subject; an
// identity provider's users its issuer URL and their `sub`.
type UserRow struct {
	ID        string `gorm:"primaryKey"`
	Name      string
	Admin     bool
	CreatedAt int64
	Issuer    string
	Subject   string
}

func (UserRow) TableName() string { return "users" }

// Model returns the domain user.
func (r UserRow) Model() *models.User {
	u := &models.User{ID: r.ID, Name: r.Name, Admin: r.Admin, Issuer: r.Issuer}
	if r.Issuer != "" {
		u.Subject = r.Subject
	}
	return u
}

// TokenRow is a row of tokens: only the SHA-256 of a token is kept.
type TokenRow struct {
	Hash       string `gorm:"primaryKey"`
	ID         string // public: listed and revoked by it
	UserID     string
	CreatedAt  int64
	ExpiresAt  int64 // 0: never
	LastUsedAt int64 // 0: never used; recorded at most once a minute
	RevokedAt  int64 // 0: not revoked
}

func (TokenRow) TableName() string { return "tokens" }

// TrustedKeyRow is a publisher key trusted by an admin.
type TrustedKeyRow struct {
	ID        string `gorm:"primaryKey"`
	PublicKey string
	AddedBy   string
	CreatedAt int64
}

func (TrustedKeyRow) TableName() string { return "trusted_keys" }

// InstallationRow is a row of installations.
type InstallationRow struct {
	ID             string `gorm:"primaryKey"`
	UserID         string
	PluginID       string
	Name           string
	Version        string
	PublisherKeyID string
	Generation     int64
	StorageVersion int
	DataPolicy     string
	Status         string
	AIConsent      bool `gorm:"column:ai_consent"`
	UsedBytes      int64
	Manifest       string
	PackageSHA256  string `gorm:"column:package_sha256"`
	CreatedAt      int64
	UpdatedAt      int64
}

func (InstallationRow) TableName() string { return "installations" }

// Model returns the domain Installation with its parsed manifest.
func (r InstallationRow) Model() (*models.Installation, error) {
	var m models.Manifest
	if err := json.Unmarshal([]byte(r.Manifest), &m); err != nil {
		return nil, fmt.Errorf("installation %s: stored manifest: %w", r.ID, err)
	}
	return &models.Installation{
		ID: r.ID, UserID: r.UserID, PluginID: r.PluginID, Name: r.Name, Version: r.Version,
		PublisherKeyID: r.PublisherKeyID, Generation: r.Generation, StorageVersion: r.StorageVersion,
		DataPolicy: r.DataPolicy, Status: r.Status, AIConsent: r.AIConsent, UsedBytes: r.UsedBytes,
		Manifest: &m, CreatedAt: FromMicros(r.CreatedAt), UpdatedAt: FromMicros(r.UpdatedAt),
	}, nil
}

// PluginOwnerRow is a row of plugin_owners: the publisher key a plugin id
// belongs to on this server, the one that first installed it.
type PluginOwnerRow struct {
	PluginID       string `gorm:"primaryKey"`
	PublisherKeyID string
	CreatedAt      int64
}

func (PluginOwnerRow) TableName() string { return "plugin_owners" }

// InstanceRow is a row of instances.
type InstanceRow struct {
	ID              string `gorm:"primaryKey"`
	InstallationID  string
	UserID          string
	Name            string
	Enabled         bool
	Grants          string // sorted, comma-separated permission names
	StorageRevision int64
	CreatedAt       int64
	// NotificationsMuted: the user muted the Instance's notifications.
	NotificationsMuted bool
}

func (InstanceRow) TableName() string { return "instances" }

// Model returns the domain Instance.
func (r InstanceRow) Model() *models.Instance {
	return &models.Instance{
		ID: r.ID, InstallationID: r.InstallationID, UserID: r.UserID, Name: r.Name, Enabled: r.Enabled,
		Grants: SplitGrants(r.Grants), StorageRevision: r.StorageRevision, CreatedAt: FromMicros(r.CreatedAt),
		NotificationsMuted: r.NotificationsMuted,
	}
}

// SplitGrants parses the stored grant list.
func SplitGrants(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// JoinGrants returns the stored form of a grant list: sorted, unique.
func JoinGrants(grants []string) string {
	set := map[string]bool{}
	for _, g := range grants {
		set[g] = true
	}
	out := make([]string, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// ItemRow is a row of storage_items. Size is the item's accounted bytes: the
// UTF-8 bytes of the key plus those of the value as compact JSON.
type ItemRow struct {
	InstanceID     string `gorm:"primaryKey"`
	Namespace      string `gorm:"primaryKey"`
	Key            string `gorm:"primaryKey;column:item_key"`
	InstallationID string
	Value          string
	Size           int64
	Revision       int64
	CreatedAt      int64
	UpdatedAt      int64
}

func (ItemRow) TableName() string { return "storage_items" }

// Model returns the domain item.
func (r ItemRow) Model() models.StorageItem {
	return models.StorageItem{
		Key: r.Key, Value: models.JSON(r.Value), Revision: r.Revision,
		CreatedAt: FromMicros(r.CreatedAt), UpdatedAt: FromMicros(r.UpdatedAt),
	}
}

// ModuleRow is a capability module of an Installation's package, at the
// generation it belongs to.
type ModuleRow struct {
	InstallationID string `gorm:"primaryKey"`
	Generation     int64  `gorm:"primaryKey"`
	Path           string `gorm:"primaryKey"`
	SHA256         string `gorm:"column:sha256"`
	Content        []byte
}

func (ModuleRow) TableName() string { return "capability_modules" }

// ExtensionConfigRow is a row of extension_configs.
type ExtensionConfigRow struct {
	InstallationID string `gorm:"primaryKey"`
	ExtensionID    string `gorm:"primaryKey"`
	Position       int
	Point          string
	Generation     int64
	Config         string
}

func (ExtensionConfigRow) TableName() string { return "extension_configs" }

// ExtensionStateRow is a row of extension_states: one extension's persisted state of
// one Instance, a JSON object as compact JSON.
type ExtensionStateRow struct {
	InstanceID     string `gorm:"primaryKey"`
	ExtensionID    string `gorm:"primaryKey"`
	InstallationID string
	State          string
	UpdatedAt      int64
}

func (ExtensionStateRow) TableName() string { return "extension_states" }

// ResponseContainerRow is a row of response_containers: the response container of one
// AI message of one user, created when a selected response UI rendered.
type ResponseContainerRow struct {
	UserID      string `gorm:"primaryKey"`
	MessageID   string `gorm:"primaryKey"`
	InstanceID  string
	ExtensionID string
	Generation  int64
	Capability  string
	CreatedAt   int64
	// Data is the rendered result, kept for the user's newest responses
	// (null for older ones, and for rows from before version 13).
	Data *string
}

func (ResponseContainerRow) TableName() string { return "response_containers" }

// CredentialRow is a row of installation_credentials: the secret of one
// connection of one Instance, sealed.
type CredentialRow struct {
	ID             string `gorm:"primaryKey"`
	InstallationID string
	InstanceID     string
	UserID         string
	Name           string // the connection's id
	Kind           string
	Secret         []byte
	Account        string
	ExpiresAt      int64 // Unix microseconds; 0: does not expire
	CreatedAt      int64
	UpdatedAt      int64
	// RefusedAt (Unix microseconds) and RefusedStatus: when and how the
	// provider last refused the credential (401 or 403); 0: it did not.
	RefusedAt     int64
	RefusedStatus int
}

func (CredentialRow) TableName() string { return "installation_credentials" }

// OAuthStateRow is a row of oauth_states: an authorization under way. It
// starts as the start link of startOAuth (State the hash of the link's
// token, Browser empty) and becomes, when a browser signed in as UserID
// opens the link, the provider's state (State the hash of the state,
// Browser the hash of the browser's state cookie).
type OAuthStateRow struct {
	State          string `gorm:"primaryKey"`
	Browser        string
	InstallationID string
	UserID         string
	InstanceID     string
	Connection     string
	Verifier       []byte // sealed
	RedirectURI    string
	CreatedAt      int64
	ExpiresAt      int64
}

func (OAuthStateRow) TableName() string { return "oauth_states" }

// OAuthClientRow is a row of oauth_clients: the operator's client of one
// plugin's connection.
type OAuthClientRow struct {
	PluginID     string `gorm:"primaryKey"`
	Connection   string `gorm:"primaryKey"`
	ClientID     string
	ClientSecret []byte // sealed
	UpdatedAt    int64
	// AuthorizationURL and TokenURL are the connection's URLs in the
	// installed manifest when the admin set the client: the client is sent
	// nowhere else.
	AuthorizationURL string `gorm:"column:authorization_url"`
	TokenURL         string `gorm:"column:token_url"`
}

func (OAuthClientRow) TableName() string { return "oauth_clients" }

// FetchAuditRow is a row of fetch_audit: one fetch of a capability.
type FetchAuditRow struct {
	ID             int64 `gorm:"primaryKey"`
	UserID         string
	InstallationID string
	InstanceID     string
	Capability     string
	Host           string
	Method         string
	Status         int
	Outcome        string
	Connection     string
	BytesSent      int64
	BytesReceived  int64
	DurationMicros int64
	CreatedAt      int64
}

func (FetchAuditRow) TableName() string { return "fetch_audit" }

// NotificationRow is a row of notifications.
type NotificationRow struct {
	ID             string `gorm:"primaryKey"`
	UserID         string
	InstallationID string
	InstanceID     string
	NoticeID       string
	Capability     string
	Generation     int64
	Title          string
	Body           string
	Severity       string
	Actions        string // JSON of the buttons
	ReadAt         int64
	CreatedAt      int64
}

func (NotificationRow) TableName() string { return "notifications" }

// PendingActionRow is a row of pending_actions: what a user may still do,
// such as a notification's host actions.
type PendingActionRow struct {
	ID             string `gorm:"primaryKey"`
	InstallationID string
	InstanceID     string
	Kind           string
	Payload        string
	CreatedAt      int64
}

func (PendingActionRow) TableName() string { return "pending_actions" }

// WebSessionRow is a row of web_sessions: a sign-in session of the web
// host, by the SHA-256 of its id.
type WebSessionRow struct {
	IDHash    string `gorm:"primaryKey"`
	UserID    string
	CreatedAt int64
	ExpiresAt int64
	// Admin: the user was an admin by the identity provider's claims when
	// the session began (a session signed in with the provider only).
	Admin bool
	// EndHint is the provider's ID token, sealed, that ends its session at
	// sign-out (a session signed in with the provider only).
	EndHint *string
}

func (WebSessionRow) TableName() string { return "web_sessions" }
