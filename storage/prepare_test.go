package storage_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"pluginhost/access"
	"pluginhost/internal/testenv"
	"pluginhost/storage"
)

// TestFirstCallerCancelledDoesNotBreakStorage: the statements are prepared by
// the first call; when that caller goes away (a client that closed its
// socket), its call fails, and every later call still works.
func TestFirstCallerCancelledDoesNotBreakStorage(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		fresh := &storage.Service{DB: w.env.DB, Bus: w.env.Store.Bus, Gate: &access.Gate{DB: w.env.DB}, Log: slog.New(slog.DiscardHandler)}
		gone, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := fresh.Create(gone, w.a, w.notes.ID, "notes", "first", js("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("a call whose caller is gone: %v, want context.Canceled", err)
		}
		if _, err := fresh.Create(ctx, w.a, w.notes.ID, "notes", "second", js("y")); err != nil {
			t.Fatalf("the next caller: %v", err)
		}
		if _, _, err := fresh.WatchAt(ctx, w.a, w.notes.ID, nil); err != nil {
			t.Fatalf("a watch after it: %v", err)
		}
	})
}
