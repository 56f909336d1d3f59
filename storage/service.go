// Package storage is Plugin Local Storage: the one service through which the UI
// (GraphQL), the REST reset, the AI tools and capability host actions read and
// change an Instance's items. It applies every rule of the specification:
// isolation by user, Installation, Instance, namespace and key; namespace and
// AI access; key, value and query rules; revisions; quotas; and the storage
// revision counter with its change events.
//
// Accounting: an item counts the UTF-8 bytes of its key plus those of its value
// as compact JSON. A namespace's max_bytes bounds that sum within one Instance;
// 512 KiB bounds it over the whole Installation (all Instances and namespaces).
//
// Concurrency: every change runs in one transaction that first locks the
// Installation's and then the Instance's row (SELECT ... FOR UPDATE on MySQL,
// in the lock order of package database; SQLite has a single writer), so
// revision checks and quotas hold under parallel writers. A transaction the
// database aborts as a deadlock or lock wait timeout runs again before the
// caller is answered.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"

	"pluginhost/access"
	"pluginhost/changes"
	"pluginhost/database"
	"pluginhost/models"
)

// Service is Plugin Local Storage.
type Service struct {
	DB  *database.DB
	Bus changes.Publisher
	Log *slog.Logger
	// Gate decides which Instances a caller may use.
	Gate *access.Gate

	stripe [64]sync.Mutex
	q      queries
	readDB *sql.DB
	batch  *batcher

	runsOnce sync.Once
	runs     *runQueue

	contents contentsCache // what runs read (ContentsOf)
}

// scopeCache keeps the scopes the SQLite writer read, as its own writes
// left them: while nothing but the writer changes the database, a later
// write of the same Instance need not read its row again. The writer keeps
// it from one batch to the next and empties it whenever anything else may
// have changed the database (see batchTx). Nil is an empty cache that keeps
// nothing.
type scopeCache struct {
	scopes map[string]*scope    // by Instance, as after the writes so far
	used   map[string]int64     // each Installation's used bytes so far
	items  map[itemRef]itemHead // the items the writer wrote, as it left them
}

// itemRef names an item.
type itemRef struct{ instanceID, ns, key string }

// itemHead is what an update needs of the item it replaces.
type itemHead struct{ size, revision, createdAt int64 }

// maxCachedScopes and maxCachedItems bound the Instances and items a
// scopeCache keeps; past either, it starts again empty.
const (
	maxCachedScopes = 4096
	maxCachedItems  = 16384
)

func newScopeCache() *scopeCache {
	return &scopeCache{scopes: map[string]*scope{}, used: map[string]int64{}, items: map[itemRef]itemHead{}}
}

// reset empties the cache.
func (c *scopeCache) reset() {
	clear(c.scopes)
	clear(c.used)
	clear(c.items)
}

// item returns an item as the writer left it, if it kept it.
func (c *scopeCache) item(instanceID, ns, key string) (itemHead, bool) {
	if c == nil {
		return itemHead{}, false
	}
	h, ok := c.items[itemRef{instanceID, ns, key}]
	return h, ok
}

// forget drops an item the cache may have wrong.
func (c *scopeCache) forget(instanceID, ns, key string) {
	if c != nil {
		delete(c.items, itemRef{instanceID, ns, key})
	}
}

// wrote records the items a successful write of an Instance left: those it
// created or updated as they are now, none it deleted, and none of the
// Instance's after a change of anything else (a reset).
func (c *scopeCache) wrote(instanceID string, muts []mutation) {
	if c == nil {
		return
	}
	if len(c.items)+len(muts) > maxCachedItems {
		clear(c.items)
	}
	for _, m := range muts {
		ref := itemRef{instanceID, m.ns, m.key}
		switch {
		case m.head != nil:
			c.items[ref] = *m.head
		case m.key != "":
			delete(c.items, ref)
		default:
			for r := range c.items {
				if r.instanceID == instanceID {
					delete(c.items, r)
				}
			}
		}
	}
}

// get returns a copy of a cached scope, with its Installation's current usage.
func (c *scopeCache) get(instanceID string) *scope {
	if c == nil {
		return nil
	}
	cached, ok := c.scopes[instanceID]
	if !ok {
		return nil
	}
	sc := *cached
	sc.UsedBytes = c.used[sc.InstallationID]
	return &sc
}

