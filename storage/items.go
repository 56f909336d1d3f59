package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"pluginhost/database"
	"pluginhost/metrics"
	"pluginhost/models"
)

// ListQuery selects items of host.storage.list.
type ListQuery struct {
	Namespace string // "" selects the default namespace
	Query     string // case-insensitive substring of keys and values; "" lists all
	Limit     *int   // 1 to 100; nil selects DefaultListLimit
	Cursor    string // next_cursor of a previous page; "" starts at the first key
}

// List returns items of a namespace in key order (by code point).
func (s *Service) List(ctx context.Context, c models.Caller, instanceID string, q ListQuery) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("list", c.Actor, opErr) }()
	after := ""
	if q.Cursor != "" {
		var err error
		if after, err = decodeCursor(q.Cursor); err != nil {
			return nil, err
		}
	}
	data, res, err := s.list(ctx, c, instanceID, q, after, nil)
	if err != nil {
		return nil, err
	}
	if data.HasMore {
		data.NextCursor = encodeCursor(data.Items[len(data.Items)-1].Key)
	}
	more := ""
	if data.HasMore {
		more = "; more are available"
	}
	res.Summary = fmt.Sprintf("Listed %d item(s) of namespace %q%s", len(data.Items), data.Namespace, more)
	res.Data = mustJSON(data)
	return res, nil
}

// list lists the items after the key after that match the query and, when
// set, keep; the result holds their evidence.
func (s *Service) list(ctx context.Context, c models.Caller, instanceID string, q ListQuery, after string, keep func(value []byte) bool) (*models.ListData, *models.ExtensionResult, error) {
	limit := DefaultListLimit
	if q.Limit != nil {
		limit = *q.Limit
	}
	if limit < models.MinListLimit || limit > models.MaxListLimit {
		return nil, nil, models.Errorf(models.ErrInvalid, "limit is %d; it must be from %d to %d", limit, models.MinListLimit, models.MaxListLimit)
	}
	folded, err := checkQuery(q.Query)
	if err != nil {
		return nil, nil, err
	}
	sc, err := s.loadScope(ctx, nil, c, instanceID)
	if err != nil {
		return nil, nil, s.internal(err)
	}
	ns, err := sc.namespace(c, q.Namespace, models.ToolList)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.listRows(ctx, sc.InstanceID, ns.ID, after, folded == "" && keep == nil, limit)
	if err != nil {
		return nil, nil, s.internal(err)
	}
	data := &models.ListData{Namespace: ns.ID, Items: []models.ItemJSON{}}
	res := &models.ExtensionResult{Evidence: []models.Evidence{}}
	bytes := int64(0)
	for _, r := range rows {
		if !matches(r.Key, []byte(r.Value), folded) || keep != nil && !keep([]byte(r.Value)) {
			continue
		}
		if len(data.Items) == limit || (len(data.Items) > 0 && bytes+r.Size > MaxListResponseBytes) {
			data.HasMore = true
			break
		}
		bytes += r.Size
		data.Items = append(data.Items, r.Model().Wire())
		res.Evidence = append(res.Evidence, evidence(sc, ns.ID, r.Key, r.Revision))
	}
	return data, res, nil
}

// Get returns one item.
func (s *Service) Get(ctx context.Context, c models.Caller, instanceID, namespace, key string) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("get", c.Actor, opErr) }()
	if err := checkReadKey(key); err != nil {
		return nil, err
	}
	sc, err := s.loadScope(ctx, nil, c, instanceID)
	if err != nil {
		return nil, s.internal(err)
	}
	ns, err := sc.namespace(c, namespace, models.ToolGet)
	if err != nil {
		return nil, err
	}
	q, err := s.prepare(ctx)
	if err != nil {
		return nil, s.internal(err)
	}
	row, err := readItem(s.DB.PointRead(ctx), q.item, sc.InstanceID, ns.ID, key)
	if err != nil {
		return nil, s.internal(err)
	}
	return itemResult(sc, ns.ID, row, fmt.Sprintf("Read %q of namespace %q at revision %d", key, ns.ID, row.Revision)), nil
}

// Create adds a key that does not exist; it never overwrites.
func (s *Service) Create(ctx context.Context, c models.Caller, instanceID, namespace, key string, value models.JSON) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("create", c.Actor, opErr) }()
	if err := models.ValidateKey(key); err != nil {
		return nil, err
	}
	v, err := checkValue(value)
	if err != nil {
		return nil, err
	}
	return s.writeItem(ctx, c, instanceID, func(ctx context.Context, tx *sql.Tx, sc *scope) (mutation, database.ItemRow, error) {
		return s.create(ctx, tx, c, sc, namespace, key, v)
	}, func(row database.ItemRow) string {
		return fmt.Sprintf("Created %q in namespace %q at revision 1", key, row.Namespace)
	})
}

