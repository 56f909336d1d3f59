// Package resolvers implements the GraphQL schema. Resolvers are thin: they
// take the authenticated user, call the domain services and map results.
package resolvers

import (
	"context"
	"log/slog"

	"pluginhost/aitools"
	"pluginhost/auth"
	"pluginhost/capability"
	"pluginhost/connections"
	"pluginhost/extensions"
	"pluginhost/lifecycle"
	"pluginhost/live"
	"pluginhost/models"
	"pluginhost/notify"
	"pluginhost/schedule"
	"pluginhost/storage"
)

// Resolver holds the services the resolvers call.
type Resolver struct {
	Auth      *auth.Service
	Lifecycle *lifecycle.Service
	Storage   *storage.Service
	AI        *aitools.Service
	// UI serves UI configs, persisted UI state and response UI.
	UI   *extensions.Service
	Live *live.Hub
	// Capabilities runs plugin capabilities; Schedule shows their
	// background runs.
	Capabilities *capability.Service
	Schedule     *schedule.Scheduler
	// Connections keeps the accounts plugins use.
	Connections *connections.Service
	// Notify keeps the notifications plugins send the viewer.
	Notify *notify.Service
	Log    *slog.Logger
}

// subscriber authenticates a subscription of the viewer's own (not of one
// Instance) and counts it toward the connection's and the user's
// subscriptions until ctx ends.
func (r *Resolver) subscriber(ctx context.Context) (*models.User, error) {
	user, err := auth.Require(ctx)
	if err != nil {
		return nil, err
	}
	release, err := r.Live.Hold(ctx, user.ID)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, release)
	return user, nil
}
