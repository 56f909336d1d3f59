package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"

	"gorm.io/gorm"

	"pluginhost/bundle"
	"pluginhost/database"
	"pluginhost/models"
)

// recordModuleSums records in the manifest the SHA-256 of every module its
// capabilities name (models.Capability.ModuleSHA256), before it is stored.
func recordModuleSums(pkg *bundle.Package, m *models.Manifest) {
	for i, c := range m.Capabilities {
		if content, ok := pkg.Files[c.Module]; ok && c.Module != "" {
			sum := sha256.Sum256(content)
			m.Capabilities[i].ModuleSHA256 = hex.EncodeToString(sum[:])
		}
	}
}

// forgetReplaced tells the compiler that the modules of a development
// package an update replaced, those the new package does not hold, are not
// needed compiled: an author's loop replaces its modules faster than they
// compile, and each compilation takes seconds of processor time from the
// author's next build.
func (s *Service) forgetReplaced(old *models.Installation, m *models.Manifest) {
	if s.Modules == nil || old.Manifest == nil || !models.IsDevelopmentVersion(old.Version) {
		return
	}
	kept := map[string]bool{}
	for _, c := range m.Capabilities {
		kept[c.ModuleSHA256] = true
	}
	for _, c := range old.Manifest.Capabilities {
		if c.ModuleSHA256 != "" && !kept[c.ModuleSHA256] {
			s.Modules.ForgetModule(c.ModuleSHA256)
		}
	}
}

// storeModules keeps, in the transaction that installs a package at a
// generation, every module its capabilities name, and drops those of older
// generations: a run is always of the current package. A module whose
// bytes did not change (same path, same SHA-256) keeps its row, moved to
// the generation, rather than being written again: an author's loop sends
// the same modules with every change of a screen. New code may run where
// the old failed, so background capabilities quarantined under the old
// package are resumed.
func storeModules(tx *gorm.DB, installationID string, generation int64, pkg *bundle.Package, m *models.Manifest) error {
	if err := tx.Exec(`UPDATE background_schedules SET quarantined_at = 0, failures = 0
		WHERE quarantined_at <> 0 AND instance_id IN (SELECT id FROM instances WHERE installation_id = ?)`, installationID).Error; err != nil {
		return err
	}
	var stored []struct {
		Generation   int64
		Path, SHA256 string
	}
	if err := tx.Model(&database.ModuleRow{}).Select("generation, path, sha256").
		Where("installation_id = ? AND generation <> ?", installationID, generation).Order("generation DESC").Find(&stored).Error; err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range m.Capabilities {
		if c.Module == "" || seen[c.Module] {
			continue
		}
		seen[c.Module] = true
		content, ok := pkg.Files[c.Module]
		if !ok {
			return models.Errorf(models.ErrPackageRejected, "capability %s names module %s, which the package does not hold", c.ID, c.Module)
		}
		sum := sha256.Sum256(content)
		sumHex := hex.EncodeToString(sum[:])
		kept := false
		for _, s := range stored {
			if s.Path == c.Module && s.SHA256 == sumHex {
				err := tx.Model(&database.ModuleRow{}).Where("installation_id = ? AND generation = ? AND path = ?", installationID, s.Generation, s.Path).
					Update("generation", generation).Error
				if err != nil {
					return err
				}
				kept = true
				break
			}
		}
		if kept {
			continue
		}
		row := database.ModuleRow{InstallationID: installationID, Generation: generation, Path: c.Module, SHA256: sumHex, Content: content}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
	}
	return tx.Where("installation_id = ? AND generation <> ?", installationID, generation).Delete(&database.ModuleRow{}).Error
}
