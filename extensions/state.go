package extensions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/uiconfig"
)

// SetState merges values into the state one of the user's enabled Instances
// persists for an extension, and returns all of it. The rules (contract,
// "Persisted UI state"), each checked before anything is written:
//   - values is a JSON object; a key naming a credential (credential,
//     password, secret, token, API key, private key families) is
//     PLUGIN_STORAGE_INVALID, as is a key the extension's initial_state does
//     not declare;
//   - each value nests at most 8 levels with at most 64 entries per object or
//     list (the JSON binding value limits), else PLUGIN_STORAGE_INVALID;
//   - the merged state is at most 16 KiB as compact JSON, else
//     PLUGIN_STORAGE_QUOTA_EXCEEDED;
//   - a foreign, unknown or disabled Instance is
//     PLUGIN_STORAGE_PERMISSION_DENIED; an unknown extension BAD_USER_INPUT.
//
// The state lives in the Instance's settings, not in Plugin Local Storage:
// the user's storage reset leaves it.
func (s *Service) SetState(ctx context.Context, caller models.Caller, instanceID, extension string, values models.JSON) (models.JSON, error) {
	var set map[string]json.RawMessage
	if err := decodeObject(values, &set); err != nil {
		return nil, models.Errorf(models.ErrInvalid, "values must be a JSON object of state keys to values")
	}
	var out models.JSON
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		// The Instance's row serialises writers of its settings with each
		// other and with package changes, in the lock order of package
		// database (Instances, then their settings). It is locked first, so
		// that every read below sees what committed before (MySQL; SQLite has
		// one writer).
		if s.DB.Dialect == database.MySQL {
			if err := tx.Exec("SELECT id FROM instances WHERE id = ? FOR UPDATE", instanceID).Error; err != nil {
				return err
			}
		}
		in, err := instance(ctx, tx, caller, instanceID, access.Use)
		if err != nil {
			return err
		}
		c, err := s.config(ctx, tx, in, extension)
		if err != nil {
			return err
		}
		read := uiconfig.Read([]byte(c.Config))
		if err := checkNavigation(set, read.NavigationItems, extension); err != nil {
			return err
		}
		if err := checkValues(set, read.StateKeys, extension); err != nil {
			return err
		}
		state, err := s.state(ctx, tx, instanceID, extension)
		if err != nil {
			return err
		}
		for k, v := range set {
			state[k] = v
		}
		b, err := compactJSON(state)
		if err != nil {
			return err
		}
		if len(b) > models.MaxPersistedStateBytes {
			return models.Errorf(models.ErrQuotaExceeded, "the persisted state of extension %q would have %d bytes as compact JSON; at most %d (16 KiB) are allowed", extension, len(b), models.MaxPersistedStateBytes)
		}
		row := database.ExtensionStateRow{InstanceID: instanceID, ExtensionID: extension, InstallationID: in.Installation.ID, State: string(b), UpdatedAt: time.Now().UnixMicro()}
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "instance_id"}, {Name: "extension_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"state", "updated_at"}),
		}).Create(&row).Error; err != nil {
			return err
		}
		out = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkNavigation takes the selected item of a navigation that persists
// without a selected_state_key (uiconfig.NavigationKey) out of set, after
// checking that the config has one and that the value is one of its items'
// indexes.
func checkNavigation(set map[string]json.RawMessage, items int, extension string) error {
	raw, ok := set[uiconfig.NavigationKey]
	if !ok {
		return nil
	}
	if items == 0 {
		return models.Errorf(models.ErrInvalid, "state key %q keeps the selection of a navigation with persist and no selected_state_key; extension %q has none", uiconfig.NavigationKey, extension)
	}
	var i int
	if err := json.Unmarshal(raw, &i); err != nil || i < 0 || i >= items || bytes.ContainsAny(raw, ".eE") {
		return models.Errorf(models.ErrInvalid, "state key %q must be the index of a navigation item, 0 to %d", uiconfig.NavigationKey, items-1)
	}
	return nil
}

// checkValues applies the key and value rules of persisted state, in key
// order so that the first problem reported is always the same.
func checkValues(set map[string]json.RawMessage, declared map[string]bool, extension string) error {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == uiconfig.NavigationKey {
			continue // checkNavigation's
		}
		if f := models.CredentialFamily(k); f != "" {
			return models.Errorf(models.ErrInvalid, "state key %q names a credential (%s family); credentials are never persisted", k, f)
		}
		if !declared[k] {
			names := make([]string, 0, len(declared))
			for d := range declared {
				names = append(names, d)
			}
			sort.Strings(names)
			return models.Errorf(models.ErrInvalid, "state key %q is not declared in the initial_state of extension %q; only declared keys may be persisted (declared: %s)", k, extension, listOrNone(names))
		}
		var v any
		if err := decodeValue(set[k], &v); err != nil {
			return models.Errorf(models.ErrInvalid, "state key %q: not a JSON value", k)
		}
		if err := models.CheckValueBounds(fmt.Sprintf("state key %q: the value", k), v, models.MaxStateValueDepth, models.MaxStateValueEntries); err != nil {
			return err
		}
	}
	return nil
}

// state reads an extension's persisted state of an Instance; empty when none.
func (s *Service) state(ctx context.Context, db *gorm.DB, instanceID, extension string) (map[string]json.RawMessage, error) {
	b, err := s.storedState(ctx, db, instanceID, extension)
	if err != nil {
		return nil, err
	}
	return decodeState(string(b))
}

// storedState reads an extension's persisted state of an Instance as stored:
// compact JSON, {} when none.
func (s *Service) storedState(ctx context.Context, db *gorm.DB, instanceID, extension string) (models.JSON, error) {
	var row database.ExtensionStateRow
	err := db.WithContext(ctx).Where("instance_id = ? AND extension_id = ?", instanceID, extension).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.JSON("{}"), nil
	}
	if err != nil {
		return nil, fmt.Errorf("persisted state of %s/%s: %w", instanceID, extension, err)
	}
	return models.JSON(row.State), nil
}

func decodeState(s string) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeObject decodes a JSON object (not null, not another type).
func decodeObject(raw []byte, into *map[string]json.RawMessage) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return errors.New("not an object")
	}
	return json.Unmarshal(raw, into)
}

// decodeValue decodes JSON keeping numbers as written.
func decodeValue(raw []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// compactJSON encodes v as compact JSON without escaping HTML characters, so
// that stored strings come back as they were written.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
