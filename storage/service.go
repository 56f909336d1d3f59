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
// Instance's and Installation's rows (SELECT ... FOR UPDATE on MySQL; SQLite has
// a single writer), so revision checks and quotas hold under parallel writers.
package storage

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/database"
	"pluginhost/models"
)

// Publisher receives every committed change, in storage revision order per
// Instance. Publish must not block.
type Publisher interface {
	Publish(models.StorageChange)
}

// Service is Plugin Local Storage.
type Service struct {
	DB  *database.DB
	Bus Publisher
	Log *slog.Logger

	decls  sync.Map // declKey -> *decl
	stripe [64]sync.Mutex
}

// Caller is who calls and under which restrictions.
type Caller struct {
	UserID string
	// AI applies each namespace's ai_access: read allows list and get,
	// read_write also create, update and delete; none and undeclared
	// namespaces are refused.
	AI bool
	// Generation, when non-zero, is the package generation the caller was
	// issued for; a different current generation is a CONFLICT.
	Generation int64
}

// scope is an Instance with what the rules need of its Installation.
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
	decl            *decl
}

// decl is the storage an Installation's manifest declares, at one generation.
type decl struct {
	storage    *models.StorageDecl // nil: the plugin has no storage
	hasStorage bool                // the manifest requests the storage permission
}

type declKey struct {
	installation string
	generation   int64
}

const scopeColumns = `instances.id AS instance_id, instances.user_id, instances.enabled, instances.storage_revision,
	installations.id AS installation_id, installations.plugin_id, installations.status,
	installations.generation, installations.used_bytes`

// loadScope reads an Instance for the caller and checks that it may be used:
// it exists and is the caller's (the two look the same), its plugin is
// installed and requests storage, it is enabled, and the generation matches.
// With lock, the Instance's and Installation's rows are locked until the
// transaction ends.
func (s *Service) loadScope(ctx context.Context, db *gorm.DB, c Caller, instanceID string, lock bool) (*scope, error) {
	q := db.WithContext(ctx).Table("instances").Select(scopeColumns).
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Where("instances.id = ?", instanceID)
	if lock {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	var sc scope
	res := q.Limit(1).Scan(&sc)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 || sc.UserID != c.UserID {
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q does not exist or does not belong to you", instanceID)
	}
	if sc.Status != models.InstallationInstalled {
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q belongs to a plugin that is uninstalled", instanceID)
	}
	if !sc.Enabled {
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q is disabled: its storage can be neither read nor written until it is enabled", instanceID)
	}
	d, err := s.declOf(ctx, db, sc.InstallationID, sc.Generation)
	if err != nil {
		return nil, err
	}
	sc.decl = d
	if !d.hasStorage || d.storage == nil {
		return nil, models.Errorf(models.ErrPermissionDenied, "plugin %s does not request the storage permission", sc.PluginID)
	}
	if c.Generation != 0 && c.Generation != sc.Generation {
		return nil, models.Errorf(models.ErrConflict, "stale package generation: the call was issued for generation %d, the Installation is now at generation %d", c.Generation, sc.Generation)
	}
	return &sc, nil
}

// declOf returns the storage declaration of an Installation at a generation.
// A generation's manifest never changes, so it is cached.
func (s *Service) declOf(ctx context.Context, db *gorm.DB, installationID string, generation int64) (*decl, error) {
	k := declKey{installationID, generation}
	if d, ok := s.decls.Load(k); ok {
		return d.(*decl), nil
	}
	var row database.InstallationRow
	if err := db.WithContext(ctx).Select("id", "manifest", "generation").Where("id = ?", installationID).Take(&row).Error; err != nil {
		return nil, fmt.Errorf("load manifest of %s: %w", installationID, err)
	}
	inst, err := row.Model()
	if err != nil {
		return nil, err
	}
	d := &decl{storage: inst.Manifest.EffectiveStorage(), hasStorage: inst.Manifest.HasPermission(models.PermissionStorage)}
	if row.Generation == generation {
		s.decls.Store(k, d)
	}
	return d, nil
}

// namespace resolves the namespace of a call and checks the caller may use it
// for the tool.
func (sc *scope) namespace(c Caller, ns, tool string) (models.NamespaceDecl, error) {
	st := sc.decl.storage
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

// write runs fn in a transaction on the locked scope. fn returns the change it
// made (nil for none); write then bumps the Instance's storage revision,
// commits, and publishes the change, keeping publication in revision order.
func (s *Service) write(ctx context.Context, c Caller, instanceID string, fn func(tx *gorm.DB, sc *scope) (*models.StorageChange, error)) (*models.StorageChange, error) {
	var (
		change *models.StorageChange
		held   *sync.Mutex
	)
	err := s.DB.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sc, err := s.loadScope(ctx, tx, c, instanceID, true)
		if err != nil {
			return err
		}
		change, err = fn(tx, sc)
		if err != nil || change == nil {
			return err
		}
		if err := tx.Exec("UPDATE instances SET storage_revision = storage_revision + 1 WHERE id = ?", sc.InstanceID).Error; err != nil {
			return err
		}
		change.InstanceID = sc.InstanceID
		change.UserID = sc.UserID
		change.InstallationID = sc.InstallationID
		change.StorageRevision = sc.StorageRevision + 1
		// Held from before commit until published: changes of one Instance are
		// published in the order they committed.
		held = s.stripeOf(sc.InstanceID)
		held.Lock()
		return nil
	})
	if held != nil {
		if err == nil {
			s.Bus.Publish(*change)
		}
		held.Unlock()
	}
	if err != nil {
		return nil, s.internal(err)
	}
	return change, nil
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
	if s.Log != nil {
		s.Log.Error("storage: database error", "err", err)
	}
	return fmt.Errorf("storage: %w", err)
}

func now() int64 { return time.Now().UnixMicro() }
