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

// storeModules keeps, in the transaction that installs a package at a
// generation, every module its capabilities name, and drops those of older
// generations: a run is always of the current package. New code may run
// where the old failed, so background capabilities quarantined under the
// old package are resumed.
func storeModules(tx *gorm.DB, installationID string, generation int64, pkg *bundle.Package, m *models.Manifest) error {
	if err := tx.Where("installation_id = ? AND generation <> ?", installationID, generation).Delete(&database.ModuleRow{}).Error; err != nil {
		return err
	}
	if err := tx.Exec(`UPDATE background_schedules SET quarantined_at = 0, failures = 0
		WHERE quarantined_at <> 0 AND instance_id IN (SELECT id FROM instances WHERE installation_id = ?)`, installationID).Error; err != nil {
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
		row := database.ModuleRow{InstallationID: installationID, Generation: generation, Path: c.Module, SHA256: hex.EncodeToString(sum[:]), Content: content}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
	}
	return nil
}
