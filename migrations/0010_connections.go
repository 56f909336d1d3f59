package migrations

import "gorm.io/gorm"

// Version 10: plugins that reach the world. Credentials and OAuth states
// belong to one Instance and one connection of its manifest (they were
// declared per Installation, and nothing wrote them); the operator's OAuth
// clients per plugin and connection; the audit trail of capability fetches.

type credential10 struct {
	ID             string `gorm:"primaryKey;type:varchar(40)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_credentials_installation"`
	InstanceID     string `gorm:"type:varchar(40);not null;default:'';uniqueIndex:ux_credentials_instance_name,priority:1"`
	UserID         string `gorm:"type:varchar(40);not null;default:''"`
	// Name is the connection's id in the manifest.
	Name string `gorm:"type:varchar(128);not null;uniqueIndex:ux_credentials_instance_name,priority:2"`
	Kind string `gorm:"type:varchar(16);not null;default:''"`
	// Secret is sealed (secret.Sealer) with the Instance and the name as its
	// context: the API key, or the OAuth tokens.
	Secret    []byte `gorm:"type:blob;not null"`
	Account   string `gorm:"type:varchar(200);not null;default:''"`
	ExpiresAt int64  `gorm:"not null;default:0"` // Unix microseconds; 0: does not expire
	CreatedAt int64  `gorm:"not null"`
	UpdatedAt int64  `gorm:"not null;default:0"`
}

func (credential10) TableName() string { return "installation_credentials" }

type oauthState10 struct {
	State          string `gorm:"primaryKey;type:varchar(128)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_oauth_states_installation"`
	UserID         string `gorm:"type:varchar(40);not null"`
	InstanceID     string `gorm:"type:varchar(40);not null;default:'';index:ix_oauth_states_instance"`
	Connection     string `gorm:"type:varchar(64);not null;default:''"`
	// Verifier is the PKCE code verifier, sealed.
	Verifier    []byte `gorm:"type:blob"`
	RedirectURI string `gorm:"type:varchar(2048);not null;default:''"`
	CreatedAt   int64  `gorm:"not null"`
	ExpiresAt   int64  `gorm:"not null"`
}

func (oauthState10) TableName() string { return "oauth_states" }

type oauthClient10 struct {
	PluginID   string `gorm:"primaryKey;type:varchar(128)"`
	Connection string `gorm:"primaryKey;type:varchar(64)"`
	ClientID   string `gorm:"type:varchar(512);not null"`
	// ClientSecret is sealed with the plugin and connection as its context.
	ClientSecret []byte `gorm:"type:blob;not null"`
	UpdatedAt    int64  `gorm:"not null"`
}

func (oauthClient10) TableName() string { return "oauth_clients" }

type fetchAudit10 struct {
	ID             int64  `gorm:"primaryKey;autoIncrement"`
	UserID         string `gorm:"type:varchar(40);not null;index:ix_fetch_audit_user,priority:1"`
	InstallationID string `gorm:"type:varchar(40);not null"`
	InstanceID     string `gorm:"type:varchar(40);not null;index:ix_fetch_audit_instance,priority:1"`
	Capability     string `gorm:"type:varchar(128);not null"`
	Host           string `gorm:"type:varchar(260);not null"`
	Method         string `gorm:"type:varchar(16);not null"`
	Status         int    `gorm:"not null"`
	Outcome        string `gorm:"type:varchar(48);not null"` // ok, or the error the module was given
	Connection     string `gorm:"type:varchar(64);not null"`
	BytesSent      int64  `gorm:"not null"`
	BytesReceived  int64  `gorm:"not null"`
	DurationMicros int64  `gorm:"not null"`
	CreatedAt      int64  `gorm:"not null;index:ix_fetch_audit_user,priority:2;index:ix_fetch_audit_instance,priority:2"`
}

func (fetchAudit10) TableName() string { return "fetch_audit" }

func connections(tx *gorm.DB) error {
	m := tx.Migrator()
	for _, col := range []string{"InstanceID", "UserID", "Kind", "Account", "ExpiresAt", "UpdatedAt"} {
		if err := m.AddColumn(&credential10{}, col); err != nil {
			return err
		}
	}
	if err := m.CreateIndex(&credential10{}, "ux_credentials_instance_name"); err != nil {
		return err
	}
	for _, col := range []string{"InstanceID", "Connection", "Verifier", "RedirectURI"} {
		if err := m.AddColumn(&oauthState10{}, col); err != nil {
			return err
		}
	}
	if err := m.CreateIndex(&oauthState10{}, "ix_oauth_states_instance"); err != nil {
		return err
	}
	return m.CreateTable(&oauthClient10{}, &fetchAudit10{})
}
