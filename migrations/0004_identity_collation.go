package migrations

import (
	"fmt"

	"gorm.io/gorm"

	"pluginhost/database"
)

// Version 4: key identity is the exact string on every backend. MySQL's and
// MariaDB's utf8mb4_bin pads with spaces when it compares, so "note " matched
// "note" in every lookup, update, delete and unique index of a key, a
// namespace or an id. Every table of versions 1 to 3 is converted to the
// server's NO PAD binary collation (see database.IdentityCollation), which
// also becomes each table's default for columns added later. SQLite compares
// text byte for byte already and needs nothing.
//
// Converting cannot fail on duplicates: NO PAD tells apart strictly more
// strings than PAD SPACE, so rows unique before stay unique.

// identityTables are the tables as of version 3, frozen.
var identityTables = []string{
	"schema_migrations", "users", "tokens", "trusted_keys", "installations", "instances", "storage_items",
	"installation_credentials", "oauth_states", "pending_actions", "storage_audit",
}

func identityCollation(tx *gorm.DB) error {
	if tx.Dialector.Name() != database.MySQL {
		return nil
	}
	coll, err := database.IdentityCollation(tx)
	if err != nil {
		return err
	}
	for _, table := range identityTables {
		if err := tx.Exec(fmt.Sprintf("ALTER TABLE %s CONVERT TO CHARACTER SET utf8mb4 COLLATE %s", table, coll)).Error; err != nil {
			return fmt.Errorf("table %s: %w", table, err)
		}
	}
	return nil
}
