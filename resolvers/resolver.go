// Package resolvers implements the GraphQL schema. Resolvers are thin: they
// take the authenticated user, call the domain services and map results.
package resolvers

import (
	"log/slog"

	"pluginhost/aitools"
	"pluginhost/auth"
	"pluginhost/lifecycle"
	"pluginhost/live"
	"pluginhost/storage"
)

// Resolver holds the services the resolvers call.
type Resolver struct {
	Auth      *auth.Service
	Lifecycle *lifecycle.Service
	Storage   *storage.Service
	AI        *aitools.Service
	Live      *live.Hub
	Log       *slog.Logger
}
