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
	return &DB{Write: w, Read: r, Dialect: SQLite}, nil
}

// MySQLConfig turns the contract's `USER:PASS@tcp(HOST:PORT)/DB` into a driver
// config with the settings the host relies on: utf8mb4 with binary collation
// (keys compare and sort by code point, as on SQLite) and UTC.
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
	return &DB{Write: g, Read: g, Dialect: MySQL}, nil
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
		return "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	}
	return ""
}

// Redact hides the password of a DSN for messages and logs.
func Redact(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	if at < 0 {
		return dsn
	}
	head := dsn[:at]
	scheme := ""
	if i := strings.Index(head, "://"); i >= 0 {
		scheme, head = head[:i+3], head[i+3:]
	}
	if i := strings.Index(head, ":"); i >= 0 {
		head = head[:i] + ":***"
	}
	return scheme + head + dsn[at:]
}

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
