package migrations

import "gorm.io/gorm"

// Version 2: what an Installation holds under the security lifecycle:
// credentials, OAuth state and pending actions. Uninstall deletes them all,
// whatever the data policy.

type credential2 struct {
	ID             string `gorm:"primaryKey;type:varchar(40)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_credentials_installation"`
	Name           string `gorm:"type:varchar(128);not null"`
	Secret         []byte `gorm:"type:blob;not null"`
	CreatedAt      int64  `gorm:"not null"`
}

func (credential2) TableName() string { return "installation_credentials" }

type oauthState2 struct {
	State          string `gorm:"primaryKey;type:varchar(128)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_oauth_states_installation"`
	UserID         string `gorm:"type:varchar(40);not null"`
	CreatedAt      int64  `gorm:"not null"`
	ExpiresAt      int64  `gorm:"not null"`
}

func (oauthState2) TableName() string { return "oauth_states" }

type pendingAction2 struct {
	ID             string `gorm:"primaryKey;type:varchar(40)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_pending_actions_installation"`
	InstanceID     string `gorm:"type:varchar(40);not null"`
	Kind           string `gorm:"type:varchar(64);not null"`
	Payload        string `gorm:"type:text;not null"`
	CreatedAt      int64  `gorm:"not null"`
}

func (pendingAction2) TableName() string { return "pending_actions" }

func securityLifecycle(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&credential2{}, &oauthState2{}, &pendingAction2{})
}
