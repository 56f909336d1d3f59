// Package access holds the rule every feature applies before it uses an
// Instance for someone: the Instance exists and is the caller's (the two look
// the same to the caller), its plugin is installed, it is enabled (unless the
// caller only reads or changes the Instance itself), and its package is at
// the generation the caller expects. Storage, capability runs, UI configs
// and state, the image proxy, the AI tools, response UI, notifications and
// the schedule all ask the Gate, which reads the Instance and its
// Installation in one query (on SQLite, only when a transaction has
// committed since it last read them), takes the parsed manifest from one
// bounded cache, and refuses the same way for each.
package access

import (
	"container/list"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"pluginhost/database"
	"pluginhost/models"
)

// SQL reads an Instance with what features need of its Installation, by
// Instance id. A feature that must read it inside its own transaction, with
// the rows locked, runs SQL there (with " FOR UPDATE" on MySQL) and hands
// the row to Decide.
const SQL = `SELECT instances.id, instances.installation_id, instances.user_id, instances.name, instances.enabled,
	instances.grants, instances.storage_revision, instances.created_at, instances.notifications_muted,
	installations.plugin_id, installations.name, installations.version, installations.generation,
	installations.status, installations.ai_consent, installations.used_bytes, installations.data_policy
	FROM instances JOIN installations ON installations.id = instances.installation_id`

// ByID is SQL for one Instance.
const ByID = SQL + ` WHERE instances.id = ?`

// Usable is the condition, on the join of SQL, under which an Instance may
// be used (Use): it is enabled, and its plugin installed. Lists of Instances
// to run or show (the schedule's, the AI's tools, response candidates) use
// it with UsableArgs.
const Usable = `instances.enabled = ? AND installations.status = ?`

// UsableArgs returns the arguments of Usable.
func UsableArgs() []any { return []any{true, models.InstallationInstalled} }

// Row is an Instance as SQL reads it, with its Installation (whose Manifest
// is not set).
type Row struct {
	Instance     models.Instance
	Installation models.Installation
}

// Scan reads a Row from a result of SQL; it returns nil, nil when there is
// none.
func Scan(s interface{ Scan(...any) error }) (*Row, error) {
	var r Row
	var grants string
	var created int64
	in, inl := &r.Instance, &r.Installation
	err := s.Scan(&in.ID, &in.InstallationID, &in.UserID, &in.Name, &in.Enabled, &grants, &in.StorageRevision, &created, &in.NotificationsMuted,
		&inl.PluginID, &inl.Name, &inl.Version, &inl.Generation, &inl.Status, &inl.AIConsent, &inl.UsedBytes, &inl.DataPolicy)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	in.Grants, in.CreatedAt = database.SplitGrants(grants), database.FromMicros(created)
	inl.ID, inl.UserID = in.InstallationID, in.UserID
	return &r, nil
}

// Need says what a caller needs of an Instance beyond its being the
// caller's and of an installed plugin.
type Need int

const (
	// Use is using the Instance: its storage, its capabilities, its UI.
	// It must be enabled.
	Use Need = iota
	// Manage is reading or changing the Instance itself (its name, its
	// grants, whether it is enabled, its audit trail), which its owner may
	// do while it is disabled.
	Manage
)

// Decide applies the rule to the row read for an Instance (nil: none) and
// the caller: PLUGIN_STORAGE_PERMISSION_DENIED for an Instance that is
// unknown or another user's, of an uninstalled plugin, or (for Use)
// disabled; PLUGIN_STORAGE_CONFLICT for a generation other than the
// caller's.
func Decide(c models.Caller, instanceID string, r *Row, need Need) error {
	switch {
	case r == nil || r.Instance.UserID != c.UserID || c.UserID == "":
		return models.Errorf(models.ErrPermissionDenied, "instance %q does not exist or does not belong to you", instanceID)
	case r.Installation.Status != models.InstallationInstalled:
		return models.Errorf(models.ErrPermissionDenied, "instance %q belongs to a plugin that is uninstalled", instanceID)
	case need == Use && !r.Instance.Enabled:
		return models.Errorf(models.ErrPermissionDenied, "instance %q is disabled: nothing of it can be read, written or run until it is enabled", instanceID)
	case c.Generation != 0 && c.Generation != r.Installation.Generation:
		return models.Errorf(models.ErrConflict, "the plugin's package is at generation %d, not %d (the call was issued for an older package): reload and try again",
			r.Installation.Generation, c.Generation)
	}
	return nil
}

