package migrations

import "gorm.io/gorm"

// Version 16: a connection's credential records when its provider refused
// it (a fetch with it answered 401 or 403) and with which status, so that
// the user is told where the key is kept and where it is needed; a fetch
// the provider accepts clears it, as a new credential does.

type credential16 struct {
	RefusedAt     int64 `gorm:"not null;default:0"` // Unix microseconds; 0: not refused
	RefusedStatus int   `gorm:"not null;default:0"`
}

func (credential16) TableName() string { return "installation_credentials" }

func refusedCredentials(tx *gorm.DB) error {
	for _, c := range []string{"RefusedAt", "RefusedStatus"} {
		if err := tx.Migrator().AddColumn(&credential16{}, c); err != nil {
			return err
		}
	}
	return nil
}
