package lifecycle

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/bundle"
	"pluginhost/database"
	"pluginhost/extensions"
	"pluginhost/models"
	"pluginhost/storage"
)

// Update installs a newer package of an installed plugin: same plugin id, same
// publisher key (the one that owns the plugin id), a higher version. In one transaction it migrates the storage
// of every Instance from the installed storage version to the package's, one
// step at a time, and raises the package generation by one. Any failure
// leaves the previous package, generation and data exactly as they were. It
// locks in the order of package database (the plugin id's owner, the
// Installation, then its Instances, then their items), the order of every storage write, and runs
// again when the database aborts it as a deadlock or lock wait timeout.
func (s *Service) Update(ctx context.Context, user *models.User, installationID string, data []byte) (*models.Installation, error) {
	pkg, m, modules, err := s.openPackage(ctx, data)
	if err != nil {
		return nil, err
	}
	if err := modules.waitOutside(m); err != nil {
		return nil, err
	}
	cur, err := s.Installation(ctx, user, installationID)
	if err != nil {
		return nil, err
	}
	if m.ID != cur.PluginID {
		return nil, samePlugin(cur.PluginID, cur.PublisherKeyID, m, pkg)
	}
	var changes []models.StorageChange
	var row database.InstallationRow
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		row = database.InstallationRow{}
		if err := claimPluginID(tx, m.ID, pkg.KeyID, time.Now().UnixMicro()); err != nil {
			return err
		}
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("id = ? AND user_id = ? AND status = ?", installationID, user.ID, models.InstallationInstalled).Take(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.Errorf(models.ErrPermissionDenied, "installation %q does not exist or does not belong to you", installationID)
			}
			return err
		}
		if row.Generation != cur.Generation {
			return models.Errorf(models.ErrConflict, "the Installation changed while the update was prepared (generation %d, now %d); try again", cur.Generation, row.Generation)
		}
		if models.CompareVersions(m.Version, row.Version) <= 0 {
			return models.Errorf(models.ErrPackageRejected, "version %s is not newer than the installed version %s; an update raises the version", m.Version, row.Version)
		}
		var err error
		if changes, err = s.replacePackage(ctx, tx, &row, pkg, m); err != nil {
			return err
		}
		return modules.wait() // waitOutside
	})
	if err != nil {
		return nil, err
	}
	s.Gate.Forget(row.ID)
	s.publish(changes)
	s.forgetReplaced(cur, m)
	s.log().Info("plugin updated", "installation", row.ID, "plugin", m.ID, "from", cur.Version, "to", m.Version,
		"generation", row.Generation, "storage_version", row.StorageVersion, "migrated_instances", len(changes), "user", user.ID)
	return row.Model()
}

// replacePackage moves an Installation row (locked in tx) to a new package:
// same plugin and publisher, storage migrated, generation raised by one.
func (s *Service) replacePackage(ctx context.Context, tx *gorm.DB, row *database.InstallationRow, pkg *bundle.Package, m *models.Manifest) ([]models.StorageChange, error) {
	if err := samePlugin(row.PluginID, row.PublisherKeyID, m, pkg); err != nil {
		return nil, err
	}
	newStorage := m.EffectiveStorage()
	var changes []models.StorageChange
	if newStorage != nil {
		from := row.StorageVersion
		if from == 0 {
			from = newStorage.Version // the plugin had no storage before: nothing to migrate
		}
		sqlTx, err := database.SQLTx(tx)
		if err != nil {
			return nil, err
		}
		changes, err = s.Storage.Migrate(ctx, sqlTx, storage.Plan{
			InstallationID: row.ID, From: from, To: newStorage.Version, Storage: newStorage,
			Progress: func(done, n int, instanceID string) {
				s.log().Info("storage migration progress", "installation", row.ID, "instance", instanceID, "done", done, "of", n)
			},
		})
		if err != nil {
			return nil, err
		}
	}
	row.Name, row.Version, row.Generation = m.Name, m.Version, row.Generation+1
	row.StorageVersion, row.DataPolicy, row.Manifest = storageVersion(m), dataPolicy(m), manifestJSON(m)
	row.PackageSHA256, row.Status, row.UpdatedAt = pkg.SHA256, models.InstallationInstalled, time.Now().UnixMicro()
	err := tx.Model(&database.InstallationRow{}).Where("id = ?", row.ID).Updates(map[string]any{
		"name": row.Name, "version": row.Version, "generation": row.Generation, "storage_version": row.StorageVersion,
		"data_policy": row.DataPolicy, "manifest": row.Manifest, "package_sha256": row.PackageSHA256,
		"status": row.Status, "updated_at": row.UpdatedAt,
	}).Error
	if err != nil {
		return nil, err
	}
	// Instances before their settings: the order setExtensionState locks in.
	pkgChanges, err := packageChanged(tx, row.ID, row.Generation)
	if err != nil {
		return nil, err
	}
	if err := extensions.StoreConfigs(tx, row.ID, row.Generation, m, pkg.Files); err != nil {
		return nil, err
	}
	if err := extensions.PruneStates(tx, row.ID); err != nil {
		return nil, err
	}
	if err := storeModules(tx, row.ID, row.Generation, pkg, m); err != nil {
		return nil, err
	}
	for i := range changes {
		changes[i].Generation = row.Generation
	}
	return append(changes, pkgChanges...), nil
}

// packageChanged bumps the storage revision of every Instance of an
// Installation that moved to a new generation, inside tx, and returns the
// package changes to publish once it commits: every open surface learns that
// its config and handles are stale, whether or not its data moved. The bump
// orders the change with the Instance's storage changes, so a subscriber
// never takes it for a late or repeated one.
func packageChanged(tx *gorm.DB, installationID string, generation int64) ([]models.StorageChange, error) {
	if err := tx.Exec("UPDATE instances SET storage_revision = storage_revision + 1 WHERE installation_id = ?", installationID).Error; err != nil {
		return nil, err
	}
	var insts []struct {
		ID              string
		UserID          string
		StorageRevision int64
	}
	if err := tx.Raw("SELECT id, user_id, storage_revision FROM instances WHERE installation_id = ? ORDER BY id", installationID).
		Scan(&insts).Error; err != nil {
		return nil, err
	}
	out := make([]models.StorageChange, len(insts))
	for i, in := range insts {
		out[i] = models.StorageChange{InstanceID: in.ID, UserID: in.UserID, InstallationID: installationID,
			StorageRevision: in.StorageRevision, Operation: models.OpPackage, Generation: generation}
	}
	return out, nil
}

// samePlugin refuses a package of another plugin or by another publisher.
func samePlugin(pluginID, keyID string, m *models.Manifest, pkg *bundle.Package) error {
	if m.ID != pluginID {
		return models.Errorf(models.ErrPackageRejected, "the package is plugin %s, not the installed %s; the plugin id cannot change", m.ID, pluginID)
	}
	if pkg.KeyID != keyID {
		return models.Errorf(models.ErrPackageRejected, "the package of plugin %s is signed by publisher key %s, not by %s that signed the installed plugin; the publisher cannot change", pluginID, pkg.KeyID, keyID)
	}
	return nil
}

func (s *Service) publish(changes []models.StorageChange) {
	if s.Bus == nil {
		return
	}
	for _, c := range changes {
		s.Bus.Publish(c)
	}
}
