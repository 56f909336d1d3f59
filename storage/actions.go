package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/metrics"
	"pluginhost/models"
)

// Host action types a Tool, Skill or Background capability may return in
// data.host_actions.
const (
	ActionSet    = "plugin_storage_set"
	ActionDelete = "plugin_storage_delete"
)

// MaxHostActions bounds the host actions of one capability result.
const MaxHostActions = 64

// kinds of capabilities whose results may change storage.
var actionKinds = map[string]bool{"tool": true, "skill": true, "background": true}

type hostAction struct {
	Type      string          `json:"type"`
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Revision  *int64          `json:"revision"`
	value     []byte
}

// ApplyCapabilityResult applies the data.host_actions of a capability result
// to an Instance, all in one transaction or none: plugin_storage_set creates
// a key (no revision) or updates it at its revision, plugin_storage_delete
// deletes at a revision. The capability must be declared with kind tool,
// skill or background; c.Generation is the package generation the capability
// ran for, and a different current one is a CONFLICT. The answer carries
// evidence for every changed key.
func (s *Service) ApplyCapabilityResult(ctx context.Context, c models.Caller, instanceID, capability string, result models.JSON) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("apply_capability_result", c.Actor, opErr) }()
	res, err := s.applyCapabilityResult(ctx, c, instanceID, capability, result)
	if err != nil {
		s.RecordRefusal(c, instanceID, "", "", err)
	}
	return res, err
}

func (s *Service) applyCapabilityResult(ctx context.Context, c models.Caller, instanceID, capability string, result models.JSON) (*models.ExtensionResult, error) {
	if err := checkGeneration(c); err != nil {
		return nil, err
	}
	list, err := hostActionsOf(result)
	if err != nil {
		return nil, err
	}
	return s.applyHostActions(ctx, c, instanceID, capability, list)
}

// ApplyHostActions applies a host_actions list, as a capability returned it
// in data.host_actions, to an Instance, as ApplyCapabilityResult does.
func (s *Service) ApplyHostActions(ctx context.Context, c models.Caller, instanceID, capability string, list json.RawMessage) (out *models.ExtensionResult, opErr error) {
	defer func() { metrics.StorageOperation("apply_capability_result", c.Actor, opErr) }()
	res, err := s.applyHostActions(ctx, c, instanceID, capability, list)
	if err != nil {
		s.RecordRefusal(c, instanceID, "", "", err)
	}
	return res, err
}

func (s *Service) applyHostActions(ctx context.Context, c models.Caller, instanceID, capability string, list json.RawMessage) (*models.ExtensionResult, error) {
	if err := checkGeneration(c); err != nil {
		return nil, err
	}
	actions, err := parseHostActions(list)
	if err != nil {
		return nil, err
	}
	var muts []mutation
	var sc *scope
	_, err = s.write(ctx, c, instanceID, true, func(ctx context.Context, tx *sql.Tx, locked *scope) ([]mutation, error) {
		sc = locked
		declared, ok := sc.manifest.Capability(capability)
		kind := declared.Kind
		if !ok {
			return nil, models.Errorf(models.ErrPermissionDenied, "capability %q is not declared by plugin %s", capability, sc.PluginID)
		}
		if !actionKinds[kind] {
			return nil, models.Errorf(models.ErrPermissionDenied, "capability %q is of kind %s; only tool, skill and background capabilities may change storage", capability, kind)
		}
		muts = muts[:0]
		for i, a := range actions {
			var m mutation
			var err error
			switch {
			case a.Type == ActionDelete:
				m, _, err = s.delete(ctx, tx, c, sc, a.Namespace, a.Key, *a.Revision)
			case a.Revision == nil:
				m, _, err = s.create(ctx, tx, c, sc, a.Namespace, a.Key, a.value)
			default:
				m, _, err = s.update(ctx, tx, c, sc, a.Namespace, a.Key, a.value, *a.Revision)
			}
			if err != nil {
				return nil, atAction(i, err)
			}
			muts = append(muts, m)
		}
		return muts, nil
	})
	if err != nil {
		return nil, err
	}
	type applied struct {
		Type      string `json:"type"`
		Namespace string `json:"namespace"`
		Key       string `json:"key"`
		Revision  int64  `json:"revision"`
	}
	out := struct {
		Applied []applied `json:"applied"`
	}{Applied: []applied{}}
	res := &models.ExtensionResult{Evidence: []models.Evidence{}}
	for i, m := range muts {
		rev := m.after
		if m.op == models.OpDelete {
			rev = m.before
		}
		out.Applied = append(out.Applied, applied{actions[i].Type, m.ns, m.key, rev})
		res.Evidence = append(res.Evidence, evidence(sc, m.ns, m.key, rev))
	}
	res.Summary = fmt.Sprintf("Applied %d host action(s) of capability %s", len(muts), capability)
	res.Data = mustJSON(out)
	return res, nil
}

