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

	"pluginhost/database"
	"pluginhost/models"
)

// configRow is a row of extension_configs.
type configRow struct {
	InstallationID string `gorm:"primaryKey"`
	ExtensionID    string `gorm:"primaryKey"`
	Position       int
	Point          string
	Generation     int64
	Config         string
}

func (configRow) TableName() string { return "extension_configs" }

// stateRow is a row of extension_states: one extension's persisted state of
// one Instance, a JSON object as compact JSON.
type stateRow struct {
	InstanceID     string `gorm:"primaryKey"`
	ExtensionID    string `gorm:"primaryKey"`
	InstallationID string
	State          string
	UpdatedAt      int64
}

func (stateRow) TableName() string { return "extension_states" }

// StoreConfigs replaces the stored configs of an Installation with those of a
// validated package at a generation, inside the lifecycle's transaction. Each
// config is kept as its file's compact JSON: every member, string and number
// exactly as written, in the same order.
func StoreConfigs(tx *gorm.DB, installationID string, generation int64, m *models.Manifest, files map[string][]byte) error {
	if err := tx.Where("installation_id = ?", installationID).Delete(&configRow{}).Error; err != nil {
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
		row := configRow{InstallationID: installationID, ExtensionID: e.ID, Position: i, Point: e.Point,
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
	var configs []configRow
	if err := tx.Where("installation_id = ?", installationID).Find(&configs).Error; err != nil {
		return err
	}
	declared := map[string]map[string]bool{}
	for _, c := range configs {
		declared[c.ExtensionID] = parseConfig([]byte(c.Config)).stateKeys
	}
	var states []stateRow
	if err := tx.Where("installation_id = ?", installationID).Order("instance_id, extension_id").Find(&states).Error; err != nil {
		return err
	}
	for _, st := range states {
		keys, ok := declared[st.ExtensionID]
		if !ok {
			if err := tx.Where("instance_id = ? AND extension_id = ?", st.InstanceID, st.ExtensionID).Delete(&stateRow{}).Error; err != nil {
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
		if err := tx.Model(&stateRow{}).Where("instance_id = ? AND extension_id = ?", st.InstanceID, st.ExtensionID).
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
	if err := tx.Where("installation_id = ?", installationID).Delete(&configRow{}).Error; err != nil {
		return err
	}
	if err := tx.Where("installation_id = ?", installationID).Delete(&stateRow{}).Error; err != nil {
		return err
	}
	return tx.Where("instance_id IN (?)", tx.Model(&database.InstanceRow{}).Select("id").Where("installation_id = ?", installationID)).
		Delete(&containerRow{}).Error
}

// config is what the host reads of a stored config.
type config struct {
	placement   *string
	icon        models.JSON
	description *string
	stateKeys   map[string]bool
	sources     []source
	a2ui        *a2ui
}

type source struct {
	ID         string `json:"id"`
	Capability string `json:"capability"`
}

type a2ui struct {
	Version     json.RawMessage `json:"version"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// parseConfig reads the members the host needs of a validated config.
func parseConfig(raw []byte) config {
	var top struct {
		Placement    *string                    `json:"placement"`
		Icon         json.RawMessage            `json:"icon"`
		Description  *string                    `json:"description"`
		InitialState map[string]json.RawMessage `json:"initial_state"`
		DataSources  []source                   `json:"data_sources"`
		A2UI         *a2ui                      `json:"a2ui"`
	}
	json.Unmarshal(raw, &top) // validated: members the host reads have their types
	c := config{placement: top.Placement, description: top.Description, stateKeys: map[string]bool{},
		sources: top.DataSources, a2ui: top.A2UI}
	if len(top.Icon) > 0 {
		c.icon = models.JSON(top.Icon)
	}
	for k := range top.InitialState {
		c.stateKeys[k] = true
	}
	return c
}

func (c configRow) model() models.ExtensionConfig {
	p := parseConfig([]byte(c.Config))
	return models.ExtensionConfig{ID: c.ExtensionID, Point: c.Point, Placement: p.placement, Icon: p.icon,
		Description: p.description, Config: models.JSON(c.Config), Generation: c.Generation}
}

// Service serves extensions to app clients and the AI.
type Service struct {
	DB *database.DB
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
	var rows []configRow
	if err := s.DB.Read.WithContext(ctx).Where("installation_id = ?", installationID).Order("position").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("extensions of %s: %w", installationID, err)
	}
	out := make([]models.ExtensionConfig, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// instance is an Instance with what the rules need of its Installation.
type instance struct {
	ID             string
	UserID         string
	Enabled        bool
	InstallationID string
	PluginID       string
	Generation     int64
	Status         string
}

// instance reads an Instance for a user: it must exist, be the user's, belong
// to an installed plugin and be enabled, else PLUGIN_STORAGE_PERMISSION_DENIED.
func (s *Service) instance(ctx context.Context, db *gorm.DB, user *models.User, instanceID string) (*instance, error) {
	in, err := s.lookup(ctx, db, instanceID)
	if err != nil {
		return nil, err
	}
	if in == nil || in.UserID != user.ID || in.Status != models.InstallationInstalled {
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q does not exist or does not belong to you", instanceID)
	}
	if !in.Enabled {
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q is disabled: its extensions can be neither read nor written until it is enabled", instanceID)
	}
	return in, nil
}

// lookup reads an Instance whoever owns it; nil when it does not exist.
func (s *Service) lookup(ctx context.Context, db *gorm.DB, instanceID string) (*instance, error) {
	var in instance
	err := db.WithContext(ctx).Table("instances").
		Select("instances.id, instances.user_id, instances.enabled, instances.installation_id, installations.plugin_id, installations.generation, installations.status").
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Where("instances.id = ?", instanceID).Take(&in).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", instanceID, err)
	}
	return &in, nil
}

// config reads one extension's stored config of an Installation; an unknown
// extension is BAD_USER_INPUT.
func (s *Service) config(ctx context.Context, db *gorm.DB, in *instance, extension string) (*configRow, error) {
	if !models.IsSafeIdentifier(extension) {
		return nil, models.Errorf(models.ErrBadUserInput, "extension names an extension of the plugin: a safe identifier of at most 64 characters")
	}
	var row configRow
	err := db.WithContext(ctx).Where("installation_id = ? AND extension_id = ?", in.InstallationID, extension).Take(&row).Error
	if err == nil {
		return &row, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	var ids []string
	if err := db.WithContext(ctx).Model(&configRow{}).Where("installation_id = ?", in.InstallationID).Pluck("extension_id", &ids).Error; err != nil {
		return nil, err
	}
	sort.Strings(ids)
	return nil, models.Errorf(models.ErrBadUserInput, "plugin %s has no extension %q (it has: %s)", in.PluginID, extension, listOrNone(ids))
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
func (s *Service) UIConfig(ctx context.Context, user *models.User, instanceID, extension string) (*models.UIConfig, error) {
	db := s.DB.Read
	in, err := s.instance(ctx, db, user, instanceID)
	if err != nil {
		return nil, err
	}
	c, err := s.config(ctx, db, in, extension)
	if err != nil {
		return nil, err
	}
	state, err := s.storedState(ctx, db, in.ID, extension)
	if err != nil {
		return nil, err
	}
	return &models.UIConfig{InstanceID: in.ID, Extension: c.ExtensionID, Point: c.Point, Generation: c.Generation,
		Config: models.JSON(c.Config), PersistedState: state}, nil
}
