package storage

import (
	"context"
	"sync"
	"time"

	"database/sql"
	"pluginhost/models"
)

// Audit operations of capabilities.
const (
	// OperationRun is a capability run.
	OperationRun = "run"
	// OperationQuarantine is a background capability put in quarantine:
	// its schedule paused (see package schedule).
	OperationQuarantine = "quarantine"
)

// RecordRun records one capability run in the audit trail: who started it
// (c.Actor: capability, background or ai), which capability of which
// Instance, and its outcome (ok, or the failure's reason or code). It never
// records arguments, values or output.
//
// The record of a run someone waits for (not a background run) is written in
// the background, with the others of the next RunAuditDelay, in one
// transaction: the caller does not wait for a commit of its own (on SQLite,
// a flush to disk). Audit on this server reads what is waiting first, other
// replicas see it within RunAuditDelay, and Close writes it; a crash of the
// process loses at most that delay's records.
func (s *Service) RecordRun(ctx context.Context, c models.Caller, installationID, instanceID, outcome string) error {
	r := auditRecord{
		userID: c.UserID, installationID: installationID, instanceID: instanceID,
		actor: c.Actor, capability: c.Capability, operation: OperationRun, outcome: outcome,
		at: time.Now().UTC(),
	}
	if c.Actor == models.ActorBackground {
		return s.recordAudit(ctx, r)
	}
	return s.queueRun(ctx, r)
}

// RecordCapability records an operation of a capability (such as
// OperationQuarantine) and its outcome in the audit trail.
func (s *Service) RecordCapability(ctx context.Context, c models.Caller, installationID, instanceID, operation, outcome string) error {
	return s.recordAudit(ctx, auditRecord{
		userID: c.UserID, installationID: installationID, instanceID: instanceID,
		actor: c.Actor, capability: c.Capability, operation: operation, outcome: outcome,
	})
}

// queueRun queues r for the background writer, or writes it now when the
// service is closing or too many records are waiting.
func (s *Service) queueRun(ctx context.Context, r auditRecord) error {
	q := s.runQueue()
	q.mu.Lock()
	if q.closed || len(q.pending) >= maxPendingRuns {
		q.mu.Unlock()
		return s.recordAudit(ctx, r) // shutting down, or the database is behind: wait for it
	}
	q.pending = append(q.pending, r)
	if len(q.pending) == 1 {
		select {
		case q.wake <- struct{}{}:
		default: // the writer is awake already
		}
	}
	q.mu.Unlock()
	return nil
}

// RunAuditDelay is the longest a run's audit record waits to be written.
const RunAuditDelay = 100 * time.Millisecond

// maxPendingRuns bounds the records waiting; past it, a run writes its own.
const maxPendingRuns = 4096

// runQueue holds the audit records of runs not yet written.
type runQueue struct {
	mu      sync.Mutex
	pending []auditRecord
	closed  bool
	writing sync.Mutex // held while a batch is written, so Flush can wait for it
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func (s *Service) runQueue() *runQueue {
	s.runsOnce.Do(func() {
		s.runs = &runQueue{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		go s.writeRuns()
	})
	return s.runs
}

// writeRuns writes the pending records every RunAuditDelay while there are
// some, until Close.
func (s *Service) writeRuns() {
	q := s.runs
	defer close(q.done)
	for {
		select {
		case <-q.wake:
		case <-q.stop:
			s.flushRuns()
			return
		}
		select {
		case <-time.After(RunAuditDelay):
		case <-q.stop:
		}
		s.flushRuns()
	}
}

// flushRuns writes the pending records of runs, in one transaction.
func (s *Service) flushRuns() {
	q := s.runQueue()
	q.writing.Lock()
	defer q.writing.Unlock()
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	q.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := s.inTx(context.Background(), func(tx *sql.Tx) error {
		for _, r := range batch {
			if _, err := tx.Exec(auditInsertSQL, r.args()...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && s.Log != nil {
		s.Log.Error("storage: audit records of runs lost", "err", err, "records", len(batch))
	}
}

// closeRuns writes the pending records and stops the background writer;
// later records are written as they come.
func (s *Service) closeRuns() {
	q := s.runQueue()
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	close(q.stop)
	<-q.done
}
