package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/bundle"
	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/storage"
)

// Update installs a newer package of an installed plugin: same plugin id, same
// publisher key, a higher version. In one transaction it migrates the storage
// of every Instance from the installed storage version to the package's, one
// step at a time, and raises the package generation by one. Any failure
// leaves the previous package, generation and data exactly as they were.
func (s *Service) Update(ctx context.Context, user *models.User, installationID string, data []byte) (*models.Installation, error) {
	pkg, m, err := s.OpenPackage(ctx, data)
	if err != nil {
		return nil, err
	}
	cur, err := s.Installation(ctx, user, installationID)
	if err != nil {
		return nil, err
	}
	if err := samePlugin(cur.PluginID, cur.PublisherKeyID, m, pkg); err != nil {
		return nil, err
	}
	if models.CompareVersions(m.Version, cur.Version) <= 0 {
		return nil, models.Errorf(models.ErrPackageRejected, "version %s is not newer than the installed version %s; an update raises the version", m.Version, cur.Version)
	}
	var changes []models.StorageChange
	var row database.InstallationRow
	err = s.DB.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
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
		var err error
		changes, err = s.replacePackage(ctx, tx, &row, pkg, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.publish(changes)
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
	manifest, _ := json.Marshal(m)
	row.Name, row.Version, row.Generation = m.Name, m.Version, row.Generation+1
	row.StorageVersion, row.DataPolicy, row.Manifest = storageVersion(m), dataPolicy(m), string(manifest)
	row.PackageSHA256, row.Status, row.UpdatedAt = pkg.SHA256, models.InstallationInstalled, time.Now().UnixMicro()
	err := tx.Model(&database.InstallationRow{}).Where("id = ?", row.ID).Updates(map[string]any{
		"name": row.Name, "version": row.Version, "generation": row.Generation, "storage_version": row.StorageVersion,
		"data_policy": row.DataPolicy, "manifest": row.Manifest, "package_sha256": row.PackageSHA256,
		"status": row.Status, "updated_at": row.UpdatedAt,
	}).Error
	return changes, err
}

// samePlugin refuses a package of another plugin or by another publisher.
func samePlugin(pluginID, keyID string, m *models.Manifest, pkg *bundle.Package) error {
	if m.ID != pluginID {
		return models.Errorf(models.ErrPackageRejected, "the package is plugin %s, not the installed %s; the plugin id cannot change", m.ID, pluginID)
	}
	if pkg.KeyID != keyID {
		return models.Errorf(models.ErrPackageRejected, "the package is signed by publisher key %s, not by %s that signed the installed plugin; the publisher cannot change", pkg.KeyID, keyID)
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