// checkGeneration checks the package generation a capability ran for.
func checkGeneration(c models.Caller) error {
	if c.Generation < 1 {
		return models.Errorf(models.ErrInvalid, "generation must be the positive package generation the capability ran for")
	}
	return nil
}

// atAction prefixes an error with the place of the host action.
func atAction(i int, err error) error {
	if e, ok := err.(*models.Error); ok {
		return models.Errorf(e.Code, "data.host_actions[%d]: %s; no host action was applied", i, e.Message)
	}
	return err
}

// hostActionsOf returns data.host_actions of a result, nil when absent.
func hostActionsOf(result models.JSON) (json.RawMessage, error) {
	var r struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, models.Errorf(models.ErrInvalid, "result must be an ExtensionResult object: %v", err)
	}
	return r.Data["host_actions"], nil
}

// parseHostActions reads and checks a host_actions list; nil or null is
// none.
// CheckHostActions checks the shape of a host_actions list (types, keys,
// values, revisions) without applying it.
func CheckHostActions(list json.RawMessage) error {
	_, err := parseHostActions(list)
	return err
}

func parseHostActions(raw json.RawMessage) ([]*hostAction, error) {
	if raw == nil || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, models.Errorf(models.ErrInvalid, "data.host_actions must be a list")
	}
	if len(list) > MaxHostActions {
		return nil, models.Errorf(models.ErrInvalid, "data.host_actions has %d entries; at most %d are allowed", len(list), MaxHostActions)
	}
	actions := make([]*hostAction, len(list))
	for i, entry := range list {
		dec := json.NewDecoder(bytes.NewReader(entry))
		dec.DisallowUnknownFields()
		a := &hostAction{}
		if err := dec.Decode(a); err != nil {
			return nil, models.Errorf(models.ErrInvalid, "data.host_actions[%d]: %s; an entry is {type, namespace, key, value, revision}", i, strings.TrimPrefix(err.Error(), "json: "))
		}
		switch a.Type {
		case ActionSet:
			if a.Value == nil {
				return nil, models.Errorf(models.ErrInvalid, "data.host_actions[%d]: plugin_storage_set needs a value", i)
			}
			v, err := checkValue(models.JSON(a.Value))
			if err != nil {
				return nil, atAction(i, err)
			}
			a.value = v
		case ActionDelete:
			if a.Value != nil {
				return nil, models.Errorf(models.ErrInvalid, "data.host_actions[%d]: plugin_storage_delete takes no value", i)
			}
			if a.Revision == nil {
				return nil, models.Errorf(models.ErrInvalid, "data.host_actions[%d]: plugin_storage_delete needs the revision to delete", i)
			}
		default:
			return nil, models.Errorf(models.ErrInvalid, "data.host_actions[%d]: type %q; want %s or %s", i, a.Type, ActionSet, ActionDelete)
		}
		if err := models.ValidateKey(a.Key); err != nil {
			return nil, atAction(i, err)
		}
		if a.Revision != nil {
			if err := checkRevision(*a.Revision); err != nil {
				return nil, atAction(i, err)
			}
		}
		actions[i] = a
	}
	return actions, nil
}

// SnapshotNamespace is one declared namespace in a storage snapshot.
type SnapshotNamespace struct {
	ID       string            `json:"id"`
	MaxBytes int               `json:"max_bytes"`
	AIAccess string            `json:"ai_access"`
	Items    []models.ItemJSON `json:"items"`
}