// put records a scope after a successful write of n mutations.
func (c *scopeCache) put(sc *scope, n int) {
	if c == nil {
		return
	}
	if len(c.scopes) >= maxCachedScopes {
		c.reset()
	}
	after := *sc
	after.StorageRevision += int64(n)
	c.scopes[sc.InstanceID] = &after
	c.used[sc.InstallationID] = sc.UsedBytes
}

// mutation is one change a write made, before it is published.
type mutation struct {
	ns, key    string // key "" for a change of the whole Instance
	op         string
	before     int64 // item revision before (0: none)
	after      int64 // item revision after (0: none)
	valueBytes int64
	head       *itemHead // the item after a create or update
}

// scope is an Instance a caller may use, with what the storage rules need
// of its Installation and manifest.
type scope struct {
	InstanceID      string
	UserID          string
	Enabled         bool
	StorageRevision int64
	InstallationID  string
	PluginID        string
	Status          string
	Generation      int64
	UsedBytes       int64
	AIConsent       bool
	manifest        *models.Manifest
	storage         *models.StorageDecl // the manifest's storage declaration
	cache           *scopeCache         // the writer's, in its transaction; else nil
}

// scanScope reads the scope of an Instance from a result of scopeSQL; nil,
// nil when there is none.
func scanScope(row *sql.Row, instanceID string) (*scope, error) {
	sc := &scope{InstanceID: instanceID}
	err := row.Scan(&sc.UserID, &sc.Enabled, &sc.StorageRevision, &sc.InstallationID,
		&sc.PluginID, &sc.Generation, &sc.Status, &sc.AIConsent, &sc.UsedBytes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return sc, err
}

// row returns what the Instance gate decides on.
func (sc *scope) row() *access.Row {
	var r access.Row
	r.Instance.ID, r.Instance.UserID, r.Instance.Enabled = sc.InstanceID, sc.UserID, sc.Enabled
	r.Installation.ID, r.Installation.Status, r.Installation.Generation = sc.InstallationID, sc.Status, sc.Generation
	return &r
}

// loadScope reads an Instance for the caller and checks that it may be used:
// it exists and is the caller's (the two look the same), its plugin is
// installed and requests storage, it is enabled, and the generation matches.
// Inside a transaction, the Instance's and Installation's rows are locked until
// it ends.
func (s *Service) loadScope(ctx context.Context, tx *sql.Tx, c models.Caller, instanceID string) (*scope, error) {
	q, err := s.prepare(ctx)
	if err != nil {
		return nil, err
	}
	st, rctx := q.scope, s.DB.PointRead(ctx)
	if tx != nil {
		st, rctx = on(ctx, tx, q.scopeLocked), ctx
	}
	sc, err := scanScope(st.QueryRowContext(rctx, instanceID), instanceID)
	if err != nil {
		return nil, err
	}
	if sc == nil {
		return nil, access.Decide(c, instanceID, nil, access.Use)
	}
	var qr access.Querier = s.readDB
	if tx != nil {
		qr = tx // never a second connection while holding locks: the pool may be exhausted
	}
	return s.checkScope(ctx, qr, c, sc)
}

// installationOf returns the Installation of an Instance, read outside any
// transaction, or "" when there is none. An Instance never moves to another
// Installation. It is read before the write's transaction begins because,
// on MySQL, a plain read inside the transaction would fix its snapshot before
// its locks are held, and the quota reads after the locks must see every
// write committed before them.
func (s *Service) installationOf(ctx context.Context, instanceID string) (string, error) {
	var id string
	err := s.q.installationOf.QueryRowContext(ctx, instanceID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// lockInstallation locks an Installation's row in tx: the first lock of the
// lock order (see package database), taken before the Instance's.
func (s *Service) lockInstallation(ctx context.Context, tx *sql.Tx, installationID string) error {
	var id string
	err := on(ctx, tx, s.q.lockInstallation).QueryRowContext(ctx, installationID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // gone: loadScope refuses the Instance
	}
	return err
}

// checkScope applies the rules of every call to a scope read for the
// caller: the Instance gate's, then storage's own: the plugin requests
// storage, and the AI has the consent.
func (s *Service) checkScope(ctx context.Context, qr access.Querier, c models.Caller, sc *scope) (*scope, error) {
	if err := access.Decide(c, sc.InstanceID, sc.row(), access.Use); err != nil {
		return nil, err
	}
	m, err := s.Gate.Manifest(ctx, qr, sc.InstallationID, sc.Generation)
	if err != nil {
		return nil, err
	}
	sc.manifest, sc.storage = m, m.EffectiveStorage()
	if !m.HasPermission(models.PermissionStorage) || sc.storage == nil {
		return nil, models.Errorf(models.ErrPermissionDenied, "plugin %s does not request the storage permission", sc.PluginID)
	}
	if c.AI && (!m.HasPermission(models.PermissionAIStorage) || !sc.AIConsent) {
		return nil, models.Errorf(models.ErrPermissionDenied, "the AI may not use the storage of plugin %s: the user has not granted ai_storage (or the plugin no longer requests it)", sc.PluginID)
	}
	return sc, nil
}

// namespace resolves the namespace of a call and checks the caller may use it
// for the tool.
func (sc *scope) namespace(c models.Caller, ns, tool string) (models.NamespaceDecl, error) {
	st := sc.storage
	if ns == "" {
		ns = st.DefaultNamespace()
	}
	n, ok := st.Namespace(ns)
	if !ok {
		ids := make([]string, len(st.Namespaces))
		for i, d := range st.Namespaces {
			ids[i] = d.ID
		}
		return n, models.Errorf(models.ErrPermissionDenied, "namespace %q is not declared by plugin %s (declared: %s)", ns, sc.PluginID, strings.Join(ids, ", "))
	}
	if c.AI {
		switch n.Access() {
		case models.AIAccessNone:
			return n, models.Errorf(models.ErrPermissionDenied, "namespace %q has ai_access none: the AI may not use it", ns)
		case models.AIAccessRead:
			if models.IsMutatingTool(tool) {
				return n, models.Errorf(models.ErrPermissionDenied, "namespace %q has ai_access read: the AI may list and get, not %s", ns, strings.TrimPrefix(tool, "host.storage."))
			}
		}
	}
	return n, nil
}

// writeFunc makes the changes of one write inside tx, on the locked scope.
// Its statements run with ctx, not the caller's context: inside a batch a
// write runs to its end once started (see runBatch).
type writeFunc func(ctx context.Context, tx *sql.Tx, sc *scope) ([]mutation, error)

// write applies one write and publishes its changes: on the SQLite write
// goroutine when batching, else in a transaction of its own. A write that may
// fail after changing something (several mutations) sets all, so that inside
// a batch it runs under a savepoint.
func (s *Service) write(ctx context.Context, c models.Caller, instanceID string, all bool, fn writeFunc) ([]models.StorageChange, error) {
	var changes []models.StorageChange
	var err error
	if s.batch != nil {
		changes, err = s.submit(ctx, c, instanceID, all, fn)
	} else {
		var held *sync.Mutex
		var installationID string
		if _, err := s.prepare(ctx); err != nil {
			return nil, s.internal(err)
		}
		if s.q.lockInstallation != nil {
			if installationID, err = s.installationOf(ctx, instanceID); err != nil {
				return nil, s.internal(err)
			}
		}
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			if held != nil { // an earlier attempt that failed to commit
				held.Unlock()
				held = nil
			}
			if installationID != "" {
				if err := s.lockInstallation(ctx, tx, installationID); err != nil {
					return err
				}
			}
			var err error
			changes, err = s.apply(ctx, tx, c, instanceID, fn, nil)
			if err != nil || len(changes) == 0 {
				return err
			}
			// Held from before commit until published: changes of one
			// Instance are published in the order they committed.
			held = s.stripeOf(instanceID)
			held.Lock()
			return nil
		})
		if held != nil {
			if err == nil {
				s.publish(changes)
			}
			held.Unlock()
		}
	}
	if err != nil {
		return nil, s.internal(err)
	}
	return changes, nil
}

func (s *Service) publish(changes []models.StorageChange) {
	for _, c := range changes {
		s.Bus.Publish(c)
	}
}

// apply runs fn on the locked scope inside tx, bumps the Instance's storage
// revision once per mutation, and records audited mutations. It returns the
// changes to publish once committed.
func (s *Service) apply(ctx context.Context, tx *sql.Tx, c models.Caller, instanceID string, fn writeFunc, cache *scopeCache) ([]models.StorageChange, error) {
	var sc *scope
	var err error
	if cached := cache.get(instanceID); cached != nil {
		sc, err = s.checkScope(ctx, tx, c, cached)
	} else {
		sc, err = s.loadScope(ctx, tx, c, instanceID)
	}
	if err != nil {
		return nil, err
	}
	sc.cache = cache
	muts, err := fn(ctx, tx, sc)
	if err != nil || len(muts) == 0 {
		return nil, err
	}
	// The cache follows the write only once all of it is done: a write that
	// fails from here on is rolled back, and the cache starts again empty.
	done := false
	defer func() {
		switch {
		case done:
			cache.put(sc, len(muts))
			cache.wrote(sc.InstanceID, muts)
		case cache != nil:
			cache.reset()
		}
	}()
	if _, err := on(ctx, tx, s.q.bump).ExecContext(ctx, len(muts), sc.InstanceID); err != nil {
		return nil, err
	}
	changes := make([]models.StorageChange, len(muts))
	for i, m := range muts {
		ch := models.StorageChange{
			InstanceID: sc.InstanceID, UserID: sc.UserID, InstallationID: sc.InstallationID,
			StorageRevision: sc.StorageRevision + int64(i) + 1, Namespace: m.ns, Operation: m.op,
			Generation: sc.Generation,
		}
		if m.key != "" {
			k := m.key
			ch.Key = &k
		}
		if m.after > 0 || m.op == models.OpDelete {
			r := m.after
			if m.op == models.OpDelete {
				r = m.before
			}
			ch.ItemRevision = &r
		}
		changes[i] = ch
		if c.Actor != "" {
			if err := s.auditMutation(ctx, tx, c, sc, m); err != nil {
				return nil, err
			}
		}
	}
	done = true
	return changes, nil
}

func (s *Service) stripeOf(instanceID string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(instanceID))
	return &s.stripe[h.Sum32()%uint32(len(s.stripe))]
}

