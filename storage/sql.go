package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"pluginhost/database"
	"pluginhost/models"
)

// queries holds the storage statements, prepared once per connection. The
// storage path is the host's hottest: it runs its statements through
// database/sql on the connections gorm manages, so that each statement is
// parsed once per connection instead of once per call.
type queries struct {
	mu    sync.Mutex
	ready atomic.Bool

	scope, scopeLocked, item, itemLocked, usage *sql.Stmt
	itemHead                                    *sql.Stmt // an item without its value, to replace it
	installationOf, lockInstallation            *sql.Stmt // MySQL only: the lock order
	insert, update, del, addUsage, bump         *sql.Stmt
	list                                        *sql.Stmt
	mark, changes                               *sql.Stmt // SQLite only: the writer's mark (see batchTx)

	snapshots sync.Map // number of namespaces -> *sql.Stmt (snapshotSQL)
}

// snapshotSQL reads an Instance's storage revision and its items in the
// namespaces given (n placeholders), in namespace and key order; an
// Instance without items reads as one row with an empty namespace.
func snapshotSQL(n int) string {
	return `SELECT instances.storage_revision, COALESCE(storage_items.namespace, ''), COALESCE(storage_items.item_key, ''),
	COALESCE(storage_items.value, ''), COALESCE(storage_items.size, 0), COALESCE(storage_items.revision, 0),
	COALESCE(storage_items.created_at, 0), COALESCE(storage_items.updated_at, 0)
	FROM instances LEFT JOIN storage_items ON storage_items.instance_id = instances.id
	AND storage_items.namespace IN (''` + strings.Repeat(", ?", n) + `)
	WHERE instances.id = ? ORDER BY storage_items.namespace, storage_items.item_key`
}