// Snapshot is what a Tool, Skill or Background runner reads of an Instance.
type Snapshot struct {
	InstanceID      string              `json:"instance_id"`
	InstallationID  string              `json:"installation_id"`
	Generation      int64               `json:"generation"`
	StorageRevision int64               `json:"storage_revision"`
	Namespaces      []SnapshotNamespace `json:"namespaces"`
}

// Snapshot returns every declared namespace of an Instance with its items and
// their revisions, the storage revision and the package generation, read at
// one point in time, for a caller the Instance gate admits.
func (s *Service) Snapshot(ctx context.Context, c models.Caller, instanceID string) (*Snapshot, error) {
	t, err := s.Gate.Open(ctx, c, instanceID, access.Use)
	if err != nil {
		metrics.StorageOperation("snapshot", c.Actor, err)
		return nil, err
	}
	return s.SnapshotOf(ctx, c, t)
}

// SnapshotOf is Snapshot of an Instance the gate has admitted for the
// caller: its storage revision and items, read in one transaction.
func (s *Service) SnapshotOf(ctx context.Context, c models.Caller, t *access.Target) (*Snapshot, error) {
	return s.snapshotOf(ctx, c, t, true)
}

// ContentsOf is SnapshotOf without the items' times (their CreatedAt and
// UpdatedAt are empty), for a capability's request, which carries none. The
// snapshot may be shared with other runs: do not change it. It is the
// Instance at the storage revision the gate read (t) or later.
func (s *Service) ContentsOf(ctx context.Context, c models.Caller, t *access.Target) (*Snapshot, error) {
	// Kept contents were read for the same generation's manifest, which
	// requests storage.
	if snap := s.contents.get(t); snap != nil {
		metrics.StorageOperation("snapshot", c.Actor, nil)
		return snap, nil
	}
	snap, err := s.snapshotOf(ctx, c, t, false)
	if err == nil {
		s.contents.keep(snap)
	}
	return snap, err
}

func (s *Service) snapshotOf(ctx context.Context, c models.Caller, t *access.Target, times bool) (out *Snapshot, opErr error) {
	defer func() { metrics.StorageOperation("snapshot", c.Actor, opErr) }()
	st := t.Manifest.EffectiveStorage()
	if !t.Manifest.HasPermission(models.PermissionStorage) || st == nil {
		return nil, models.Errorf(models.ErrPermissionDenied, "plugin %s does not request the storage permission", t.Installation.PluginID)
	}
	q, err := s.prepare(ctx)
	if err != nil {
		return nil, s.internal(err)
	}
	stmt, err := q.snapshotOf(ctx, s.readDB, len(st.Namespaces))
	if err != nil {
		return nil, s.internal(err)
	}
	args := make([]any, 0, 1+len(st.Namespaces))
	snap := &Snapshot{InstanceID: t.Instance.ID, InstallationID: t.Installation.ID, Generation: t.Installation.Generation}
	byID := make(map[string]int, len(st.Namespaces))
	for i, n := range st.Namespaces {
		args = append(args, n.ID)
		byID[n.ID] = i
		snap.Namespaces = append(snap.Namespaces, SnapshotNamespace{ID: n.ID, MaxBytes: n.MaxBytes, AIAccess: n.Access(), Items: []models.ItemJSON{}})
	}
	args = append(args, t.Instance.ID)
	// One statement reads the revision and the items, at one point in time.
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.internal(err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		found = true
		var ns string
		r := database.ItemRow{}
		if err := rows.Scan(&snap.StorageRevision, &ns, &r.Key, &r.Value, &r.Size, &r.Revision, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, s.internal(err)
		}
		i, ok := byID[ns]
		switch {
		case !ok:
		case times:
			snap.Namespaces[i].Items = append(snap.Namespaces[i].Items, r.Model().Wire())
		default:
			snap.Namespaces[i].Items = append(snap.Namespaces[i].Items, models.ItemJSON{Key: r.Key, Value: models.JSON(r.Value), Revision: r.Revision})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.internal(err)
	}
	if !found {
		return nil, s.internal(sql.ErrNoRows)
	}
	return snap, nil
}
