package models

import "time"

// User is an account of the host: one of the server's own token users, or
// a user of the operator's identity provider (Issuer set), who is its
// Subject there. The two kinds never merge, even with equal names.
type User struct {
	ID    string
	Name  string
	Admin bool
	// Issuer is the identity provider's issuer URL; empty for a user of the
	// server's own tokens.
	Issuer string
	// Subject is the user's `sub` at the issuer; empty for a token user.
	Subject string
}

// Installation states.
const (
	InstallationInstalled   = "installed"
	InstallationUninstalled = "uninstalled"
)

// Installation is one user's installation of one plugin.
type Installation struct {
	ID             string
	UserID         string
	PluginID       string
	Name           string
	Version        string
	PublisherKeyID string
	// Generation rises by one with every package change (install over retained
	// data, update); stale handles and results are detected by it.
	Generation     int64
	StorageVersion int
	DataPolicy     string
	Status         string
	AIConsent      bool
	UsedBytes      int64
	Manifest       *Manifest
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Instance is one configured Instance of an Installation; it owns its storage.
type Instance struct {
	ID              string
	InstallationID  string
	UserID          string
	Name            string
	Enabled         bool
	Grants          []string
	StorageRevision int64
	CreatedAt       time.Time
	// NotificationsMuted: the user muted the Instance's notifications.
	NotificationsMuted bool
}

// HasGrant reports whether the Instance holds the grant.
func (i *Instance) HasGrant(permission string) bool {
	for _, g := range i.Grants {
		if g == permission {
			return true
		}
	}
	return false
}

// Token is what may be shown of a bearer token: never the token itself, which
// is shown once at creation, nor its hash.
type Token struct {
	ID         string
	UserID     string
	UserName   string
	UserAdmin  bool
	CreatedAt  time.Time
	ExpiresAt  *time.Time // nil: never expires
	LastUsedAt *time.Time // nil: never used; recorded at most once a minute
	RevokedAt  *time.Time // nil: not revoked
}

// Active reports whether the token may still be used at now.
func (t *Token) Active(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}
