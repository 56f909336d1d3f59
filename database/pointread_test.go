package database_test

import (
	"context"
	"errors"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/testenv"
)

// A point read on SQLite, a local file, goes on when the request that
// asked for it is gone (it takes microseconds, and watching for the end of
// the request would cost a fifth of it); on MySQL, across the network, it
// stops with the request.
func TestPointRead(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		db, err := database.Open(b.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		read, err := db.Read.DB()
		if err != nil {
			t.Fatal(err)
		}
		type key struct{}
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "kept"))
		cancel()
		point := db.PointRead(ctx)
		if point.Value(key{}) != "kept" {
			t.Error("the point read's context lost the request's values")
		}
		var one int
		err = read.QueryRowContext(point, "SELECT 1").Scan(&one)
		switch b.Name {
		case "sqlite":
			if err != nil || one != 1 {
				t.Errorf("a point read with the request gone: %d, %v; want 1", one, err)
			}
		default:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a point read on %s with the request gone: %v; want it canceled", b.Name, err)
			}
		}
	})
}
