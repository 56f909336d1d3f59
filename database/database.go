// Package database opens the host's relational store through gorm: an embedded
// SQLite file by default, or MySQL/MariaDB for production and fleets of replicas.
// It also holds the table row types and their mapping to models.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"pluginhost/redact"
)

// Dialects.
const (
	SQLite = "sqlite"
	MySQL  = "mysql"
)

// DefaultDSN is the embedded default.
const DefaultDSN = "sqlite:./data/pluginhost.db"

// SQLite settings: every connection waits this long for a lock before failing.
// Commits are synchronous=FULL: an acknowledged write survives a power loss,
// not only a crash of the process; group commit (see package storage) keeps
// that to one sync per batch of writes.
const sqliteBusyTimeout = 10 * time.Second

// DB is an open store. On SQLite, Write is a single connection (SQLite allows one
// writer at a time; queueing in Go is cheaper than lock retries) and Read a pool
// of readers that WAL lets run beside it. On MySQL both are the same pool.
type DB struct {
	Write   *gorm.DB
	Read    *gorm.DB
	Dialect string
	// Collation is, on MySQL/MariaDB, the NO PAD binary collation of every
	// text column (see IdentityCollation); "" on SQLite.
	Collation string

	wal *walIndex // on SQLite, where Version reads the database's version
}

// PointRead returns the context for a read of one row, or a few, by key on
// the read pool. On SQLite, where such a read of a local file takes
// microseconds and waits for no lock but the busy timeout, it runs without
// ctx's cancellation: database/sql and the driver would each start a
// goroutine per statement to watch for it, a fifth of the read's time. On
// MySQL, where the read crosses the network, it is ctx itself.
func (db *DB) PointRead(ctx context.Context) context.Context {
	if db.Dialect == SQLite {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// Open opens the store named by dsn: `sqlite:PATH` or
// `mysql://USER:PASS@tcp(HOST:PORT)/DB`.
func Open(dsn string) (*DB, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return openSQLite(strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "mysql://"):
		return openMySQL(strings.TrimPrefix(dsn, "mysql://"))
	}
	return nil, fmt.Errorf("database %q: want sqlite:PATH or mysql://USER:PASS@tcp(HOST:PORT)/DB", Redact(dsn))
}

func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
}

func openSQLite(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("database: sqlite: needs a file path, e.g. sqlite:./data/pluginhost.db")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("database: create %s: %w", dir, err)
		}
	}
	if err := privateFiles(path); err != nil {
		return nil, err
	}
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)",
		sqliteBusyTimeout.Milliseconds())
	w, err := gorm.Open(sqliteDialector{dsn: "file:" + path + "?" + pragmas + "&_txlock=immediate"}, gormConfig())
	if err != nil {
		return nil, fmt.Errorf("database: open sqlite %s: %w", path, err)
	}
	wdb, _ := w.DB()
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	if err := wdb.Ping(); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("database: open sqlite %s: %w", path, err)
	}
	r, err := gorm.Open(sqliteDialector{dsn: "file:" + path + "?" + pragmas + "&_pragma=query_only(1)"}, gormConfig())
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("database: open sqlite readers %s: %w", path, err)
	}
	rdb, _ := r.DB()
	rdb.SetMaxOpenConns(8)
	rdb.SetMaxIdleConns(8)
	return &DB{Write: w, Read: r, Dialect: SQLite, wal: openWALIndex(path)}, nil
}

// FileMode is the mode of SQLite database files: every user's data is in
// them, so no other local account may read them.
const FileMode = 0o600

