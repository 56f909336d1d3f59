package resolvers

import (
	"context"
	"encoding/json"
	"strings"

	"pluginhost/capability"
	"pluginhost/models"
	"pluginhost/sandbox"
)

// invoke runs a capability for an app client: a host.storage.* tool through
// the storage service, any other through the plugin's own module.
func (r *Resolver) invoke(ctx context.Context, c models.Caller, instanceID, id string, args models.JSON, query *string, generation *int) (*models.ExtensionResult, error) {
	if generation != nil {
		if *generation < 1 {
			return nil, models.Errorf(models.ErrBadUserInput, "generation must be a package generation (1 or more)")
		}
		c.Generation = int64(*generation)
	}
	if strings.HasPrefix(id, "host.storage.") {
		if query != nil && id == models.ToolList {
			args = withQuery(args, *query)
		}
		return r.Storage.Invoke(ctx, c, instanceID, id, args)
	}
	return r.Capabilities.Run(ctx, capability.Call{Caller: c, InstanceID: instanceID, Capability: id,
		Arguments: args, Query: query, Trigger: sandbox.TriggerInvoke})
}

// withQuery sets the query member of list arguments that have none.
func withQuery(args models.JSON, query string) models.JSON {
	var m map[string]json.RawMessage
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &m); err != nil {
			return args // the storage service reports it
		}
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	if _, ok := m["query"]; !ok {
		q, _ := json.Marshal(query)
		m["query"] = q
	}
	b, _ := json.Marshal(m)
	return b
}