// Target is an Instance a caller may use: the Instance, its Installation
// and the Installation's manifest at its generation (shared: do not change).
type Target struct {
	Instance     *models.Instance
	Installation *models.Installation
	Manifest     *models.Manifest
}

// DefaultMaxManifests bounds the manifests a Gate keeps parsed.
const DefaultMaxManifests = 1024

// DefaultMaxRows bounds the rows a Gate keeps.
const DefaultMaxRows = 4096

// Gate decides whether a caller may use an Instance. It is safe for
// concurrent use.
type Gate struct {
	DB *database.DB
	// MaxManifests bounds the manifests kept parsed, least recently used
	// dropped first; zero is DefaultMaxManifests.
	MaxManifests int
	// MaxRows bounds the Instances' rows kept between reads (see Read);
	// zero is DefaultMaxRows.
	MaxRows int

	once sync.Once
	stmt *sql.Stmt
	err  error

	mu        sync.Mutex
	manifests map[manifestKey]*list.Element // of *entry
	lru       list.List                     // most recently used first

	rowsMu sync.Mutex
	rows   map[string]keptRow // by Instance id
}

// keptRow is a row as read at a Version of the database.
type keptRow struct {
	version database.Version
	row     Row
}

type manifestKey struct {
	installation string
	generation   int64
}

type entry struct {
	key      manifestKey
	manifest *models.Manifest
}