// internal passes application errors through and logs anything else, which
// callers see only as INTERNAL.
func (s *Service) internal(err error) error {
	var e *models.Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if database.IsDuplicate(err) {
		return models.Errorf(models.ErrConflict, "a concurrent change created the same key; read it and retry")
	}
	if database.IsRetryable(err) {
		// Still aborted after database.MaxTxAttempts runs: nothing was written.
		return models.Errorf(models.ErrConflict, "concurrent changes kept this change from committing; nothing was written: read and retry")
	}
	if s.Log != nil {
		s.Log.Error("storage: database error", "err", err)
	}
	return fmt.Errorf("storage: %w", err)
}

// Watch checks that the caller may watch an Instance's changes, and the
// namespaces of a filter (all declared), and returns the current storage
// revision. It applies the rules of every read.
func (s *Service) Watch(ctx context.Context, c models.Caller, instanceID string, namespaces []string) (int64, error) {
	rev, _, err := s.WatchAt(ctx, c, instanceID, namespaces)
	return rev, err
}

// WatchAt is Watch that also returns the Installation's current package
// generation.
func (s *Service) WatchAt(ctx context.Context, c models.Caller, instanceID string, namespaces []string) (revision, generation int64, err error) {
	sc, err := s.loadScope(ctx, nil, c, instanceID)
	if err != nil {
		return 0, 0, s.internal(err)
	}
	for _, ns := range namespaces {
		if _, err := sc.namespace(c, ns, models.ToolList); err != nil {
			return 0, 0, err
		}
		if ns == "" {
			return 0, 0, models.Errorf(models.ErrInvalid, "namespace names in a filter may not be empty")
		}
	}
	return sc.StorageRevision, sc.Generation, nil
}

// Revision returns an Instance's current storage revision, or false when it
// no longer exists.
func (s *Service) Revision(ctx context.Context, instanceID string) (int64, bool, error) {
	var rev int64
	err := s.DB.Read.WithContext(ctx).Raw("SELECT storage_revision FROM instances WHERE id = ?", instanceID).Row().Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return rev, err == nil, err
}
