package migrations

import (
	"context"
	"log/slog"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/testenv"
)

// TestIdentityCollationOfAnExistingDatabase: a MariaDB database created by an
// older binary (tables in the PAD SPACE collation utf8mb4_bin) is converted
// by version 4, after which "note " beside "note" is a second key and every
// text column compares without padding.
func TestIdentityCollationOfAnExistingDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := database.Open(testenv.FreshMySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	noPad := db.Collation
	// The database as versions 1 to 3 left it.
	db.Collation = "utf8mb4_bin"
	if err := db.Write.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(200) NOT NULL, applied_at BIGINT NOT NULL) " + db.TableOptions()).Error; err != nil {
		t.Fatal(err)
	}
	for _, m := range All[:3] {
		if err := run(db.Write, db, m); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(key string) error {
		return db.Write.Exec(`INSERT INTO storage_items (instance_id, namespace, item_key, installation_id, value, size, revision, created_at, updated_at)
			VALUES ('inst_1', 'notes', ?, 'inst_1', '1', 1, 1, 0, 0)`, key).Error
	}
	if err := insert("note"); err != nil {
		t.Fatal(err)
	}
	if err := insert("note "); !database.IsDuplicate(err) {
		t.Fatalf("before version 4, %q beside %q should collide under PAD SPACE (the defect); got %v", "note ", "note", err)
	}
	db.Collation = noPad
	if err := Apply(ctx, db, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if err := insert("note "); err != nil {
		t.Fatalf("after version 4, %q beside %q: %v", "note ", "note", err)
	}
	var n int64
	db.Read.Raw("SELECT COUNT(*) FROM storage_items WHERE item_key = ?", "note").Scan(&n)
	if n != 1 {
		t.Fatalf("%d rows match %q exactly, want 1", n, "note")
	}
	var padded []struct{ TableName, ColumnName, CollationName string }
	if err := db.Read.Raw(`SELECT table_name, column_name, collation_name FROM information_schema.columns
		WHERE table_schema = DATABASE() AND collation_name IS NOT NULL AND collation_name <> ?`, noPad).Scan(&padded).Error; err != nil {
		t.Fatal(err)
	}
	for _, c := range padded {
		t.Errorf("column %s.%s has collation %s, want %s", c.TableName, c.ColumnName, c.CollationName, noPad)
	}
}

// TestNewDatabaseHasNoPadColumns: a database created from scratch has every
// text column in the NO PAD collation, including tables of later versions.
func TestNewDatabaseHasNoPadColumns(t *testing.T) {
	db, err := database.Open(testenv.FreshMySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Apply(context.Background(), db, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	var padded []struct{ TableName, ColumnName, CollationName string }
	if err := db.Read.Raw(`SELECT table_name, column_name, collation_name FROM information_schema.columns
		WHERE table_schema = DATABASE() AND collation_name IS NOT NULL AND collation_name <> ?`, db.Collation).Scan(&padded).Error; err != nil {
		t.Fatal(err)
	}
	for _, c := range padded {
		t.Errorf("column %s.%s has collation %s, want %s", c.TableName, c.ColumnName, c.CollationName, db.Collation)
	}
}
