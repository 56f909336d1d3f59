package migrations

import "gorm.io/gorm"

// Version 11: notifications plugins send their users, and the mute of an
// Instance. A notification's host_actions actions wait in pending_actions
// (kind notification), so that the security lifecycle deletes them with the
// rest.

type notification11 struct {
	ID             string `gorm:"primaryKey;type:varchar(40)"`
	UserID         string `gorm:"type:varchar(40);not null;index:ix_notifications_user,priority:1"`
	InstallationID string `gorm:"type:varchar(40);not null;index:ix_notifications_installation"`
	InstanceID     string `gorm:"type:varchar(40);not null;uniqueIndex:ux_notifications_instance_notice,priority:1"`
	// NoticeID is the plugin's id of the notification: the same one for the
	// same Instance replaces it.
	NoticeID   string `gorm:"type:varchar(64);not null;uniqueIndex:ux_notifications_instance_notice,priority:2"`
	Capability string `gorm:"type:varchar(128);not null"`
	Generation int64  `gorm:"not null"`
	Title      string `gorm:"type:varchar(500);not null"`
	Body       string `gorm:"type:text;not null"`
	Severity   string `gorm:"type:varchar(16);not null"`
	// Actions are the buttons, without the host actions they apply.
	Actions   string `gorm:"type:text;not null"`
	ReadAt    int64  `gorm:"not null;default:0"`
	CreatedAt int64  `gorm:"not null;index:ix_notifications_user,priority:2"`
}

func (notification11) TableName() string { return "notifications" }

type instance11 struct {
	ID                 string `gorm:"primaryKey;type:varchar(40)"`
	NotificationsMuted bool   `gorm:"not null;default:false"`
}

func (instance11) TableName() string { return "instances" }

func notifications(tx *gorm.DB) error {
	if err := tx.Migrator().CreateTable(&notification11{}); err != nil {
		return err
	}
	return tx.Migrator().AddColumn(&instance11{}, "NotificationsMuted")
}