// snapshotOf returns the statement of snapshotSQL(n), prepared once.
func (q *queries) snapshotOf(ctx context.Context, db *sql.DB, n int) (*sql.Stmt, error) {
	if st, ok := q.snapshots.Load(n); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(context.WithoutCancel(ctx), snapshotSQL(n))
	if err != nil {
		return nil, fmt.Errorf("storage: prepare: %w", err)
	}
	if prev, loaded := q.snapshots.LoadOrStore(n, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

const (
	// scopeSQL reads what the storage rules need of an Instance and its
	// Installation: the columns of access.SQL that Decide and the scope
	// use, and no others, since each column costs on every call.
	scopeSQL = `SELECT instances.user_id, instances.enabled, instances.storage_revision, instances.installation_id,
	installations.plugin_id, installations.generation, installations.status, installations.ai_consent, installations.used_bytes
	FROM instances JOIN installations ON installations.id = instances.installation_id WHERE instances.id = ?`
	itemSQL     = `SELECT value, size, revision, created_at, updated_at FROM storage_items WHERE instance_id = ? AND namespace = ? AND item_key = ?`
	itemHeadSQL = `SELECT size, revision, created_at FROM storage_items WHERE instance_id = ? AND namespace = ? AND item_key = ?`
	usageSQL    = `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM storage_items WHERE instance_id = ? AND namespace = ?`
	listSQL     = `SELECT item_key, value, size, revision, created_at, updated_at FROM storage_items
	WHERE instance_id = ? AND namespace = ? AND item_key > ? ORDER BY item_key LIMIT ?`
	insertSQL = `INSERT INTO storage_items (instance_id, namespace, item_key, installation_id, value, size, revision, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`
	updateSQL   = `UPDATE storage_items SET value = ?, size = ?, revision = revision + 1, updated_at = ? WHERE instance_id = ? AND namespace = ? AND item_key = ? AND revision = ?`
	deleteSQL   = `DELETE FROM storage_items WHERE instance_id = ? AND namespace = ? AND item_key = ? AND revision = ?`
	addUsageSQL = `UPDATE installations SET used_bytes = used_bytes + ? WHERE id = ?`
	bumpSQL     = `UPDATE instances SET storage_revision = storage_revision + ? WHERE id = ?`
	// A write locks its Installation's row before its Instance's (the lock
	// order of package database): it reads which Installation before its
	// transaction.
	markSQL             = `SELECT total_changes(), data_version FROM pragma_data_version`
	changesSQL          = `SELECT total_changes()`
	installationOfSQL   = `SELECT installation_id FROM instances WHERE id = ?`
	lockInstallationSQL = `SELECT id FROM installations WHERE id = ? FOR UPDATE`
)

// prepare prepares the statements on first use. The statements serve every
// later caller, so the first caller's cancellation does not cut their
// preparation short, and a failure is not kept: the next call tries again.
func (s *Service) prepare(ctx context.Context) (*queries, error) {
	q := &s.q
	if q.ready.Load() {
		return q, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ready.Load() {
		return q, nil
	}
	w, err := s.DB.Write.DB()
	if err != nil {
		return nil, err
	}
	r, err := s.DB.Read.DB()
	if err != nil {
		return nil, err
	}
	lock := ""
	if s.DB.Dialect == database.MySQL {
		lock = " FOR UPDATE"
	}
	ctx = context.WithoutCancel(ctx)
	var prepared []*sql.Stmt
	for _, p := range []struct {
		db   *sql.DB
		dst  **sql.Stmt
		text string
	}{
		{r, &q.scope, scopeSQL}, {w, &q.scopeLocked, scopeSQL + lock},
		{r, &q.item, itemSQL}, {w, &q.itemLocked, itemSQL}, {w, &q.itemHead, itemHeadSQL}, {w, &q.usage, usageSQL},
		{r, &q.list, listSQL},
		{w, &q.insert, insertSQL}, {w, &q.update, updateSQL}, {w, &q.del, deleteSQL},
		{w, &q.addUsage, addUsageSQL}, {w, &q.bump, bumpSQL},
		{r, &q.installationOf, installationOfSQL}, {w, &q.lockInstallation, lockInstallationSQL},
		{w, &q.mark, markSQL}, {w, &q.changes, changesSQL},
	} {
		switch p.dst {
		case &q.installationOf, &q.lockInstallation:
			if s.DB.Dialect != database.MySQL {
				continue // SQLite has one writer and no FOR UPDATE
			}
		case &q.mark, &q.changes:
			if s.DB.Dialect != database.SQLite {
				continue
			}
		}
		st, err := p.db.PrepareContext(ctx, p.text)
		if err != nil {
			for _, st := range prepared {
				st.Close()
			}
			return nil, fmt.Errorf("storage: prepare: %w", err)
		}
		prepared = append(prepared, st)
		*p.dst = st
	}
	s.readDB = r
	q.ready.Store(true)
	return q, nil
}

// on returns the statement for use inside tx, or as is outside one.
func on(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	if tx == nil {
		return st
	}
	return tx.StmtContext(ctx, st)
}

// readItemHead reads one item without its value, or NOT_FOUND.
func readItemHead(ctx context.Context, st *sql.Stmt, instanceID, ns, key string) (database.ItemRow, error) {
	r := database.ItemRow{InstanceID: instanceID, Namespace: ns, Key: key}
	err := st.QueryRowContext(ctx, instanceID, ns, key).Scan(&r.Size, &r.Revision, &r.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, models.Errorf(models.ErrNotFound, "key %q does not exist in namespace %q", key, ns)
	}
	return r, err
}

// readItem reads one item, or NOT_FOUND.
func readItem(ctx context.Context, st *sql.Stmt, instanceID, ns, key string) (database.ItemRow, error) {
	r := database.ItemRow{InstanceID: instanceID, Namespace: ns, Key: key}
	err := st.QueryRowContext(ctx, instanceID, ns, key).Scan(&r.Value, &r.Size, &r.Revision, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, models.Errorf(models.ErrNotFound, "key %q does not exist in namespace %q", key, ns)
	}
	return r, err
}
