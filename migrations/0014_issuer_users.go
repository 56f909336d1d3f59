package migrations

import (
	"gorm.io/gorm"

	"pluginhost/database"
)

// Version 14: users of the operator's identity provider. A user is now
// (issuer, subject): the server's own token users have the empty issuer and
// their name as subject, so that `token create --user NAME` still finds one
// user per name, while an issuer's users are its `sub`, named by their
// claims, and two of them (or one of them and a token user) may share a
// name. The unique index on the name gives way to one on (issuer, subject).
//
// A web host session made by signing in with the issuer stands for no
// token: it keeps whether its user was an admin when it began, and the ID
// token (sealed) that ends the issuer's session at sign-out.

type user14 struct {
	Issuer  string `gorm:"type:varchar(255);not null;default:''"`
	Subject string `gorm:"type:varchar(255);not null;default:''"`
}

func (user14) TableName() string { return "users" }

type webSession14 struct {
	Admin   bool    `gorm:"not null;default:false"`
	EndHint *string `gorm:"type:text"`
}

func (webSession14) TableName() string { return "web_sessions" }

func issuerUsers(tx *gorm.DB) error {
	m := tx.Migrator()
	for _, col := range []string{"Issuer", "Subject"} {
		if err := m.AddColumn(&user14{}, col); err != nil {
			return err
		}
	}
	if err := tx.Exec("UPDATE users SET subject = name").Error; err != nil {
		return err
	}
	drop := "DROP INDEX ux_users_name"
	if tx.Dialector.Name() == database.MySQL {
		drop += " ON users"
	}
	if err := tx.Exec(drop).Error; err != nil {
		return err
	}
	if err := tx.Exec("CREATE UNIQUE INDEX ux_users_identity ON users (issuer, subject)").Error; err != nil {
		return err
	}
	for _, col := range []string{"Admin", "EndHint"} {
		if err := m.AddColumn(&webSession14{}, col); err != nil {
			return err
		}
	}
	return nil
}
