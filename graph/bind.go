package graph

import (
	"pluginhost/connections"
	"pluginhost/models"
	"pluginhost/notify"
	"pluginhost/storage"
)

// This file holds the Go types the schema binds that gqlgen does not
// generate: the objects whose global id needs a scope their domain value does
// not carry, and the connections, each one instantiation of models.Page.

// Extension is a UI extension of an Installation.
type Extension struct {
	models.ExtensionConfig
	InstallationID string
}

// ID is the extension's global id.
func (e Extension) ID() string {
	return models.NodeID(models.NodeExtension, e.InstallationID, e.ExtensionConfig.ID)
}

// ManifestID is the extension's id in the manifest.
func (e Extension) ManifestID() string { return e.ExtensionConfig.ID }

// Capability is a capability of an Installation's package.
type Capability struct {
	models.Capability
	InstallationID string
}

// ID is the capability's global id.
func (c Capability) ID() string {
	return models.NodeID(models.NodeCapability, c.InstallationID, c.Capability.ID)
}

// ManifestID is the capability's id in the manifest.
func (c Capability) ManifestID() string { return c.Capability.ID }

// Connection is a connection of a manifest as one Instance has it.
type Connection struct {
	connections.Status
	InstanceID string
}

// ID is the global id of the connection of the Instance.
func (c Connection) ID() string {
	return models.NodeID(models.NodeConnection, c.InstanceID, c.Status.ID)
}

// ManifestID is the connection's id in the manifest.
func (c Connection) ManifestID() string { return c.Status.ID }

// NotificationAction is an action of one notification.
type NotificationAction struct {
	notify.Action
	NotificationID string
}

// ID is the action's global id.
func (a NotificationAction) ID() string {
	return models.NodeID(models.NodeNotificationAction, a.NotificationID, a.Action.ID)
}

// ActionID is the plugin's id of the action.
func (a NotificationAction) ActionID() string { return a.Action.ID }

// The connections of the schema.
type (
	AccessTokenConnection      = models.Page[*AccessToken]
	AccessTokenEdge            = models.Edge[*AccessToken]
	AuditEntryConnection       = models.Page[*AuditEntry]
	AuditEntryEdge             = models.Edge[*AuditEntry]
	BackgroundRunConnection    = models.Page[*BackgroundRun]
	BackgroundRunEdge          = models.Edge[*BackgroundRun]
	FetchRecordConnection      = models.Page[*storage.FetchRecord]
	FetchRecordEdge            = models.Edge[*storage.FetchRecord]
	NotificationConnection     = models.Page[*notify.Notification]
	NotificationEdge           = models.Edge[*notify.Notification]
	RenderedResponseConnection = models.Page[*models.RenderedResponse]
	RenderedResponseEdge       = models.Edge[*models.RenderedResponse]
	SavedEntityConnection      = models.Page[*SavedEntity]
	SavedEntityEdge            = models.Edge[*SavedEntity]
	UserConnection             = models.Page[*models.User]
	UserEdge                   = models.Edge[*models.User]
)
