package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"pluginhost/access"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

// TestFirstCallerCancelledDoesNotBreakStorage: the statements are prepared by
// the first call; when that caller goes away (a client that closed its
// socket), its call fails, and every later call still works.
func TestFirstCallerCancelledDoesNotBreakStorage(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		fresh := w.replica(t)
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

// TestRunRecordsSurviveClose: the audit records of runs are written in the
// background; a read of the trail sees them at once, and Close writes those
// still waiting, so a service started afterwards reads them too.
func TestRunRecordsSurviveClose(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		first := &storage.Service{DB: w.env.DB, Bus: w.env.Store.Bus, Gate: &access.Gate{DB: w.env.DB}}
		run := models.Caller{UserID: w.alice.ID, Actor: models.ActorCapability, Capability: "notes.summary"}
		if err := first.RecordRun(ctx, run, w.instlNotes.ID, w.notes.ID, "ok"); err != nil {
			t.Fatal(err)
		}
		trail, err := first.Audit(ctx, w.alice.ID, storage.AuditQuery{Actor: models.ActorCapability})
		got := trail.Nodes()
		if err != nil || len(got) != 1 || got[0].Operation != storage.OperationRun || got[0].Capability != "notes.summary" {
			t.Fatalf("the trail right after a run: %+v %v", got, err)
		}
		for i := range 5 {
			first.RecordRun(ctx, run, w.instlNotes.ID, w.notes.ID, fmt.Sprint("failed-", i))
		}
		first.Close()
		later := &storage.Service{DB: w.env.DB, Bus: w.env.Store.Bus, Gate: &access.Gate{DB: w.env.DB}}
		defer later.Close()
		trail, err = later.Audit(ctx, w.alice.ID, storage.AuditQuery{Actor: models.ActorCapability})
		got = trail.Nodes()
		if err != nil || len(got) != 6 || got[0].Outcome != "failed-4" {
			t.Fatalf("after Close, a new service reads %d records (%v), newest %+v; want 6, failed-4 newest", len(got), err, got)
		}
	})
}