// Open reads an Instance for a caller, applies Decide, and returns it with
// its Installation and manifest.
func (g *Gate) Open(ctx context.Context, c models.Caller, instanceID string, need Need) (*Target, error) {
	r, err := g.Read(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	if err := Decide(c, instanceID, r, need); err != nil {
		return nil, err
	}
	return g.Target(ctx, nil, r)
}

// Read reads an Instance whoever owns it; nil when it does not exist. Only
// Decide says whether a caller may use it.
//
// Where the database tells its Version (SQLite), the row read is kept with
// the Version read before it, and given again only while the Version is
// the same: no transaction, of this process or another, has committed
// since, so the row is what the database would answer.
func (g *Gate) Read(ctx context.Context, instanceID string) (*Row, error) {
	v, versioned := g.DB.Version()
	if versioned {
		g.rowsMu.Lock()
		k, ok := g.rows[instanceID]
		g.rowsMu.Unlock()
		if ok && k.version == v {
			return k.row.clone(), nil
		}
	}
	st, err := g.prepare(ctx)
	if err != nil {
		return nil, err
	}
	r, err := Scan(st.QueryRowContext(g.DB.PointRead(ctx), instanceID))
	if err != nil {
		return nil, fmt.Errorf("access: instance %s: %w", instanceID, err)
	}
	if versioned && r != nil {
		g.keepRow(v, r.clone())
	}
	return r, nil
}

// clone returns a copy of r that shares nothing with it: a kept row is
// never handed out.
func (r *Row) clone() *Row {
	c := *r
	c.Instance.Grants = slices.Clone(r.Instance.Grants)
	return &c
}

// keepRow keeps a row read at v (a copy of its own), dropping every row
// kept when the bound is reached.
func (g *Gate) keepRow(v database.Version, r *Row) {
	k := keptRow{version: v, row: *r}
	max := g.MaxRows
	if max <= 0 {
		max = DefaultMaxRows
	}
	g.rowsMu.Lock()
	defer g.rowsMu.Unlock()
	if g.rows == nil || len(g.rows) >= max {
		g.rows = make(map[string]keptRow)
	}
	g.rows[r.Instance.ID] = k
}

// Target returns the Target of a row Decide accepted, its manifest read with
// q (a transaction, or nil for the read pool).
func (g *Gate) Target(ctx context.Context, q Querier, r *Row) (*Target, error) {
	m, err := g.Manifest(ctx, q, r.Installation.ID, r.Installation.Generation)
	if err != nil {
		return nil, err
	}
	inst, inl := r.Instance, r.Installation
	inl.Manifest = m
	return &Target{Instance: &inst, Installation: &inl, Manifest: m}, nil
}

func (g *Gate) prepare(ctx context.Context) (*sql.Stmt, error) {
	g.once.Do(func() {
		var db *sql.DB
		if db, g.err = g.DB.Read.DB(); g.err == nil {
			g.stmt, g.err = db.PrepareContext(context.WithoutCancel(ctx), ByID)
		}
	})
	return g.stmt, g.err
}

// Querier runs a query on a connection or in a transaction.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Manifest returns an Installation's parsed manifest at a generation, read
// with q (nil: the read pool). A generation's manifest never changes, so it
// is read once and kept, within MaxManifests; keeping a generation drops
// the older ones of the same Installation. A generation that is no longer
// the Installation's is PLUGIN_STORAGE_CONFLICT.
func (g *Gate) Manifest(ctx context.Context, q Querier, installationID string, generation int64) (*models.Manifest, error) {
	k := manifestKey{installationID, generation}
	g.mu.Lock()
	if e, ok := g.manifests[k]; ok {
		g.lru.MoveToFront(e)
		m := e.Value.(*entry).manifest
		g.mu.Unlock()
		return m, nil
	}
	g.mu.Unlock()
	if q == nil {
		db, err := g.DB.Read.DB()
		if err != nil {
			return nil, err
		}
		q = db
	}
	var raw string
	var gen int64
	err := q.QueryRowContext(ctx, "SELECT manifest, generation FROM installations WHERE id = ?", installationID).Scan(&raw, &gen)
	if errors.Is(err, sql.ErrNoRows) || err == nil && gen != generation {
		return nil, models.Errorf(models.ErrConflict, "the plugin's package changed while the call was prepared (generation %d is no longer current): try again", generation)
	}
	if err != nil {
		return nil, fmt.Errorf("access: manifest of %s: %w", installationID, err)
	}
	m := new(models.Manifest)
	if err := json.Unmarshal([]byte(raw), m); err != nil {
		return nil, fmt.Errorf("access: installation %s: stored manifest: %w", installationID, err)
	}
	g.keep(k, m)
	return m, nil
}

// keep adds a manifest to the cache, dropping older generations of its
// Installation and the least recently used entries beyond the bound.
func (g *Gate) keep(k manifestKey, m *models.Manifest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.manifests == nil {
		g.manifests = map[manifestKey]*list.Element{}
	}
	if _, ok := g.manifests[k]; ok {
		return
	}
	for key, e := range g.manifests {
		if key.installation == k.installation && key.generation < k.generation {
			g.drop(key, e)
		}
	}
	g.manifests[k] = g.lru.PushFront(&entry{key: k, manifest: m})
	max := g.MaxManifests
	if max <= 0 {
		max = DefaultMaxManifests
	}
	for len(g.manifests) > max {
		last := g.lru.Back()
		g.drop(last.Value.(*entry).key, last)
	}
}

func (g *Gate) drop(k manifestKey, e *list.Element) {
	g.lru.Remove(e)
	delete(g.manifests, k)
}

// Forget drops an Installation's manifests: its package changed, or it was
// uninstalled.
func (g *Gate) Forget(installationID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for key, e := range g.manifests {
		if key.installation == installationID {
			g.drop(key, e)
		}
	}
}

// KeptRows returns how many Instances' rows the Gate keeps.
func (g *Gate) KeptRows() int {
	g.rowsMu.Lock()
	defer g.rowsMu.Unlock()
	return len(g.rows)
}

// Kept returns how many manifests the Gate keeps parsed.
func (g *Gate) Kept() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.manifests)
}

// List returns the Instances a user may use (all users' when userID is
// empty): enabled, of installed plugins, oldest first, with their manifests.
func (g *Gate) List(ctx context.Context, userID string) ([]*Target, error) {
	db, err := g.DB.Read.DB()
	if err != nil {
		return nil, err
	}
	query := SQL + ` WHERE ` + Usable
	args := UsableArgs()
	if userID != "" {
		query += ` AND instances.user_id = ?`
		args = append(args, userID)
	}
	rows, err := db.QueryContext(ctx, query+` ORDER BY instances.created_at, instances.id`, args...)
	if err != nil {
		return nil, err
	}
	var found []*Row
	for rows.Next() {
		r, err := Scan(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*Target, 0, len(found))
	for _, r := range found {
		t, err := g.Target(ctx, nil, r)
		if models.ErrorCode(err) == models.ErrConflict {
			continue // updated since the list was read: its next read has it
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
