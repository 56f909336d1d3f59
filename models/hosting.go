package models

import "time"

// Extension points of a UI extension.
const (
	PointScreen   = "screen"
	PointHome     = "home"
	PointResponse = "response"
)

// OpPackage is the StorageChange operation of a package change: the
// Installation moved to a new generation, so open surfaces reload their
// config and drop handles of the old one.
const OpPackage = "package"

// OpDevelopment is the StorageChange operation that tells the open surfaces
// of an Installation why the author's latest change was not installed
// (pluginhost dev); Message says why, and the version they show stays. It
// is outside the storage revision order: it changes nothing stored.
const OpDevelopment = "development"

// MaxDevelopmentMessage bounds the message of an OpDevelopment change, in
// bytes.
const MaxDevelopmentMessage = 4000

// Persisted UI state limits (contract, "Persisted UI state").
const (
	// MaxPersistedStateBytes bounds one extension's persisted state of one
	// Instance, as compact JSON: "at most 16 KiB per extension".
	MaxPersistedStateBytes = 16 * 1024
	// MaxStateValueDepth, MaxStateValueEntries: each value "within the JSON
	// binding value limits (depth 8, 64 entries per object or list)". A
	// scalar has depth 0, [] and {} depth 1.
	MaxStateValueDepth   = 8
	MaxStateValueEntries = 64
)

// ExtensionConfig is a UI extension of an installed package with its config,
// stored at install or update as validated and served unchanged.
type ExtensionConfig struct {
	ID    string
	Point string
	// Placement, Icon and Description are the config's own top-level members
	// of those names, when it has them.
	Placement   *string
	Icon        JSON
	Description *string
	// Config is the config file of the package, as compact JSON.
	Config JSON
	// Generation is the package generation the config belongs to.
	Generation int64
}

// UIConfig is what an app client needs to open one extension of one
// Instance: the config of the current package and the state persisted for it.
type UIConfig struct {
	InstanceID     string
	Extension      string
	Point          string
	Generation     int64
	Config         JSON
	PersistedState JSON
}

// Checks of a response UI selection: the codes of ResponseRender.Reasons.
const (
	// ResponseValidity: the result breaks the extension's a2ui.schema.
	ResponseValidity = "validity"
	// ResponseRelevance: the config has no data source of the capability, or
	// the result's evidence names another Instance.
	ResponseRelevance = "relevance"
	// ResponseDuplicate: the message already has its response container.
	ResponseDuplicate = "duplicate"
	// ResponsePermission: the Instance is disabled or not the viewer's.
	ResponsePermission = "permission"
)

// RenderedResponse is a response UI the host rendered in one of the user's
// AI messages: what a surface needs to show it again.
type RenderedResponse struct {
	UserID     string
	MessageID  string
	InstanceID string
	Extension  string
	Capability string
	Generation int64
	CreatedAt  time.Time
	// Data holds the result as the result of each of the extension's data
	// sources of the capability, as in ResponseRender.
	Data JSON
}

// MaxMessageIDLength bounds the AI message id of a response selection.
const MaxMessageIDLength = 128

// ResponseCandidate is one response extension the AI may select for a tool
// result: the catalog entry of an enabled Instance's response extension.
type ResponseCandidate struct {
	// Handle is opaque; it binds the Instance, extension and generation.
	Handle      string
	InstanceID  string
	Extension   string
	Description string
	Version     int
}

// ResponseRender is the outcome of a response UI selection. It renders only
// when every check passed; otherwise Reasons holds each failed check.
type ResponseRender struct {
	Rendered   bool
	Reasons    []Problem
	InstanceID *string
	Extension  *string
	Generation *int64
	// Config is the response extension's config; Data holds the result as
	// the result of each of the config's data sources of the capability.
	Config JSON
	Data   JSON
}
