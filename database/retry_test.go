package database_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"

	"pluginhost/database"
	"pluginhost/internal/testenv"
)

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock 1213", &mysqldriver.MySQLError{Number: 1213}, true},
		{"lock wait timeout 1205", &mysqldriver.MySQLError{Number: 1205}, true},
		{"wrapped deadlock", fmt.Errorf("update: %w", &mysqldriver.MySQLError{Number: 1213}), true},
		{"duplicate key 1062", &mysqldriver.MySQLError{Number: 1062}, false},
		{"data too long 1406", &mysqldriver.MySQLError{Number: 1406}, false},
		{"other error", errors.New("boom"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := database.IsRetryable(tt.err); got != tt.want {
			t.Errorf("%s: IsRetryable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSQLiteBusyIsRetried: a write that finds the SQLite file locked by
// another connection (another process, in production) is SQLITE_BUSY, which
// Retry runs again until the lock is gone.
func TestSQLiteBusyIsRetried(t *testing.T) {
	path := t.TempDir() + "/busy.db"
	db, err := database.Open("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write.Exec("CREATE TABLE t (x INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)") // gives up at once
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := db.Write.DB()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := hold.Begin() // immediate: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Exec("INSERT INTO t VALUES (1)")
	if !database.IsRetryable(err) {
		t.Fatalf("a write beside a held lock: %v, want a retryable busy error", err)
	}
	attempts := 0
	err = database.Retry(context.Background(), func() error {
		attempts++
		if attempts == 2 {
			tx.Rollback() // the other writer finishes
		}
		_, err := other.Exec("INSERT INTO t VALUES (1)")
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("retry: %v after %d attempts, want success on the second", err, attempts)
	}
	// Retry gives up after MaxTxAttempts.
	tx, _ = hold.Begin()
	defer tx.Rollback()
	attempts = 0
	err = database.Retry(context.Background(), func() error {
		attempts++
		_, err := other.Exec("INSERT INTO t VALUES (1)")
		return err
	})
	if !database.IsRetryable(err) || attempts != database.MaxTxAttempts {
		t.Fatalf("retry of a lock never released: %v after %d attempts, want busy after %d", err, attempts, database.MaxTxAttempts)
	}
}

// TestMySQLDeadlockIsRetried: two transactions that lock two rows in opposite
// orders deadlock on InnoDB; the victim (error 1213) runs again under Retry
// and both commit.
func TestMySQLDeadlockIsRetried(t *testing.T) {
	db, err := database.Open(testenv.FreshMySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write.Exec("CREATE TABLE t (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB").Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Write.Exec("INSERT INTO t VALUES (1, 0), (2, 0)").Error; err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.Write.DB()
	if err != nil {
		t.Fatal(err)
	}
	var barrier sync.WaitGroup
	barrier.Add(2)
	var attempts [2]atomic.Int32
	run := func(who int, first, second int) error {
		return database.Retry(context.Background(), func() error {
			n := attempts[who].Add(1)
			tx, err := sqlDB.Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.Exec("UPDATE t SET n = n + 1 WHERE id = ?", first); err != nil {
				return err
			}
			if n == 1 {
				barrier.Done()
				barrier.Wait() // both hold their first row
			}
			if _, err := tx.Exec("UPDATE t SET n = n + 1 WHERE id = ?", second); err != nil {
				return err
			}
			return tx.Commit()
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- run(0, 1, 2) }()
	go func() { errs <- run(1, 2, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a transaction failed: %v", err)
		}
	}
	if a, b := attempts[0].Load(), attempts[1].Load(); a+b != 3 {
		t.Fatalf("attempts %d and %d; want one deadlock victim run twice", a, b)
	}
	var sum int
	db.Read.Raw("SELECT SUM(n) FROM t").Scan(&sum)
	if sum != 4 {
		t.Fatalf("sum %d, want 4: both transactions commit exactly once", sum)
	}
}
