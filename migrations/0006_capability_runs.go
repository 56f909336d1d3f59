package migrations

import "gorm.io/gorm"

// Version 6: what running plugin capabilities needs. The modules of each
// Installation's package, kept with the generation they belong to, and the
// schedule of every background capability of every Instance, whose lease lets
// exactly one replica run it per period.

type capabilityModule6 struct {
	InstallationID string `gorm:"type:varchar(40);primaryKey"`
	Generation     int64  `gorm:"primaryKey;autoIncrement:false"`
	Path           string `gorm:"type:varchar(255);primaryKey"`
	SHA256         string `gorm:"column:sha256;type:varchar(64);not null"`
	Content        []byte `gorm:"type:longblob;not null"`
}

func (capabilityModule6) TableName() string { return "capability_modules" }

type backgroundSchedule6 struct {
	InstanceID string `gorm:"type:varchar(40);primaryKey"`
	Capability string `gorm:"type:varchar(128);primaryKey"`
	// NextRunAt is when the next period starts (Unix microseconds); the
	// replica that moves it on owns that period's run.
	NextRunAt   int64  `gorm:"not null;index:ix_background_schedules_due"`
	LeaseOwner  string `gorm:"type:varchar(64);not null"`
	LeaseUntil  int64  `gorm:"not null"`
	LastRunAt   int64  `gorm:"not null"`
	LastOutcome string `gorm:"type:varchar(48);not null"`
	Failures    int    `gorm:"not null"`
}

func (backgroundSchedule6) TableName() string { return "background_schedules" }

func capabilityRuns(tx *gorm.DB) error {
	return tx.Migrator().CreateTable(&capabilityModule6{}, &backgroundSchedule6{})
}
