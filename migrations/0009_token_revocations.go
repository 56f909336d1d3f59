package migrations

import "gorm.io/gorm"

// Version 9: every replica looks for tokens revoked since it last looked,
// once a second, to close what they opened (websockets) wherever it is.

func tokenRevocations(tx *gorm.DB) error {
	return tx.Exec("CREATE INDEX ix_tokens_revoked_at ON tokens (revoked_at)").Error
}
