package migrations

import "gorm.io/gorm"

// Version 5: what the host serves to app clients. The UI config of every
// extension of an installed package (as validated, with its generation), the
// UI state an Instance persists per extension (set_state and navigation with
// persist: true; Instance settings, not Plugin Local Storage), and the
// response containers of AI messages (one per message).

type extensionConfig5 struct {
	InstallationID string `gorm:"primaryKey;type:varchar(40)"`
	ExtensionID    string `gorm:"primaryKey;type:varchar(128)"`
	Position       int    `gorm:"not null"`
	Point          string `gorm:"type:varchar(16);not null"`
	Generation     int64  `gorm:"not null"`
	Config         string `gorm:"type:mediumtext;not null"`
}

func (extensionConfig5) TableName() string { return "extension_configs" }

type extensionState5 struct {
	InstanceID     string `gorm:"primaryKey;type:varchar(40)"`
	ExtensionID    string `gorm:"primaryKey;type:varchar(128)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_extension_states_installation"`
	State          string `gorm:"type:mediumtext;not null"`
	UpdatedAt      int64  `gorm:"not null"`
}

func (extensionState5) TableName() string { return "extension_states" }

type responseContainer5 struct {
	UserID      string `gorm:"primaryKey;type:varchar(40)"`
	MessageID   string `gorm:"primaryKey;type:varchar(128)"`
	InstanceID  string `gorm:"type:varchar(40);not null;index:ix_response_containers_instance"`
	ExtensionID string `gorm:"type:varchar(128);not null"`
	Generation  int64  `gorm:"not null"`
	Capability  string `gorm:"type:varchar(128);not null"`
	CreatedAt   int64  `gorm:"not null"`
}

func (responseContainer5) TableName() string { return "response_containers" }

func extensionHosting(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&extensionConfig5{}, &extensionState5{}, &responseContainer5{})
}
