package database

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"modernc.org/sqlite"
)

// Lock order. Every transaction that locks rows of more than one table takes
// them in one order, so that two of them can never wait for each other:
//
//  0. the plugin id's owner (plugin_owners), in an install or update only,
//  1. the Installation's row (installations),
//  2. its Instances' rows (instances), in ascending id order when several,
//  3. their storage items (storage_items) and rows of other tables.
//
// A storage write therefore locks its Instance's Installation before the
// Instance, as a package update, an uninstall and createInstance do. SQLite
// has one writer at a time and takes no row locks.
//
// Storage revision. A transaction that changes an Instance's rows of
// storage_items (or which of them its manifest's namespaces show) raises
// instances.storage_revision in the same transaction, or deletes the
// Instance with them; a package update also raises the generation. Runs keep
// the contents they read by that revision (storage.ContentsOf) in every
// replica, so a change that did not raise it would not be seen until the
// replicas restart: a migration or a hand edit of storage_items must raise
// it too.

// Retry bounds. A transaction the database aborted as a deadlock victim or
// after a lock wait timeout is run again, at most MaxTxAttempts times in
// all, after a random pause of up to retryPause doubled per attempt.
const (
	MaxTxAttempts = 5
	retryPause    = 10 * time.Millisecond
)

// MySQL and MariaDB errors after which the whole transaction may run again.
const (
	mysqlLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	mysqlDeadlock        = 1213 // ER_LOCK_DEADLOCK
)

// SQLite primary result codes after which the transaction may run again.
const (
	sqliteBusy   = 5 // SQLITE_BUSY: another connection holds the lock
	sqliteLocked = 6 // SQLITE_LOCKED: a conflict within one connection's cache
)

// IsRetryable reports whether err aborted a transaction that may simply run
// again: a deadlock or a lock wait timeout on MySQL/MariaDB, a busy or
// locked database on SQLite.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlDeadlock || me.Number == mysqlLockWaitTimeout
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff // extended codes keep the primary code in the low byte
		return code == sqliteBusy || code == sqliteLocked
	}
	return false
}

// Retry runs a whole transaction, fn, and runs it again while the database
// aborts it as retryable (IsRetryable), at most MaxTxAttempts times, unless
// ctx ends. fn must start its transaction afresh on each call and keep no
// state from an earlier call. It returns fn's last error.
func Retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < MaxTxAttempts; attempt++ {
		if attempt > 0 {
			pause := time.Duration(rand.Int64N(int64(retryPause << (attempt - 1))))
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return err
			}
		}
		if err = fn(); !IsRetryable(err) {
			return err
		}
	}
	return err
}

// Transact runs fn in a transaction on the writer and commits if fn returns
// nil. A transaction the database aborts as retryable runs again as Retry
// does, so fn may run more than once: it must reset whatever it captures
// from its caller before using it.
func (db *DB) Transact(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return Retry(ctx, func() error {
		return db.Write.WithContext(ctx).Transaction(fn)
	})
}
