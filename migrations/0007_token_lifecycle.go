package migrations

import (
	"gorm.io/gorm"

	"pluginhost/models"
)

// Version 7: tokens get a public id (so that they can be listed and revoked
// without showing their hash), an optional expiry, the time of their last use
// and the time they were revoked. Times are Unix microseconds; 0 is "never".

type token7 struct {
	Hash       string `gorm:"primaryKey;type:char(64)"`
	ID         string `gorm:"type:varchar(40);not null;default:''"`
	ExpiresAt  int64  `gorm:"not null;default:0"`
	LastUsedAt int64  `gorm:"not null;default:0"`
	RevokedAt  int64  `gorm:"not null;default:0"`
}

func (token7) TableName() string { return "tokens" }

func tokenLifecycle(tx *gorm.DB) error {
	m := tx.Migrator()
	for _, col := range []string{"ID", "ExpiresAt", "LastUsedAt", "RevokedAt"} {
		if err := m.AddColumn(&token7{}, col); err != nil {
			return err
		}
	}
	// Tokens made before this version get an id each.
	var hashes []string
	if err := tx.Raw("SELECT hash FROM tokens WHERE id = ''").Scan(&hashes).Error; err != nil {
		return err
	}
	for _, h := range hashes {
		if err := tx.Exec("UPDATE tokens SET id = ? WHERE hash = ?", models.NewID(models.PrefixToken), h).Error; err != nil {
			return err
		}
	}
	return tx.Exec("CREATE UNIQUE INDEX ux_tokens_id ON tokens (id)").Error
}
