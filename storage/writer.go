package storage

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"sync"

	"pluginhost/database"
	"pluginhost/models"
)

// Group commit (SQLite). SQLite has one writer; handing its connection from
// goroutine to goroutine costs a scheduling wake-up per write, which under
// load dominates. Instead one goroutine owns the write path: it takes every
// queued write, runs them one after another in a single transaction and
// commits once. Each write still sees the writes before it, so revisions and
// quotas hold exactly as with one transaction per write.
//
// A write that fails a rule has written nothing (every rule is checked before
// the first statement that changes data), so it simply reports its error. A
// database error rolls the batch back, and its writes run again, each in a
// transaction of its own, so one bad write cannot fail its neighbours.
//
// The writer keeps the scopes it read (scopeCache) from one batch to the
// next, so that an Instance's row is not read again on every write: the
// writer's own writes keep them current, and they are dropped whenever
// anything else may have changed the database since the writer's last
// commit (see batchTx).

// MaxBatch bounds the writes committed together.
const MaxBatch = 64

type writeReq struct {
	ctx        context.Context
	c          models.Caller
	instanceID string
	all        bool // may fail after changing something: run under a savepoint
	fn         writeFunc
	done       chan writeResult
}

type writeResult struct {
	changes []models.StorageChange
	err     error
}

type batcher struct {
	queue chan *writeReq
	stop  chan struct{}
	wg    sync.WaitGroup

	// Owned by the write goroutine: the scopes it keeps, and the database
	// as its last commit left it (zero: unknown, the scopes are not kept).
	scopes *scopeCache
	mark   writeMark
}

// writeMark is the state of the SQLite database as the writer's last
// commit left it: the connection, the rows that connection has changed in
// its life (total_changes(), which counts every other user of the one write
// connection too), and data_version, which changes when another connection,
// of any process, commits.
type writeMark struct {
	conn    any // the driver's connection
	changes int64
	version int64
}

// StartBatching makes one goroutine own writes (for SQLite). Close stops it.
func (s *Service) StartBatching() {
	s.batch = &batcher{queue: make(chan *writeReq, 4*MaxBatch), stop: make(chan struct{}), scopes: newScopeCache()}
	s.batch.wg.Add(1)
	go s.writeLoop()
}

// Close writes the audit records of runs still waiting and stops the write
// goroutine after the queued writes.
func (s *Service) Close() {
	s.closeRuns()
	if s.batch != nil {
		close(s.batch.stop)
		s.batch.wg.Wait()
	}
}

func (s *Service) submit(ctx context.Context, c models.Caller, instanceID string, all bool, fn writeFunc) ([]models.StorageChange, error) {
	req := &writeReq{ctx: ctx, c: c, instanceID: instanceID, all: all, fn: fn, done: make(chan writeResult, 1)}
	select {
	case s.batch.queue <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.batch.stop:
		return nil, errors.New("storage: shutting down")
	}
	r := <-req.done // a started write always completes and answers
	return r.changes, r.err
}

func (s *Service) writeLoop() {
	defer s.batch.wg.Done()
	batch := make([]*writeReq, 0, MaxBatch)
	for {
		select {
		case req := <-s.batch.queue:
			batch = append(batch[:0], req)
		case <-s.batch.stop:
			for {
				select {
				case req := <-s.batch.queue:
					s.runBatch([]*writeReq{req})
				default:
					return
				}
			}
		}
		// A batch that is not full yields once before it commits: the
		// requests other goroutines are about to submit join it, and the
		// commit (a disk flush) serves them all. With nothing else to run,
		// the yield returns at once.
		for yielded := false; ; yielded = true {
		fill:
			for len(batch) < MaxBatch {
				select {
				case req := <-s.batch.queue:
					batch = append(batch, req)
				default:
					break fill
				}
			}
			if yielded || len(batch) == MaxBatch {
				break
			}
			runtime.Gosched()
		}
		s.runBatch(batch)
	}
}

// runBatch runs writes in one transaction; on a database error, each again
// alone. A lock conflict batchTx retried to its bound already
// (database.IsRetryable) is instead the answer to every write of the batch.
func (s *Service) runBatch(batch []*writeReq) {
	var results []writeResult
	err := s.batchTx(func(tx *sql.Tx, cache *scopeCache) error {
		results = make([]writeResult, len(batch))
		for i, req := range batch {
			if err := req.ctx.Err(); err != nil {
				results[i].err = err
				continue
			}
			// Once started, a write runs to the end: cancelling one statement
			// would make SQLite roll back the whole batch's transaction.
			wctx := context.WithoutCancel(req.ctx)
			if req.all {
				if _, err := tx.ExecContext(wctx, "SAVEPOINT write_all"); err != nil {
					return err
				}
			}
			changes, err := s.apply(wctx, tx, req.c, req.instanceID, req.fn, cache)
			var appErr *models.Error
			if err != nil && !errors.As(err, &appErr) {
				return err // the transaction is unusable: retry one by one
			}
			if req.all {
				if err != nil {
					if _, err := tx.ExecContext(wctx, "ROLLBACK TO SAVEPOINT write_all"); err != nil {
						return err
					}
				}
				// (a refused write never reaches the cache: it is updated on success only)
				if _, err := tx.ExecContext(wctx, "RELEASE SAVEPOINT write_all"); err != nil {
					return err
				}
			}
			results[i] = writeResult{changes, err}
		}
		return nil
	})
	if err != nil && len(batch) > 1 && !database.IsRetryable(err) {
		for _, req := range batch {
			s.runBatch([]*writeReq{req})
		}
		return
	}
	for i, req := range batch {
		r := results[i]
		if err != nil {
			r = writeResult{nil, err}
		} else {
			s.publish(r.changes)
		}
		req.done <- r
	}
}

// batchTx runs fn in a transaction on the write connection, as inTx does,
// with the writer's scopes. First in the transaction, which holds SQLite's
// write lock, it reads the database's mark: unless it is the mark of the
// writer's last commit (the same connection, which no one else has used to
// change a row since, and no commit by another connection), the scopes are
// dropped. The scopes are kept for the next batch only if fn's transaction
// commits.
func (s *Service) batchTx(fn func(tx *sql.Tx, cache *scopeCache) error) error {
	ctx := context.Background()
	q, err := s.prepare(ctx)
	if err != nil {
		return err
	}
	w, err := s.DB.Write.DB()
	if err != nil {
		return err
	}
	conn, err := w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var dc any
	if err := conn.Raw(func(c any) error { dc = c; return nil }); err != nil {
		return err
	}
	b := s.batch
	return database.Retry(ctx, func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		now := writeMark{conn: dc}
		if err := tx.StmtContext(ctx, q.mark).QueryRowContext(ctx).Scan(&now.changes, &now.version); err != nil {
			tx.Rollback()
			return err
		}
		if now != b.mark {
			b.scopes.reset()
		}
		b.mark = writeMark{} // unknown until this transaction commits
		if err := fn(tx, b.scopes); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.StmtContext(ctx, q.changes).QueryRowContext(ctx).Scan(&now.changes); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		b.mark = now
		return nil
	})
}

// inTx runs fn in a transaction on the writer and commits if it succeeds. A
// transaction the database aborts as a deadlock, a lock wait timeout or a
// busy SQLite file runs again from the start (database.Retry), so fn must keep
// no state from an earlier call.
func (s *Service) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	// Statements are prepared before the transaction takes a connection: on
	// SQLite it holds the only writer connection.
	if _, err := s.prepare(ctx); err != nil {
		return err
	}
	w, err := s.DB.Write.DB()
	if err != nil {
		return err
	}
	return database.Retry(ctx, func() error {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}