// Update replaces a value if revision is the item's current revision.
func (s *Service) Update(ctx context.Context, c models.Caller, instanceID, namespace, key string, value models.JSON, revision int64) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("update", c.Actor, opErr) }()
	if err := models.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := checkRevision(revision); err != nil {
		return nil, err
	}
	v, err := checkValue(value)
	if err != nil {
		return nil, err
	}
	return s.writeItem(ctx, c, instanceID, func(ctx context.Context, tx *sql.Tx, sc *scope) (mutation, database.ItemRow, error) {
		return s.update(ctx, tx, c, sc, namespace, key, v, revision)
	}, func(row database.ItemRow) string {
		return fmt.Sprintf("Updated %q in namespace %q to revision %d", key, row.Namespace, row.Revision)
	})
}

// Delete removes a key if revision is its current revision.
func (s *Service) Delete(ctx context.Context, c models.Caller, instanceID, namespace, key string, revision int64) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("delete", c.Actor, opErr) }()
	if err := models.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := checkRevision(revision); err != nil {
		return nil, err
	}
	return s.writeItem(ctx, c, instanceID, func(ctx context.Context, tx *sql.Tx, sc *scope) (mutation, database.ItemRow, error) {
		return s.delete(ctx, tx, c, sc, namespace, key, revision)
	}, func(row database.ItemRow) string {
		return fmt.Sprintf("Deleted %q (revision %d) from namespace %q", key, row.Revision, row.Namespace)
	})
}

// writeItem runs one item change as a write and answers with the item and a
// summary of what happened to it.
func (s *Service) writeItem(ctx context.Context, c models.Caller, instanceID string, change func(ctx context.Context, tx *sql.Tx, sc *scope) (mutation, database.ItemRow, error), summary func(database.ItemRow) string) (*models.ExtensionResult, error) {
	var row database.ItemRow
	var sc *scope
	_, err := s.write(ctx, c, instanceID, false, func(ctx context.Context, tx *sql.Tx, locked *scope) ([]mutation, error) {
		sc = locked
		m, r, err := change(ctx, tx, sc)
		row = r
		return []mutation{m}, err
	})
	if err != nil {
		return nil, err
	}
	return itemResult(sc, row.Namespace, row, summary(row)), nil
}

// create, update and delete are the three item changes inside a write, for
// one key each; the standard tools and host actions share them.
func (s *Service) create(ctx context.Context, tx *sql.Tx, c models.Caller, sc *scope, namespace, key string, v []byte) (mutation, database.ItemRow, error) {
	ns, err := sc.namespace(c, namespace, models.ToolCreate)
	if err != nil {
		return mutation{}, database.ItemRow{}, err
	}
	if err := checkNamespaceValue(ns.ID, v); err != nil {
		return mutation{}, database.ItemRow{}, err
	}
	row, err := s.createItem(ctx, tx, sc, ns, key, v)
	return mutation{ns: ns.ID, key: key, op: models.OpCreate, after: 1, valueBytes: int64(len(v)), head: headOf(row)}, row, err
}

func (s *Service) update(ctx context.Context, tx *sql.Tx, c models.Caller, sc *scope, namespace, key string, v []byte, revision int64) (mutation, database.ItemRow, error) {
	ns, err := sc.namespace(c, namespace, models.ToolUpdate)
	if err != nil {
		return mutation{}, database.ItemRow{}, err
	}
	if err := checkNamespaceValue(ns.ID, v); err != nil {
		return mutation{}, database.ItemRow{}, err
	}
	row, err := s.updateItem(ctx, tx, sc, ns, key, v, revision)
	return mutation{ns: ns.ID, key: key, op: models.OpUpdate, before: revision, after: row.Revision, valueBytes: int64(len(v)), head: headOf(row)}, row, err
}

// headOf is what the writer keeps of an item it wrote.
func headOf(row database.ItemRow) *itemHead {
	return &itemHead{size: row.Size, revision: row.Revision, createdAt: row.CreatedAt}
}

func (s *Service) delete(ctx context.Context, tx *sql.Tx, c models.Caller, sc *scope, namespace, key string, revision int64) (mutation, database.ItemRow, error) {
	ns, err := sc.namespace(c, namespace, models.ToolDelete)
	if err != nil {
		return mutation{}, database.ItemRow{}, err
	}
	row, err := s.deleteItem(ctx, tx, sc, ns, key, revision)
	return mutation{ns: ns.ID, key: key, op: models.OpDelete, before: revision}, row, err
}

