package migrations_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/testenv"
	"pluginhost/migrations"
)

func TestApply(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		db, err := database.Open(b.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		log := slog.New(slog.DiscardHandler)
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatalf("first apply: %v", err)
		}
		// A second start finds everything applied and changes nothing.
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatalf("second apply: %v", err)
		}
		if n := testenv.Count(t, db.Read, "schema_migrations", ""); n != int64(len(migrations.All)) {
			t.Fatalf("recorded %d migrations, want %d", n, len(migrations.All))
		}
		for _, table := range []string{"users", "tokens", "trusted_keys", "installations", "instances", "storage_items", "installation_credentials", "oauth_states", "pending_actions", "storage_audit"} {
			if !db.Read.Migrator().HasTable(table) {
				t.Errorf("table %s missing", table)
			}
		}
		// A database migrated by a newer binary is refused, not damaged.
		if err := db.Write.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", 9999, "future", 1).Error; err != nil {
			t.Fatal(err)
		}
		err = migrations.Apply(ctx, db, log)
		if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
			t.Fatalf("apply on a newer database: %v", err)
		}
	})
}

func TestVersionsAscendByOne(t *testing.T) {
	for i, m := range migrations.All {
		if m.Version != i+1 {
			t.Fatalf("migration %d has version %d; versions ascend by one from 1", i, m.Version)
		}
		if m.Name == "" || m.Up == nil {
			t.Fatalf("migration %d lacks a name or an Up", m.Version)
		}
	}
}
