// Package migrations holds the versioned, forward-only schema changes of the
// host's database and applies them at start. Each migration runs once and is
// recorded in the table schema_migrations; the same migrations serve SQLite and
// MySQL/MariaDB because tables are described once, as frozen Go structs, and
// gorm writes each dialect's DDL.
//
// A migration is never edited after it has shipped: a change of schema is a new
// migration with the next version.
//
// A migration that changes rows of storage_items raises the storage_revision
// of their Instances (see package database, "Storage revision").
package migrations

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"pluginhost/database"
)

// Migration is one schema change.
type Migration struct {
	Version int
	Name    string
	Up      func(tx *gorm.DB) error
}

// All lists every migration in version order.
var All = []Migration{
	{1, "initial schema: users, tokens, trusted keys, installations, instances, storage items", initial},
	{2, "credentials, OAuth state and pending actions of Installations", securityLifecycle},
	{3, "audit trail of AI and host-action storage changes", storageAudit},
	{4, "exact key identity on MySQL/MariaDB: NO PAD binary collation on every table", identityCollation},
	{5, "extension configs, persisted UI state and response containers", extensionHosting},
	{6, "capability modules of packages and background schedules", capabilityRuns},
	{7, "token ids, expiry, last use and revocation", tokenLifecycle},
	{8, "quarantine of background capabilities", quarantine},
	{9, "index of token revocations", tokenRevocations},
	{10, "connections: credentials and OAuth states per Instance, OAuth clients, the audit of fetches", connections},
	{11, "notifications, and the mute of an Instance", notifications},
	{12, "sign-in sessions of the web host", webSessions},
	{13, "the rendered result of the newest response containers, for the web host's response surface", responseData},
	{14, "users of the operator's identity provider, and web host sessions signed in with it", issuerUsers},
	{15, "plugin ids owned by the publisher key that first installed them; OAuth clients bound to the URLs the admin saw", publishers},
	{16, "a connection's credential refused by its provider, with the status", refusedCredentials},
}

type appliedRow struct {
	Version   int    `gorm:"primaryKey;autoIncrement:false"`
	Name      string `gorm:"type:varchar(200);not null"`
	AppliedAt int64  `gorm:"not null"`
}

func (appliedRow) TableName() string { return "schema_migrations" }

// lockName is the MySQL advisory lock that lets one replica migrate at a time.
const lockName = "pluginhost_schema_migrations"

// Apply brings the database up to the newest migration. It refuses a database
// whose schema is newer than this binary knows. Replicas starting together wait
// for each other.
func Apply(ctx context.Context, db *database.DB, log *slog.Logger) error {
	conn := db.Write.WithContext(ctx)
	return conn.Connection(func(c *gorm.DB) error {
		c = c.Session(&gorm.Session{NewDB: true})
		if db.Dialect == database.MySQL {
			var got int
			if err := c.Raw("SELECT GET_LOCK(?, 120)", lockName).Scan(&got).Error; err != nil || got != 1 {
				return fmt.Errorf("migrations: could not take the migration lock: %v", err)
			}
			defer c.Exec("SELECT RELEASE_LOCK(?)", lockName)
		}
		if err := c.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(200) NOT NULL, applied_at BIGINT NOT NULL) " + db.TableOptions()).Error; err != nil {
			return fmt.Errorf("migrations: create schema_migrations: %w", err)
		}
		var applied []appliedRow
		if err := c.Order("version").Find(&applied).Error; err != nil {
			return fmt.Errorf("migrations: read schema_migrations: %w", err)
		}
		done := map[int]bool{}
		newest := 0
		for _, a := range applied {
			done[a.Version] = true
			newest = max(newest, a.Version)
		}
		if known := All[len(All)-1].Version; newest > known {
			return fmt.Errorf("migrations: the database is at schema version %d, newer than this binary knows (%d); run a newer pluginhost", newest, known)
		}
		for _, m := range All {
			if done[m.Version] {
				continue
			}
			start := time.Now()
			if err := run(c, db, m); err != nil {
				return err
			}
			log.Info("schema migration applied", "version", m.Version, "name", m.Name, "took", time.Since(start).Round(time.Millisecond))
		}
		return nil
	})
}

// run applies one migration. On SQLite it runs in a transaction with its record
// (DDL is transactional there); MySQL commits DDL implicitly, so the record is
// written after the change and a failed migration is reported for the operator.
func run(c *gorm.DB, db *database.DB, m Migration) error {
	fresh := func(g *gorm.DB) *gorm.DB {
		return g.Session(&gorm.Session{NewDB: true}).Set("gorm:table_options", db.TableOptions())
	}
	c = fresh(c)
	record := func(tx *gorm.DB) error {
		return fresh(tx).Create(&appliedRow{Version: m.Version, Name: m.Name, AppliedAt: time.Now().UnixMicro()}).Error
	}
	var err error
	if db.Dialect == database.SQLite {
		err = c.Transaction(func(tx *gorm.DB) error {
			var n int64
			if err := fresh(tx).Model(&appliedRow{}).Where("version = ?", m.Version).Count(&n).Error; err != nil || n > 0 {
				return err
			}
			if err := m.Up(fresh(tx)); err != nil {
				return err
			}
			return record(tx)
		})
	} else {
		if err = m.Up(fresh(c)); err == nil {
			err = record(c)
		}
	}
	if err != nil {
		return fmt.Errorf("migrations: version %d (%s): %w", m.Version, m.Name, err)
	}
	return nil
}
