package migrations

import "gorm.io/gorm"

// Version 12: the web host's sign-in sessions. A session is only its id's
// hash, its user and when it ends: the cookie carries the rest, sealed.

type webSession12 struct {
	IDHash    string `gorm:"primaryKey;type:varchar(64)"`
	UserID    string `gorm:"type:varchar(40);not null;index:ix_web_sessions_user"`
	CreatedAt int64  `gorm:"not null"`
	ExpiresAt int64  `gorm:"not null"`
}

func (webSession12) TableName() string { return "web_sessions" }

func webSessions(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&webSession12{})
}
