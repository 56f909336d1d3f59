package migrations

import "gorm.io/gorm"

// Version 8: a background capability whose runs keep failing, or whose run
// did not finish (the replica running it stopped), is quarantined: its
// schedule pauses until the user resumes it or the package changes.
// quarantined_at is when (Unix microseconds; 0: not quarantined).

type backgroundSchedule8 struct {
	InstanceID    string `gorm:"primaryKey;type:varchar(40)"`
	Capability    string `gorm:"primaryKey;type:varchar(128)"`
	QuarantinedAt int64  `gorm:"not null;default:0"`
}

func (backgroundSchedule8) TableName() string { return "background_schedules" }

func quarantine(tx *gorm.DB) error {
	return tx.Migrator().AddColumn(&backgroundSchedule8{}, "QuarantinedAt")
}
