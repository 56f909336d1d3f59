package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"

	"pluginhost/models"
)

// toolArgs are the arguments each standard tool takes.
var toolArgs = map[string][]string{
	models.ToolList:   {"namespace", "query", "limit", "cursor"},
	models.ToolGet:    {"namespace", "key"},
	models.ToolCreate: {"namespace", "key", "value"},
	models.ToolUpdate: {"namespace", "key", "value", "revision"},
	models.ToolDelete: {"namespace", "key", "revision"},
}

// scopeArgs name a scope; the scope of a call comes from the call itself (the
// Instance id of the operation, or the AI tool handle), never from arguments.
var scopeArgs = []string{"instance_id", "instanceId", "installation_id", "installationId", "user_id", "userId", "plugin_id", "pluginId", "generation", "handle"}

// ScopeArgument returns the first top-level member of object arguments that
// names a scope (instance_id and the like), which no call may take from its
// arguments.
func ScopeArgument(args models.JSON) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return "", false
	}
	for _, f := range scopeArgs {
		if _, ok := m[f]; ok {
			return f, true
		}
	}
	return "", false
}

// Invoke runs a standard storage tool by name with JSON object arguments.
func (s *Service) Invoke(ctx context.Context, c models.Caller, instanceID, tool string, args models.JSON) (*models.ExtensionResult, error) {
	allowed, ok := toolArgs[tool]
	if !ok {
		return nil, models.Errorf(models.ErrInvalid, "unknown storage tool %q; the standard tools are %s", tool, strings.Join(models.StorageTools, ", "))
	}
	a, err := parseArgs(tool, args, allowed)
	if err != nil {
		return nil, err
	}
	switch tool {
	case models.ToolList:
		return s.List(ctx, c, instanceID, ListQuery{Namespace: a.namespace, Query: a.query, Limit: a.limit, Cursor: a.cursor})
	case models.ToolGet:
		return s.Get(ctx, c, instanceID, a.namespace, a.key)
	case models.ToolCreate:
		return s.Create(ctx, c, instanceID, a.namespace, a.key, a.value)
	case models.ToolUpdate:
		return s.Update(ctx, c, instanceID, a.namespace, a.key, a.value, a.revision)
	default:
		return s.Delete(ctx, c, instanceID, a.namespace, a.key, a.revision)
	}
}

type toolArgValues struct {
	namespace, key, query, cursor string
	limit                         *int
	revision                      int64
	value                         models.JSON
}

// parseArgs decodes and type-checks tool arguments: an object with only the
// tool's members, of the right types, with the required ones present.
func parseArgs(tool string, args models.JSON, allowed []string) (*toolArgValues, error) {
	var a toolArgValues
	m := map[string]json.RawMessage{}
	if len(args) > 0 && !bytes.Equal(args, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(args))
		if err := dec.Decode(&m); err != nil {
			return nil, models.Errorf(models.ErrInvalid, "arguments of %s must be a JSON object: %v", tool, err)
		}
	}
	for name := range m {
		for _, sa := range scopeArgs {
			if name == sa {
				return nil, models.Errorf(models.ErrInvalid, "argument %q is not accepted: the scope of a call comes from the call, never from its arguments", name)
			}
		}
		known := false
		for _, al := range allowed {
			known = known || name == al
		}
		if !known {
			return nil, models.Errorf(models.ErrInvalid, "unknown argument %q; %s takes %s", name, tool, strings.Join(allowed, ", "))
		}
	}
	str := func(name string, required bool) (string, error) {
		raw, ok := m[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			if required {
				return "", models.Errorf(models.ErrInvalid, "argument %q is required by %s", name, tool)
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", models.Errorf(models.ErrInvalid, "argument %q must be a string", name)
		}
		return s, nil
	}
	integer := func(name string, required bool) (int64, error) {
		raw, ok := m[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			if required {
				return 0, models.Errorf(models.ErrInvalid, "argument %q is required by %s", name, tool)
			}
			return 0, nil
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, models.Errorf(models.ErrInvalid, "argument %q must be an integer, not %s", name, raw)
		}
		return int64(f), nil
	}
	var err error
	if a.namespace, err = str("namespace", false); err != nil {
		return nil, err
	}
	needKey := tool != models.ToolList
	if contains(allowed, "key") {
		if a.key, err = str("key", needKey); err != nil {
			return nil, err
		}
	}
	if contains(allowed, "query") {
		if a.query, err = str("query", false); err != nil {
			return nil, err
		}
		if a.cursor, err = str("cursor", false); err != nil {
			return nil, err
		}
		l, err := integer("limit", false)
		if err != nil {
			return nil, err
		}
		if raw, given := m["limit"]; given && !bytes.Equal(raw, []byte("null")) {
			n := int(max(min(l, math.MaxInt32), math.MinInt32))
			a.limit = &n
		}
	}
	if contains(allowed, "revision") {
		if a.revision, err = integer("revision", true); err != nil {
			return nil, err
		}
	}
	if contains(allowed, "value") {
		raw, ok := m["value"]
		if !ok {
			return nil, models.Errorf(models.ErrInvalid, "argument \"value\" is required by %s", tool)
		}
		a.value = models.JSON(raw)
	}
	if a.namespace == "" {
		if _, given := m["namespace"]; given && !bytes.Equal(m["namespace"], []byte("null")) {
			return nil, models.Errorf(models.ErrInvalid, "argument \"namespace\" is empty; omit it to use the default namespace")
		}
	}
	return &a, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
