package migrations

import "gorm.io/gorm"

// Tables as of version 1. These structs are frozen: later versions change the
// schema with new migrations, never by editing these.

type user1 struct {
	ID        string `gorm:"primaryKey;type:varchar(40)"`
	Name      string `gorm:"type:varchar(128);not null;uniqueIndex:ux_users_name"`
	Admin     bool   `gorm:"not null;default:false"`
	CreatedAt int64  `gorm:"not null"`
}

func (user1) TableName() string { return "users" }

type token1 struct {
	Hash      string `gorm:"primaryKey;type:char(64)"`
	UserID    string `gorm:"type:varchar(40);not null;index:ix_tokens_user"`
	CreatedAt int64  `gorm:"not null"`
}

func (token1) TableName() string { return "tokens" }

type trustedKey1 struct {
	ID        string `gorm:"primaryKey;type:varchar(64)"`
	PublicKey string `gorm:"type:varchar(64);not null"`
	AddedBy   string `gorm:"type:varchar(40);not null"`
	CreatedAt int64  `gorm:"not null"`
}

func (trustedKey1) TableName() string { return "trusted_keys" }

type installation1 struct {
	ID             string `gorm:"primaryKey;type:varchar(40)"`
	UserID         string `gorm:"type:varchar(40);not null;uniqueIndex:ux_installations_user_plugin,priority:1"`
	PluginID       string `gorm:"type:varchar(128);not null;uniqueIndex:ux_installations_user_plugin,priority:2"`
	Name           string `gorm:"type:varchar(200);not null"`
	Version        string `gorm:"type:varchar(64);not null"`
	PublisherKeyID string `gorm:"type:varchar(64);not null"`
	Generation     int64  `gorm:"not null"`
	StorageVersion int    `gorm:"not null"`
	DataPolicy     string `gorm:"type:varchar(16);not null"`
	Status         string `gorm:"type:varchar(16);not null"`
	AIConsent      bool   `gorm:"column:ai_consent;not null;default:false"`
	UsedBytes      int64  `gorm:"not null;default:0"`
	Manifest       string `gorm:"type:mediumtext;not null"`
	PackageSHA256  string `gorm:"column:package_sha256;type:char(64);not null"`
	CreatedAt      int64  `gorm:"not null"`
	UpdatedAt      int64  `gorm:"not null"`
}

func (installation1) TableName() string { return "installations" }

type instance1 struct {
	ID              string `gorm:"primaryKey;type:varchar(40)"`
	InstallationID  string `gorm:"type:varchar(40);not null;index:ix_instances_installation"`
	UserID          string `gorm:"type:varchar(40);not null;index:ix_instances_user"`
	Name            string `gorm:"type:varchar(200);not null"`
	Enabled         bool   `gorm:"not null;default:true"`
	Grants          string `gorm:"type:varchar(255);not null;default:''"`
	StorageRevision int64  `gorm:"not null;default:0"`
	CreatedAt       int64  `gorm:"not null"`
}

func (instance1) TableName() string { return "instances" }

type storageItem1 struct {
	InstanceID     string `gorm:"primaryKey;type:varchar(40)"`
	Namespace      string `gorm:"primaryKey;type:varchar(64)"`
	Key            string `gorm:"primaryKey;column:item_key;type:varchar(80)"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_storage_items_installation"`
	Value          string `gorm:"type:text;not null"`
	Size           int64  `gorm:"not null"`
	Revision       int64  `gorm:"not null"`
	CreatedAt      int64  `gorm:"not null"`
	UpdatedAt      int64  `gorm:"not null"`
}

func (storageItem1) TableName() string { return "storage_items" }

func initial(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&user1{}, &token1{}, &trustedKey1{}, &installation1{}, &instance1{}, &storageItem1{})
}
