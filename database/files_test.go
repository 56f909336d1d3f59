package database

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteFilesArePrivate: a database file given outside the data folder is
// created 0600, with its WAL files, whatever the umask; one left readable by
// others is made private when opened.
func TestSQLiteFilesArePrivate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing os.FileMode // 0: the file does not exist yet
	}{
		{"created", 0},
		{"existing 0644", 0o644},
		{"existing 0666", 0o666},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "elsewhere", "ph.db")
			if tc.existing != 0 {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, nil, tc.existing); err != nil {
					t.Fatal(err)
				}
				os.Chmod(path, tc.existing) // past the umask
			}
			db, err := Open("sqlite:" + path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Write.Exec("CREATE TABLE t (x TEXT)").Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Write.Exec("INSERT INTO t VALUES ('secret')").Error; err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatalf("%s: %v", filepath.Base(p), err)
				}
				if got := fi.Mode().Perm(); got != FileMode {
					t.Errorf("%s has mode %o, want %o", filepath.Base(p), got, FileMode)
				}
			}
		})
	}
}
