package storage

import (
	"context"
	"strconv"
	"sync"
	"time"

	"database/sql"
	"pluginhost/access"
	"pluginhost/database"
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
	if q.closed || len(q.pending)+len(q.fetches) >= maxPendingRuns {
		q.mu.Unlock()
		return s.recordAudit(ctx, r) // shutting down, or the database is behind: wait for it
	}
	q.pending = append(q.pending, r)
	q.wakeLocked()
	q.mu.Unlock()
	return nil
}

// wakeLocked wakes the writer for the first record waiting.
func (q *runQueue) wakeLocked() {
	if len(q.pending)+len(q.fetches) == 1 {
		select {
		case q.wake <- struct{}{}:
		default: // the writer is awake already
		}
	}
}

// FetchRecord is the audit record of one request a capability had the host
// make: never the URL's path or query, its headers or bodies.
type FetchRecord struct {
	// ID numbers the record once it is written (0 before).
	ID                                             int64
	UserID, InstallationID, InstanceID, Capability string
	Host, Method, Connection                       string
	Status                                         int
	Outcome                                        string // ok, or the error the module was given
	BytesSent, BytesReceived                       int64
	Duration                                       time.Duration
	At                                             time.Time
}

// RecordFetches records fetches in their audit trail, written as the
// records of runs are (RecordRun).
func (s *Service) RecordFetches(ctx context.Context, records []FetchRecord) error {
	rows := make([]database.FetchAuditRow, len(records))
	for i, r := range records {
		rows[i] = database.FetchAuditRow{UserID: r.UserID, InstallationID: r.InstallationID, InstanceID: r.InstanceID,
			Capability: auditField(r.Capability, MaxAuditCapabilityChars), Host: auditField(r.Host, 260), Method: auditField(r.Method, 16),
			Status: r.Status, Outcome: auditField(r.Outcome, MaxAuditOutcomeChars), Connection: auditField(r.Connection, 64),
			BytesSent: r.BytesSent, BytesReceived: r.BytesReceived, DurationMicros: r.Duration.Microseconds(), CreatedAt: r.At.UnixMicro()}
	}
	q := s.runQueue()
	q.mu.Lock()
	if q.closed || len(q.pending)+len(q.fetches) >= maxPendingRuns {
		q.mu.Unlock()
		return s.DB.Write.WithContext(ctx).Create(&rows).Error
	}
	for _, r := range rows {
		q.fetches = append(q.fetches, r)
		q.wakeLocked()
	}
	q.mu.Unlock()
	return nil
}

// fetchList names the cursors of an Instance's fetches.
const fetchList = "fetches"

// Fetches returns a page of the requests an Instance's capabilities had the
// host make, newest first; another user's Instance, or an unknown one, is
// PLUGIN_STORAGE_PERMISSION_DENIED.
func (s *Service) Fetches(ctx context.Context, c models.Caller, instanceID string, args models.PageArgs) (*models.Page[*FetchRecord], error) {
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(fetchList, 1)
	if err != nil {
		return nil, err
	}
	r, err := s.Gate.Read(ctx, instanceID)
	if err != nil {
		return nil, s.internal(err)
	}
	if err := access.Decide(c, instanceID, r, access.Manage); err != nil {
		return nil, err
	}
	s.flushRuns()
	q := s.DB.Read.WithContext(ctx).Where("user_id = ? AND instance_id = ?", c.UserID, instanceID)
	if after != nil {
		before, err := models.CursorInt(fetchList, after[0])
		if err != nil {
			return nil, err
		}
		q = q.Where("id < ?", before)
	}
	var rows []database.FetchAuditRow
	if err := q.Order("id DESC").Limit(size + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	return models.NewPage(fetchList, size, fetchRecords(rows), func(f *FetchRecord) []string { return []string{strconv.FormatInt(f.ID, 10)} }), nil
}

// Fetch returns one record of the user's fetches; another user's, or an
// unknown one, is PLUGIN_STORAGE_PERMISSION_DENIED.
func (s *Service) Fetch(ctx context.Context, userID string, id int64) (*FetchRecord, error) {
	s.flushRuns()
	var rows []database.FetchAuditRow
	if err := s.DB.Read.WithContext(ctx).Where("user_id = ? AND id = ?", userID, id).Limit(1).Find(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, models.Errorf(models.ErrPermissionDenied, "fetch record %d does not exist or is not yours", id)
	}
	return fetchRecords(rows)[0], nil
}

func fetchRecords(rows []database.FetchAuditRow) []*FetchRecord {
	out := make([]*FetchRecord, len(rows))
	for i, r := range rows {
		out[i] = &FetchRecord{ID: r.ID, UserID: r.UserID, InstallationID: r.InstallationID, InstanceID: r.InstanceID, Capability: r.Capability,
			Host: r.Host, Method: r.Method, Connection: r.Connection, Status: r.Status, Outcome: r.Outcome,
			BytesSent: r.BytesSent, BytesReceived: r.BytesReceived, Duration: time.Duration(r.DurationMicros) * time.Microsecond,
			At: time.UnixMicro(r.CreatedAt).UTC()}
	}
	return out
}

const fetchInsertSQL = `INSERT INTO fetch_audit (user_id, installation_id, instance_id, capability, host, method, status,
	outcome, connection, bytes_sent, bytes_received, duration_micros, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// RunAuditDelay is the longest a run's audit record waits to be written.
const RunAuditDelay = 100 * time.Millisecond

// maxPendingRuns bounds the records waiting; past it, a run writes its own.
const maxPendingRuns = 4096

// runQueue holds the audit records of runs not yet written.
type runQueue struct {
	mu      sync.Mutex
	pending []auditRecord
	fetches []database.FetchAuditRow
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
	batch, fetches := q.pending, q.fetches
	q.pending, q.fetches = nil, nil
	q.mu.Unlock()
	if len(batch)+len(fetches) == 0 {
		return
	}
	err := s.inTx(context.Background(), func(tx *sql.Tx) error {
		for _, r := range batch {
			if _, err := tx.Exec(auditInsertSQL, r.args()...); err != nil {
				return err
			}
		}
		for _, r := range fetches {
			if _, err := tx.Exec(fetchInsertSQL, r.UserID, r.InstallationID, r.InstanceID, r.Capability, r.Host, r.Method, r.Status,
				r.Outcome, r.Connection, r.BytesSent, r.BytesReceived, r.DurationMicros, r.CreatedAt); err != nil {
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
