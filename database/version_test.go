package database_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/testenv"
)

// commitEnv names, for TestVersion's helper process, the database it
// commits to.
const commitEnv = "PLUGINHOST_TEST_COMMIT_TO"

// TestCommitFromAnotherProcess is TestVersion's other process: it commits
// one row to the database commitEnv names, and is skipped otherwise.
func TestCommitFromAnotherProcess(t *testing.T) {
	dsn := os.Getenv(commitEnv)
	if dsn == "" {
		t.Skip("run by TestVersion as another process")
	}
	db, err := database.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write.Exec("INSERT INTO t VALUES ('from another process')").Error; err != nil {
		t.Fatal(err)
	}
}

// A Version read twice with nothing committed between is the same; every
// commit changes it, whether this process made it or another, and a
// reader that cannot tell (MySQL, the index file gone, the database
// closed) is told so and asks the database.
func TestVersion(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		db, err := database.Open(b.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if b.Name != "sqlite" {
			if _, ok := db.Version(); ok {
				t.Fatal("MySQL told a Version: it has no write-ahead log index to read one from")
			}
			return
		}
		if err := db.Write.Exec("CREATE TABLE t (x TEXT)").Error; err != nil {
			t.Fatal(err)
		}
		must := func(what string) database.Version {
			t.Helper()
			v, ok := db.Version()
			if !ok {
				t.Fatalf("%s: no Version on SQLite", what)
			}
			return v
		}
		v1 := must("after CREATE TABLE")
		var n int
		if err := db.Read.Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if v := must("after a read"); v != v1 {
			t.Fatal("a read changed the Version")
		}
		if err := db.Write.Exec("INSERT INTO t VALUES ('here')").Error; err != nil {
			t.Fatal(err)
		}
		v2 := must("after a commit here")
		if v2 == v1 {
			t.Fatal("a commit of this process left the Version as it was")
		}
		if runtime.GOOS != "windows" {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestCommitFromAnotherProcess$", "-test.count", "1")
			cmd.Env = append(os.Environ(), commitEnv+"="+b.DSN)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the other process: %v\n%s", err, out)
			}
			if err := db.Read.Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil || n != 2 {
				t.Fatalf("the other process's row is not there: %d rows, %v", n, err)
			}
			if v := must("after a commit of another process"); v == v2 {
				t.Fatal("a commit of another process left the Version as it was")
			}
		}

		// The index file removed under the database (SQLite keeps its own
		// mapping of the old one): nothing can be told any more.
		if err := os.Remove(filepath.Clean(b.DSN[len("sqlite:"):]) + "-shm"); err != nil {
			t.Fatal(err)
		}
		if _, ok := db.Version(); ok {
			t.Fatal("a Version was read from an index file no longer in place")
		}
		db.Close()
		if _, ok := db.Version(); ok {
			t.Fatal("a Version was read of a closed database")
		}
	})
}