// Reset deletes every item of one Instance, in every namespace, and returns how
// many were deleted. Other Instances are untouched.
func (s *Service) Reset(ctx context.Context, c models.Caller, instanceID string) (out int64, opErr error) {
	defer func() { metrics.StorageOperation("reset", c.Actor, opErr) }()
	var deleted int64
	_, err := s.write(ctx, c, instanceID, false, func(ctx context.Context, tx *sql.Tx, sc *scope) ([]mutation, error) {
		var freed int64
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(SUM(size), 0) FROM storage_items WHERE instance_id = ?", sc.InstanceID).Scan(&freed); err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM storage_items WHERE instance_id = ?", sc.InstanceID)
		if err != nil {
			return nil, err
		}
		if deleted, err = res.RowsAffected(); err != nil {
			return nil, err
		}
		if err := s.addUsage(ctx, tx, sc, -freed); err != nil {
			return nil, err
		}
		return []mutation{{op: models.OpReset}}, nil
	})
	return deleted, err
}

func checkRevision(r int64) error {
	if r < 1 {
		return models.Errorf(models.ErrInvalid, "revision is %d; it must be the positive revision of the latest read", r)
	}
	return nil
}

// listRows reads up to limit+1 items after a key in key order; with all, every
// remaining item (for a query, which is matched in Go).
func (s *Service) listRows(ctx context.Context, instanceID, ns, after string, bounded bool, limit int) ([]database.ItemRow, error) {
	q, err := s.prepare(ctx)
	if err != nil {
		return nil, err
	}
	n := models.MaxKeysPerNamespace + 1
	if bounded {
		n = limit + 1
	}
	rs, err := q.list.QueryContext(ctx, instanceID, ns, after, n)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var rows []database.ItemRow
	for rs.Next() {
		r := database.ItemRow{InstanceID: instanceID, Namespace: ns}
		if err := rs.Scan(&r.Key, &r.Value, &r.Size, &r.Revision, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, rs.Err()
}

// createItem inserts a new key after checking the namespace and Installation
// quotas.
func (s *Service) createItem(ctx context.Context, tx *sql.Tx, sc *scope, ns models.NamespaceDecl, key string, v []byte) (database.ItemRow, error) {
	q := &s.q
	if _, err := readItem(ctx, on(ctx, tx, q.itemLocked), sc.InstanceID, ns.ID, key); err == nil {
		return database.ItemRow{}, models.Errorf(models.ErrConflict, "key %q already exists in namespace %q; create never overwrites: get it and update it with its revision", key, ns.ID)
	} else if models.ErrorCode(err) != models.ErrNotFound {
		return database.ItemRow{}, err
	}
	size := itemSize(key, v)
	if err := s.checkQuota(ctx, tx, sc, ns, size, 1); err != nil {
		return database.ItemRow{}, err
	}
	t := time.Now().UnixMicro()
	row := database.ItemRow{InstanceID: sc.InstanceID, Namespace: ns.ID, Key: key, InstallationID: sc.InstallationID,
		Value: string(v), Size: size, Revision: 1, CreatedAt: t, UpdatedAt: t}
	if _, err := on(ctx, tx, q.insert).ExecContext(ctx, row.InstanceID, row.Namespace, row.Key, row.InstallationID, row.Value, row.Size, t, t); err != nil {
		return row, err
	}
	return row, s.addUsage(ctx, tx, sc, size)
}

// updateItem replaces a value at the expected revision. The SQLite writer
// knows the items it wrote (scopeCache.item) and does not read them again.
func (s *Service) updateItem(ctx context.Context, tx *sql.Tx, sc *scope, ns models.NamespaceDecl, key string, v []byte, revision int64) (database.ItemRow, error) {
	q := &s.q
	var row database.ItemRow
	h, kept := sc.cache.item(sc.InstanceID, ns.ID, key)
	if kept {
		row = database.ItemRow{InstanceID: sc.InstanceID, Namespace: ns.ID, Key: key, Size: h.size, Revision: h.revision, CreatedAt: h.createdAt}
	} else {
		var err error
		if row, err = readItemHead(ctx, on(ctx, tx, q.itemHead), sc.InstanceID, ns.ID, key); err != nil {
			return row, err
		}
	}
	if row.Revision != revision {
		return row, models.Errorf(models.ErrConflict, "stale revision for %q in namespace %q: given %d, current %d; read it again and retry", key, ns.ID, revision, row.Revision)
	}
	size := itemSize(key, v)
	if delta := size - row.Size; delta > 0 {
		if err := s.checkQuota(ctx, tx, sc, ns, delta, 0); err != nil {
			return row, err
		}
	}
	old := row.Size
	row.Value, row.Size, row.Revision, row.UpdatedAt = string(v), size, row.Revision+1, time.Now().UnixMicro()
	res, err := on(ctx, tx, q.update).ExecContext(ctx, row.Value, row.Size, row.UpdatedAt, sc.InstanceID, ns.ID, key, revision)
	if err != nil {
		return row, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		sc.cache.forget(sc.InstanceID, ns.ID, key) // (never expected: the cache follows every change)
		return row, staleOr(err, key, ns.ID)
	}
	return row, s.addUsage(ctx, tx, sc, size-old)
}

// deleteItem removes a key at the expected revision and returns it as it was.
func (s *Service) deleteItem(ctx context.Context, tx *sql.Tx, sc *scope, ns models.NamespaceDecl, key string, revision int64) (database.ItemRow, error) {
	q := &s.q
	row, err := readItem(ctx, on(ctx, tx, q.itemLocked), sc.InstanceID, ns.ID, key)
	if err != nil {
		return row, err
	}
	if row.Revision != revision {
		return row, models.Errorf(models.ErrConflict, "stale revision for %q in namespace %q: given %d, current %d; read it again and retry", key, ns.ID, revision, row.Revision)
	}
	res, err := on(ctx, tx, q.del).ExecContext(ctx, sc.InstanceID, ns.ID, key, revision)
	if err != nil {
		return row, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return row, staleOr(err, key, ns.ID)
	}
	return row, s.addUsage(ctx, tx, sc, -row.Size)
}

func staleOr(err error, key, ns string) error {
	if err != nil {
		return err
	}
	return models.Errorf(models.ErrConflict, "stale revision for %q in namespace %q; read it again and retry", key, ns)
}

// checkQuota checks that adding bytes (and keys) keeps the namespace within its
// max_bytes and 256 keys, and the Installation within 512 KiB.
func (s *Service) checkQuota(ctx context.Context, tx *sql.Tx, sc *scope, ns models.NamespaceDecl, addBytes int64, addKeys int) error {
	var keys, bytes int64
	if err := on(ctx, tx, s.q.usage).QueryRowContext(ctx, sc.InstanceID, ns.ID).Scan(&keys, &bytes); err != nil {
		return err
	}
	if addKeys > 0 && keys+int64(addKeys) > models.MaxKeysPerNamespace {
		return models.Errorf(models.ErrQuotaExceeded, "namespace %q already holds %d keys; a namespace may hold at most %d", ns.ID, keys, models.MaxKeysPerNamespace)
	}
	if bytes+addBytes > int64(ns.MaxBytes) {
		return models.Errorf(models.ErrQuotaExceeded, "namespace %q would hold %d bytes, over its max_bytes of %d (now %d bytes in %d keys; an item counts its key and its value as compact JSON)",
			ns.ID, bytes+addBytes, ns.MaxBytes, bytes, keys)
	}
	if sc.UsedBytes+addBytes > models.MaxInstallationBytes {
		return models.Errorf(models.ErrQuotaExceeded, "the Installation would hold %d bytes over all its Instances and namespaces, over the limit of %d (512 KiB; now %d bytes)",
			sc.UsedBytes+addBytes, models.MaxInstallationBytes, sc.UsedBytes)
	}
	return nil
}

// addUsage moves the Installation's byte counter, in the database and in sc.
func (s *Service) addUsage(ctx context.Context, tx *sql.Tx, sc *scope, delta int64) error {
	if delta == 0 {
		return nil
	}
	sc.UsedBytes += delta
	_, err := on(ctx, tx, s.q.addUsage).ExecContext(ctx, delta, sc.InstallationID)
	return err
}

func evidence(sc *scope, ns, key string, revision int64) models.Evidence {
	return models.Evidence{Type: models.EvidenceTypeStorage, InstanceID: sc.InstanceID, Namespace: ns, Key: key, Revision: revision}
}

func itemResult(sc *scope, ns string, row database.ItemRow, summary string) *models.ExtensionResult {
	return &models.ExtensionResult{
		Summary:  summary,
		Data:     itemJSON(ns, row),
		Evidence: []models.Evidence{evidence(sc, ns, row.Key, row.Revision)},
	}
}

func mustJSON(v any) models.JSON {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the host's own types are marshalled here
	}
	return b
}
