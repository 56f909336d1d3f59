package migrations

import "gorm.io/gorm"

// Version 13: a response container keeps the result it rendered, so that
// the web host's response surface shows it (null for older rows; the host
// keeps it for a user's newest responses only).

type responseContainer13 struct {
	Data *string `gorm:"type:mediumtext"`
}

func (responseContainer13) TableName() string { return "response_containers" }

func responseData(tx *gorm.DB) error {
	return tx.Migrator().AddColumn(&responseContainer13{}, "Data")
}
