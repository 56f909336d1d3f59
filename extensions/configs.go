// Package extensions serves a plugin's UI extensions to the app clients that
// render them: the UI configs of the installed package, exactly as they were
// validated; the UI state an Instance persists per extension (set_state and
// navigation with persist: true); and the response UI that the AI selects for
// a tool result, with the host's validity, relevance, duplicate and
// permission checks.
//
// Configs are written by the lifecycle inside its install and update
// transactions (StoreConfigs, PruneStates, Purge), so a package and its
// configs always change together. Everything else goes through Service, which
// scopes every call by the caller: another user's Instance and an unknown one
// look the same.
package extensions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"

	"pluginhost/access"
	"pluginhost/changes"
	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/uiconfig"
)

// StoreConfigs replaces the stored configs of an Installation with those of a
// validated package at a generation, inside the lifecycle's transaction. Each
// config is kept as its file's compact JSON: every member, string and number
// exactly as written, in the same order.
func StoreConfigs(tx *gorm.DB, installationID string, generation int64, m *models.Manifest, files map[string][]byte) error {
	if err := tx.Where("installation_id = ?", installationID).Delete(&database.ExtensionConfigRow{}).Error; err != nil {
		return fmt.Errorf("replace extension configs of %s: %w", installationID, err)
	}
	for i, e := range m.Extensions {
		raw, ok := files[e.ConfigFile()]
		if !ok {
			return fmt.Errorf("extension %s: config %s is not in the package", e.ID, e.ConfigFile())
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return fmt.Errorf("extension %s: config: %w", e.ID, err)
		}
		row := database.ExtensionConfigRow{InstallationID: installationID, ExtensionID: e.ID, Position: i, Point: e.Point,
			Generation: generation, Config: buf.String()}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("store extension config %s of %s: %w", e.ID, installationID, err)
		}
	}
	return nil
}

// PruneStates drops, inside the lifecycle's transaction after StoreConfigs,
// the persisted state that the Installation's new package no longer declares:
// keys that an extension's initial_state no longer has, and the whole state of
// an extension the package no longer has.
func PruneStates(tx *gorm.DB, installationID string) error {
	var configs []database.ExtensionConfigRow
	if err := tx.Where("installation_id = ?", installationID).Find(&configs).Error; err != nil {
		return err
	}
	declared := map[string]map[string]bool{}
	for _, c := range configs {
		declared[c.ExtensionID] = uiconfig.Read([]byte(c.Config)).StateKeys
	}
	var states []database.ExtensionStateRow
	if err := tx.Where("installation_id = ?", installationID).Order("instance_id, extension_id").Find(&states).Error; err != nil {
		return err
	}
	for _, st := range states {
		keys, ok := declared[st.ExtensionID]
		if !ok {
			if err := tx.Where("instance_id = ? AND extension_id = ?", st.InstanceID, st.ExtensionID).Delete(&database.ExtensionStateRow{}).Error; err != nil {
				return err
			}
			continue
		}
		values, err := decodeState(st.State)
		if err != nil {
			return fmt.Errorf("persisted state of %s/%s: %w", st.InstanceID, st.ExtensionID, err)
		}
		dropped := false
		for k := range values {
			if !keys[k] {
				delete(values, k)
				dropped = true
			}
		}
		if !dropped {
			continue
		}
		b, err := compactJSON(values)
		if err != nil {
			return err
		}
		if err := tx.Model(&database.ExtensionStateRow{}).Where("instance_id = ? AND extension_id = ?", st.InstanceID, st.ExtensionID).
			Update("state", string(b)).Error; err != nil {
			return err
		}
	}
	return nil
}

// Purge deletes, inside the lifecycle's uninstall transaction, an
// Installation's configs, persisted UI state and response containers (data
// policy purge).
func Purge(tx *gorm.DB, installationID string) error {
	if err := tx.Where("installation_id = ?", installationID).Delete(&database.ExtensionConfigRow{}).Error; err != nil {
		return err
	}
	if err := tx.Where("installation_id = ?", installationID).Delete(&database.ExtensionStateRow{}).Error; err != nil {
		return err
	}
	return tx.Where("instance_id IN (?)", tx.Model(&database.InstanceRow{}).Select("id").Where("installation_id = ?", installationID)).
		Delete(&database.ResponseContainerRow{}).Error
}

