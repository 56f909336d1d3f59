package resolvers

import (
	"context"
	"encoding/json"
	"strings"

	"pluginhost/capability"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

// invoke runs a capability for an app client: a host.storage.* tool through
// the storage service, any other through the plugin's own module.
func (r *Resolver) invoke(ctx context.Context, c storage.Caller, instanceID, id string, args models.JSON, query *string, generation *int) (*models.ExtensionResult, error) {
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
	return r.Capabilities.Run(ctx, capability.Call{UserID: c.UserID, InstanceID: instanceID, Capability: id,
		Arguments: args, Query: query, Generation: c.Generation, Trigger: sandbox.TriggerInvoke})
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

// prepared starts compiling the modules of a newly installed package, so that
// its first run does not wait for the compiler.
func (r *Resolver) prepared(in *models.Installation, err error) (*models.Installation, error) {
	if err == nil && r.Capabilities != nil {
		r.Capabilities.Prepare(in.ID, in.Generation)
	}
	return in, err
}
