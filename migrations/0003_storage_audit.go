package migrations

import "gorm.io/gorm"

// Version 3: the audit trail of storage changes made by the AI and by
// capability host actions, and of their refused attempts. It never holds a
// value, only its size.

type storageAudit3 struct {
	ID             int64  `gorm:"primaryKey;autoIncrement"`
	UserID         string `gorm:"type:varchar(40);not null;index:ix_storage_audit_user,priority:1"`
	InstallationID string `gorm:"type:varchar(40);not null"`
	InstanceID     string `gorm:"type:varchar(40);not null;index:ix_storage_audit_instance"`
	Actor          string `gorm:"type:varchar(16);not null"`
	Capability     string `gorm:"type:varchar(128);not null"`
	Namespace      string `gorm:"type:varchar(64);not null"`
	ItemKey        string `gorm:"type:varchar(80);not null"`
	Operation      string `gorm:"type:varchar(16);not null"`
	Outcome        string `gorm:"type:varchar(48);not null"`
	RevisionBefore int64  `gorm:"not null"`
	RevisionAfter  int64  `gorm:"not null"`
	ValueBytes     int64  `gorm:"not null"`
	CreatedAt      int64  `gorm:"not null;index:ix_storage_audit_user,priority:2"`
}

func (storageAudit3) TableName() string { return "storage_audit" }

func storageAudit(tx *gorm.DB) error { return tx.Migrator().CreateTable(&storageAudit3{}) }