// privateFiles creates the database file with FileMode before SQLite opens
// it (SQLite gives its -wal and -shm files the mode of the database file),
// and takes read and write access away from group and others on files that
// exist already.
func privateFiles(path string) error {
	if strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("database: create %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&^0o077); err != nil {
				return fmt.Errorf("database: make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// MySQLConfig turns the contract's `USER:PASS@tcp(HOST:PORT)/DB` into a driver
// config with the settings the host relies on: utf8mb4 with binary collation
// and UTC. (Columns carry their own NO PAD collation, see IdentityCollation,
// which decides every comparison with a stored identity.)
func MySQLConfig(dsn string) (*mysqldriver.Config, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("database: mysql: %v", err)
	}
	cfg.Collation = "utf8mb4_bin"
	cfg.ParseTime = false
	cfg.Loc = time.UTC
	cfg.MultiStatements = false
	cfg.InterpolateParams = false
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["charset"] = "utf8mb4"
	return cfg, nil
}

func openMySQL(dsn string) (*DB, error) {
	cfg, err := MySQLConfig(dsn)
	if err != nil {
		return nil, err
	}
	g, err := gorm.Open(mysql.New(mysql.Config{DSNConfig: cfg}), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("database: open mysql %s: %v", Redact("mysql://"+dsn), err)
	}
	sdb, _ := g.DB()
	sdb.SetMaxOpenConns(32)
	sdb.SetMaxIdleConns(32)
	sdb.SetConnMaxLifetime(5 * time.Minute)
	coll, err := IdentityCollation(g)
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("database: open mysql %s: %v", Redact("mysql://"+dsn), err)
	}
	return &DB{Write: g, Read: g, Dialect: MySQL, Collation: coll}, nil
}

// Identity collations. A stored key, namespace or id is the exact string on
// every backend: "note " is not "note", "x" is not "X", and the NFC and NFD
// forms of a name are different keys. SQLite compares text byte for byte.
// MySQL's and MariaDB's utf8mb4_bin is a PAD SPACE collation, under which
// trailing spaces do not count ("note " = "note"), so text columns use a
// binary collation with NO PAD instead: utf8mb4_nopad_bin on MariaDB,
// utf8mb4_0900_bin on MySQL 8. A varchar keeps counting characters, not bytes,
// which the column lengths (80 characters for a key) rely on.
var identityCollations = []string{"utf8mb4_nopad_bin", "utf8mb4_0900_bin"}

// IdentityCollation returns the NO PAD binary utf8mb4 collation the MySQL or
// MariaDB server behind g offers, or an error when it has none (MySQL before
// 8.0, MariaDB before 10.2): such a server cannot keep keys apart.
func IdentityCollation(g *gorm.DB) (string, error) {
	var have []string
	if err := g.Raw("SELECT collation_name FROM information_schema.collations WHERE collation_name IN ?", identityCollations).
		Scan(&have).Error; err != nil {
		return "", fmt.Errorf("read the server's collations: %w", err)
	}
	for _, c := range identityCollations {
		for _, h := range have {
			if strings.EqualFold(c, h) {
				return c, nil
			}
		}
	}
	return "", fmt.Errorf("the server offers no NO PAD binary collation (%s); MariaDB 10.2 or MySQL 8.0 or newer is needed so that keys differing only in trailing spaces stay distinct", strings.Join(identityCollations, ", "))
}

// Ping checks that the store answers.
func (db *DB) Ping(ctx context.Context) error {
	s, err := db.Read.DB()
	if err != nil {
		return err
	}
	return s.PingContext(ctx)
}

// Close closes every connection.
func (db *DB) Close() error {
	if db.wal != nil {
		db.wal.close()
	}
	var errs []error
	for _, g := range []*gorm.DB{db.Write, db.Read} {
		if s, err := g.DB(); err == nil {
			errs = append(errs, s.Close())
		}
		if db.Read == db.Write {
			break
		}
	}
	return errors.Join(errs...)
}

// TableOptions are appended to CREATE TABLE on this dialect.
func (db *DB) TableOptions() string {
	if db.Dialect == MySQL {
		coll := db.Collation
		if coll == "" {
			coll = identityCollations[0]
		}
		return "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=" + coll
	}
	return ""
}

// Redact hides the password of a DSN for messages and logs.
func Redact(dsn string) string { return redact.Userinfo(dsn, "***", false) }

// IsDuplicate reports whether err is a unique-constraint violation.
func IsDuplicate(err error) bool {
	if err == nil {
		return false
	}
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	return errors.Is(err, gorm.ErrDuplicatedKey) || strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// FromMicros returns a stored time (microseconds since the Unix epoch) in UTC.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// SQLTx returns the database/sql transaction under a gorm transaction, so
// that packages on database/sql can work inside it.
func SQLTx(tx *gorm.DB) (*sql.Tx, error) {
	t, ok := tx.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return nil, fmt.Errorf("database: %T is not a transaction", tx.Statement.ConnPool)
	}
	return t, nil
}
