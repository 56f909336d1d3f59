package lifecycle

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/database"
	"pluginhost/extensions"
	"pluginhost/models"
)

// securityTables hold what an Installation keeps under the security
// lifecycle, and the notifications it sent; uninstall deletes them whatever
// the data policy.
var securityTables = []string{"installation_credentials", "oauth_states", "pending_actions", "notifications"}

// Uninstall removes an installed plugin. Credentials, OAuth state, pending
// actions and notifications are always deleted. With data_policy purge the Installation, its
// Instances and all their stored data are deleted. With retain they are kept,
// unreachable, until the same user installs the same plugin again; the AI
// consent is withdrawn, so a reinstall asks for it again.
func (s *Service) Uninstall(ctx context.Context, user *models.User, installationID string) error {
	var row database.InstallationRow
	var instances []database.InstanceRow
	var deletedItems int64
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		return s.uninstall(tx, user, installationID, &row, &instances, &deletedItems)
	})
	if err != nil {
		return err
	}
	s.Gate.Forget(row.ID)
	ids := make([]string, len(instances))
	for i, in := range instances {
		ids[i] = in.ID
	}
	s.accessChanged(ids...)
	s.log().Info("plugin uninstalled", "installation", row.ID, "plugin", row.PluginID, "data_policy", row.DataPolicy,
		"instances", len(instances), "deleted_items", deletedItems, "user", user.ID)
	return nil
}

// uninstall makes the changes of Uninstall in tx, in the lock order of
// package database: the Installation's row, then its Instances' rows. A
// createInstance waits for the Installation's lock and then finds it gone or
// uninstalled, so no Instance of a purged Installation is left behind.
func (s *Service) uninstall(tx *gorm.DB, user *models.User, installationID string, row *database.InstallationRow, instances *[]database.InstanceRow, deletedItems *int64) error {
	*row, *instances, *deletedItems = database.InstallationRow{}, nil, 0
	err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
		Where("id = ? AND user_id = ? AND status = ?", installationID, user.ID, models.InstallationInstalled).Take(row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Errorf(models.ErrPermissionDenied, "installation %q does not exist or does not belong to you", installationID)
	}
	if err != nil {
		return err
	}
	if err := tx.Where("installation_id = ?", row.ID).Order("id").
		Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Find(instances).Error; err != nil {
		return err
	}
	for _, table := range securityTables {
		if err := tx.Table(table).Where("installation_id = ?", row.ID).Delete(nil).Error; err != nil {
			return err
		}
	}
	if row.DataPolicy == models.DataPolicyPurge {
		res := tx.Where("installation_id = ?", row.ID).Delete(&database.ItemRow{})
		if res.Error != nil {
			return res.Error
		}
		*deletedItems = res.RowsAffected
		if err := extensions.Purge(tx, row.ID); err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM background_schedules WHERE instance_id IN (SELECT id FROM instances WHERE installation_id = ?)", row.ID).Error; err != nil {
			return err
		}
		if err := tx.Where("installation_id = ?", row.ID).Delete(&database.ModuleRow{}).Error; err != nil {
			return err
		}
		if err := tx.Where("installation_id = ?", row.ID).Delete(&database.InstanceRow{}).Error; err != nil {
			return err
		}
		return tx.Delete(&database.InstallationRow{}, "id = ?", row.ID).Error
	}
	return tx.Model(&database.InstallationRow{}).Where("id = ?", row.ID).Updates(map[string]any{
		"status": models.InstallationUninstalled, "ai_consent": false, "updated_at": time.Now().UnixMicro(),
	}).Error
}

// DeleteInstance deletes one of the user's Instances with everything it
// holds: its stored items (their bytes leave the Installation's usage), its
// persisted UI state and response containers, its schedules, and, under the
// security lifecycle, its credentials, OAuth states, pending actions and
// notifications.
// The audit trail keeps its history.
func (s *Service) DeleteInstance(ctx context.Context, user *models.User, instanceID string) error {
	var inst database.InstanceRow
	var deletedItems int64
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		inst, deletedItems = database.InstanceRow{}, 0
		if err := tx.Where("id = ? AND user_id = ?", instanceID, user.ID).Take(&inst).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.Errorf(models.ErrPermissionDenied, "instance %q does not exist or does not belong to you", instanceID)
			}
			return err
		}
		// The lock order of package database: the Installation, then the
		// Instance, then its items.
		var row database.InstallationRow
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Where("id = ?", inst.InstallationID).Take(&row).Error; err != nil {
			return err
		}
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Where("id = ?", instanceID).Take(&inst).Error; err != nil {
			return err
		}
		var bytes int64
		if err := tx.Model(&database.ItemRow{}).Where("instance_id = ?", instanceID).Select("COALESCE(SUM(size), 0)").Scan(&bytes).Error; err != nil {
			return err
		}
		res := tx.Where("instance_id = ?", instanceID).Delete(&database.ItemRow{})
		if res.Error != nil {
			return res.Error
		}
		deletedItems = res.RowsAffected
		if err := tx.Model(&database.InstallationRow{}).Where("id = ?", row.ID).
			Update("used_bytes", gorm.Expr("used_bytes - ?", bytes)).Error; err != nil {
			return err
		}
		for _, table := range append(securityTables, "extension_states", "response_containers", "background_schedules") {
			if err := tx.Table(table).Where("instance_id = ?", instanceID).Delete(nil).Error; err != nil {
				return err
			}
		}
		return tx.Where("id = ?", instanceID).Delete(&database.InstanceRow{}).Error
	})
	if err != nil {
		return err
	}
	s.accessChanged(instanceID)
	s.log().Info("instance deleted", "instance", instanceID, "installation", inst.InstallationID, "deleted_items", deletedItems, "user", user.ID)
	return nil
}
