// Package testenv gives tests the real services they run against: a fresh
// SQLite file always, and a fresh MariaDB/MySQL database, Redis or Chromium when
// the environment names them. A test that needs a missing service is skipped
// with a message saying which variable to set, unless PLUGINHOST_REQUIRE_SERVICES=1,
// which turns every such skip into a failure (CI sets it).
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"gorm.io/gorm"

	"pluginhost/database"
)

// Environment variables naming the services.
const (
	EnvMySQL   = "PLUGINHOST_TEST_MYSQL_DSN" // mysql://USER:PASS@tcp(HOST:PORT)/DB of a server tests may create databases on
	EnvRedis   = "PLUGINHOST_TEST_REDIS"     // redis://HOST:PORT/N
	EnvRequire = "PLUGINHOST_REQUIRE_SERVICES"
)

// Missing skips the test because a service is not configured, or fails it when
// services are required.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s is required (%s=1) but not available", what, EnvRequire)
	}
	t.Skipf("skipped: %s is not available", what)
}

// Backend is a database a test runs against.
type Backend struct {
	Name string // "sqlite" or "mysql"
	DSN  string // in the form --db takes
}

// Databases runs fn once per backend as a subtest: SQLite, then MySQL/MariaDB.
// Each run gets a fresh, empty database that is removed afterwards.
func Databases(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, Backend{Name: database.SQLite, DSN: "sqlite:" + t.TempDir() + "/pluginhost.db"})
	})
	t.Run("mysql", func(t *testing.T) {
		fn(t, Backend{Name: database.MySQL, DSN: FreshMySQL(t)})
	})
}

// FreshMySQL creates an empty database on the server named by
// PLUGINHOST_TEST_MYSQL_DSN, drops it when the test ends, and returns its DSN.
func FreshMySQL(t testing.TB) string {
	t.Helper()
	server := os.Getenv(EnvMySQL)
	if server == "" {
		Missing(t, "MariaDB/MySQL ("+EnvMySQL+" not set)")
	}
	db, err := database.Open(server)
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQL, err)
	}
	defer db.Close()
	name := "ph_test_" + randomHex(6)
	if err := db.Write.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin").Error; err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := database.Open(server)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer db.Close()
		if err := db.Write.Exec("DROP DATABASE IF EXISTS " + name).Error; err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	i := strings.LastIndex(server, "/")
	dsn := server[:i+1] + name
	if q := strings.Index(server[i:], "?"); q >= 0 {
		dsn += server[i+q:]
	}
	return dsn
}

// Redis returns the Redis URL from PLUGINHOST_TEST_REDIS, or skips.
func Redis(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvRedis)
	if u == "" {
		Missing(t, "Redis ("+EnvRedis+" not set)")
	}
	return u
}

// Chromium returns the path of a Chromium binary, or skips.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("PLUGINHOST_TEST_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "Chromium (install Debian's chromium or set PLUGINHOST_TEST_CHROMIUM)")
	return ""
}

// Count returns the rows of table matching the condition, for assertions.
func Count(t testing.TB, db *gorm.DB, table string, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := db.Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	if err := q.Count(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
