package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"pluginhost/database"
	"pluginhost/models"
)

// Plan is a storage migration of one Installation during a package change.
type Plan struct {
	InstallationID string
	From, To       int                 // installed and new storage versions
	Storage        *models.StorageDecl // the new declaration, with its migrations
	// Progress, when set, is told after each Instance is migrated.
	Progress func(done, total int, instanceID string)
}

// Migrate applies a package change's storage migrations to every Instance of
// an Installation, inside tx, from storage version From to To, one step at a
// time. A step applies, for each namespace with a migration from that version,
// first its deletes and then its renames, all renames at once (so a→b with
// b→c moves both). A rename onto a key that still exists fails the whole
// migration, as do a missing step, a version going down, and a namespace over
// its keys or bytes, or the Installation over 512 KiB, afterwards: each is
// MIGRATION_FAILED, naming the Instance, namespace, step and keys, and
// nothing is written. Items keep their value, revision and created_at.
//
// Namespaces the new declaration drops keep their data: it is not counted
// lost, is not reachable while undeclared, and returns if a later version
// declares the namespace again.
//
// It returns the changes to publish once tx commits: one migrate change per
// Instance whose data changed.
func (s *Service) Migrate(ctx context.Context, tx *sql.Tx, p Plan) ([]models.StorageChange, error) {
	if p.To < p.From {
		return nil, models.Errorf(models.ErrMigrationFailed, "the storage version would go down from %d to %d; a package may only keep or raise it", p.From, p.To)
	}
	steps := map[int][]models.MigrationDecl{}
	for _, m := range p.Storage.Migrations {
		steps[m.From] = append(steps[m.From], m)
	}
	for v := p.From; v < p.To; v++ {
		if len(steps[v]) == 0 {
			return nil, models.Errorf(models.ErrMigrationFailed, "no migration is declared from storage version %d to %d; the package must step from the installed version %d to %d one version at a time", v, v+1, p.From, p.To)
		}
	}
	lock := ""
	if s.DB.Dialect == database.MySQL {
		lock = " FOR UPDATE"
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, user_id, storage_revision FROM instances WHERE installation_id = ? ORDER BY id"+lock, p.InstallationID)
	if err != nil {
		return nil, err
	}
	type inst struct {
		id, user string
		rev      int64
	}
	var insts []inst
	for rows.Next() {
		var i inst
		if err := rows.Scan(&i.id, &i.user, &i.rev); err != nil {
			rows.Close()
			return nil, err
		}
		insts = append(insts, i)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var used int64
	if err := tx.QueryRowContext(ctx, "SELECT used_bytes FROM installations WHERE id = ?"+lock, p.InstallationID).Scan(&used); err != nil {
		return nil, err
	}
	var changes []models.StorageChange
	now := time.Now().UnixMicro()
	for n, in := range insts {
		items, err := loadItems(ctx, tx, in.id)
		if err != nil {
			return nil, err
		}
		moved, deleted, err := applySteps(in.id, items, steps, p.From, p.To)
		if err != nil {
			return nil, err
		}
		if err := checkMigrated(in.id, items, p.Storage); err != nil {
			return nil, err
		}
		if len(moved)+len(deleted) > 0 {
			delta, err := writeMigrated(ctx, tx, in.id, items, moved, deleted, now)
			if err != nil {
				return nil, err
			}
			used += delta
			if _, err := tx.ExecContext(ctx, "UPDATE instances SET storage_revision = storage_revision + 1 WHERE id = ?", in.id); err != nil {
				return nil, err
			}
			changes = append(changes, models.StorageChange{
				InstanceID: in.id, UserID: in.user, InstallationID: p.InstallationID,
				StorageRevision: in.rev + 1, Operation: models.OpMigrate,
			})
		}
		if p.Progress != nil {
			p.Progress(n+1, len(insts), in.id)
		}
	}
	if used > models.MaxInstallationBytes {
		return nil, models.Errorf(models.ErrMigrationFailed, "after migration the Installation would hold %d bytes, over the limit of %d (512 KiB)", used, models.MaxInstallationBytes)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE installations SET used_bytes = ? WHERE id = ?", used, p.InstallationID); err != nil {
		return nil, err
	}
	return changes, nil
}

// migItem is an item during migration: where it was and where it goes.
type migItem struct {
	row  database.ItemRow
	from string // the key it was stored under
}

// nsItems are an Instance's items by namespace and key.
type nsItems map[string]map[string]*migItem

func loadItems(ctx context.Context, tx *sql.Tx, instanceID string) (nsItems, error) {
	rows, err := tx.QueryContext(ctx, "SELECT namespace, item_key, installation_id, value, size, revision, created_at, updated_at FROM storage_items WHERE instance_id = ?", instanceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	items := nsItems{}
	for rows.Next() {
		r := database.ItemRow{InstanceID: instanceID}
		if err := rows.Scan(&r.Namespace, &r.Key, &r.InstallationID, &r.Value, &r.Size, &r.Revision, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, err
		}
		if items[r.Namespace] == nil {
			items[r.Namespace] = map[string]*migItem{}
		}
		items[r.Namespace][r.Key] = &migItem{row: r, from: r.Key}
	}
	return items, rows.Err()
}

type nsKey struct{ ns, key string }

// applySteps applies the steps in memory. It returns the items that moved
// (by their original place) and the original places deleted.
func applySteps(instanceID string, items nsItems, steps map[int][]models.MigrationDecl, from, to int) (map[nsKey]*migItem, map[nsKey]bool, error) {
	moved := map[nsKey]*migItem{}
	deleted := map[nsKey]bool{}
	for v := from; v < to; v++ {
		for _, m := range steps[v] {
			keys := items[m.Namespace]
			if keys == nil {
				keys = map[string]*migItem{}
				items[m.Namespace] = keys
			}
			for _, k := range m.Delete {
				if it, ok := keys[k]; ok {
					delete(keys, k)
					delete(moved, nsKey{m.Namespace, it.from})
					deleted[nsKey{m.Namespace, it.from}] = true
				}
			}
			olds := make([]string, 0, len(m.Rename))
			for old := range m.Rename {
				olds = append(olds, old)
			}
			sort.Strings(olds)
			taken := map[string]*migItem{}
			for _, old := range olds {
				if it, ok := keys[old]; ok {
					taken[old] = it
					delete(keys, old)
				}
			}
			for _, old := range olds {
				it, ok := taken[old]
				if !ok {
					continue
				}
				nw := m.Rename[old]
				if _, exists := keys[nw]; exists {
					return nil, nil, models.Errorf(models.ErrMigrationFailed,
						"instance %s, namespace %q, step %d→%d: renaming key %q to %q collides with the existing key %q; the whole update is refused and nothing changed",
						instanceID, m.Namespace, m.From, m.To, old, nw, nw)
				}
				it.row.Key = nw
				it.row.Size = int64(len(nw) + len(it.row.Value))
				keys[nw] = it
				moved[nsKey{m.Namespace, it.from}] = it
			}
		}
	}
	return moved, deleted, nil
}

// checkMigrated checks each declared namespace's keys and bytes after migration.
func checkMigrated(instanceID string, items nsItems, st *models.StorageDecl) error {
	names := make([]string, 0, len(items))
	for ns := range items {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		decl, ok := st.Namespace(ns)
		if !ok {
			continue // an undeclared namespace keeps its data untouched
		}
		var bytes int64
		for _, it := range items[ns] {
			bytes += it.row.Size
		}
		if len(items[ns]) > models.MaxKeysPerNamespace {
			return models.Errorf(models.ErrMigrationFailed, "instance %s, namespace %q: after migration it would hold %d keys, over %d", instanceID, ns, len(items[ns]), models.MaxKeysPerNamespace)
		}
		if bytes > int64(decl.MaxBytes) {
			return models.Errorf(models.ErrMigrationFailed, "instance %s, namespace %q: after migration it would hold %d bytes, over its new max_bytes of %d", instanceID, ns, bytes, decl.MaxBytes)
		}
	}
	return nil
}

// writeMigrated deletes the original places of moved and deleted items and
// inserts the moved ones at their new keys. It returns the change in bytes.
func writeMigrated(ctx context.Context, tx *sql.Tx, instanceID string, items nsItems, moved map[nsKey]*migItem, deleted map[nsKey]bool, now int64) (int64, error) {
	places := make([]nsKey, 0, len(moved)+len(deleted))
	for k := range moved {
		places = append(places, k)
	}
	for k := range deleted {
		places = append(places, k)
	}
	sort.Slice(places, func(i, j int) bool {
		return places[i].ns < places[j].ns || places[i].ns == places[j].ns && places[i].key < places[j].key
	})
	var delta int64
	for _, k := range places {
		var size int64
		if err := tx.QueryRowContext(ctx, "SELECT size FROM storage_items WHERE instance_id = ? AND namespace = ? AND item_key = ?", instanceID, k.ns, k.key).Scan(&size); err != nil {
			return 0, fmt.Errorf("migrate %s/%s: %w", k.ns, k.key, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM storage_items WHERE instance_id = ? AND namespace = ? AND item_key = ?", instanceID, k.ns, k.key); err != nil {
			return 0, err
		}
		delta -= size
	}
	for _, k := range places {
		it, ok := moved[k]
		if !ok {
			continue
		}
		r := it.row
		if _, err := tx.ExecContext(ctx, strings.TrimSpace(insertMovedSQL), r.InstanceID, k.ns, r.Key, r.InstallationID, r.Value, r.Size, r.Revision, r.CreatedAt, now); err != nil {
			return 0, err
		}
		delta += r.Size
	}
	return delta, nil
}

const insertMovedSQL = `INSERT INTO storage_items (instance_id, namespace, item_key, installation_id, value, size, revision, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