// configModel is a stored config as app clients read it.
func configModel(c database.ExtensionConfigRow) models.ExtensionConfig {
	p := uiconfig.Read([]byte(c.Config))
	return models.ExtensionConfig{ID: c.ExtensionID, Point: c.Point, Placement: p.Placement, Icon: p.Icon,
		Description: p.Description, Config: models.JSON(c.Config), Generation: c.Generation}
}

// Service serves extensions to app clients and the AI.
type Service struct {
	DB *database.DB
	// Bus carries the news of a rendered response to the user's sockets,
	// on every replica; nil: no news.
	Bus *changes.Bus
	// Handles seals response candidate handles; required by Candidates and
	// Select.
	Handles Sealer
}

// Sealer issues and opens opaque handles of a scope (Instance, name,
// generation); aitools.Handles is one.
type Sealer interface {
	Issue(instanceID, name string, generation int64) string
	Open(handle string) (instanceID, name string, generation int64, err error)
}

// Extensions returns the configs of an Installation's current package, in
// manifest order. The caller has read the Installation for its user.
func (s *Service) Extensions(ctx context.Context, installationID string) ([]models.ExtensionConfig, error) {
	var rows []database.ExtensionConfigRow
	if err := s.DB.Read.WithContext(ctx).Where("installation_id = ?", installationID).Order("position").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("extensions of %s: %w", installationID, err)
	}
	out := make([]models.ExtensionConfig, len(rows))
	for i, r := range rows {
		out[i] = configModel(r)
	}
	return out, nil
}

// instance reads an Instance through the Instance gate's query, on db (a
// transaction, or the read pool), and applies the gate's rule for the
// caller.
func instance(ctx context.Context, db *gorm.DB, c models.Caller, instanceID string, need access.Need) (*access.Row, error) {
	r, err := access.Scan(db.WithContext(ctx).Raw(access.ByID, instanceID).Row())
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", instanceID, err)
	}
	if err := access.Decide(c, instanceID, r, need); err != nil {
		return nil, err
	}
	return r, nil
}

// config reads one extension's stored config of an Installation; an unknown
// extension is BAD_USER_INPUT.
func (s *Service) config(ctx context.Context, db *gorm.DB, in *access.Row, extension string) (*database.ExtensionConfigRow, error) {
	if !models.IsSafeIdentifier(extension) {
		return nil, models.Errorf(models.ErrBadUserInput, "extension names an extension of the plugin: a safe identifier of at most 64 characters")
	}
	var row database.ExtensionConfigRow
	err := db.WithContext(ctx).Where("installation_id = ? AND extension_id = ?", in.Installation.ID, extension).Take(&row).Error
	if err == nil {
		return &row, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	var ids []string
	if err := db.WithContext(ctx).Model(&database.ExtensionConfigRow{}).Where("installation_id = ?", in.Installation.ID).Pluck("extension_id", &ids).Error; err != nil {
		return nil, err
	}
	sort.Strings(ids)
	return nil, models.Errorf(models.ErrBadUserInput, "plugin %s has no extension %q (it has: %s)", in.Installation.PluginID, extension, listOrNone(ids))
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// UIConfig returns what an app client needs to open one extension of one of
// the user's enabled Instances: the config of the current package, its
// generation, and the state persisted for it ({} when none).
func (s *Service) UIConfig(ctx context.Context, c models.Caller, instanceID, extension string) (*models.UIConfig, error) {
	db := s.DB.Read
	in, err := instance(ctx, db, c, instanceID, access.Use)
	if err != nil {
		return nil, err
	}
	cfg, err := s.config(ctx, db, in, extension)
	if err != nil {
		return nil, err
	}
	state, err := s.storedState(ctx, db, instanceID, extension)
	if err != nil {
		return nil, err
	}
	return &models.UIConfig{InstanceID: instanceID, Extension: cfg.ExtensionID, Point: cfg.Point, Generation: cfg.Generation,
		Config: models.JSON(cfg.Config), PersistedState: state}, nil
}
