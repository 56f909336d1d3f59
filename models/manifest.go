package models

import "encoding/json"

// Permission names a manifest may request.
const (
	PermissionStorage   = "storage"
	PermissionAIStorage = "ai_storage"
	PermissionNetwork   = "network"
	// PermissionNotifications lets tool, skill and background runs notify
	// the user (data.notifications).
	PermissionNotifications = "notifications"
)

// Data policies: what uninstall does with Plugin Local Storage.
const (
	DataPolicyRetain = "retain"
	DataPolicyPurge  = "purge"
)

// AI access levels of a namespace.
const (
	AIAccessNone      = "none"
	AIAccessRead      = "read"
	AIAccessReadWrite = "read_write"
)

// Storage limits of the specification ("Limits/Storage").
const (
	MaxNamespaces           = 16         // namespaces per Installation: 1 to 16
	MaxNamespaceBytes       = 256 * 1024 // max_bytes per namespace: 1 byte to 256 KiB
	MaxInstallationBytes    = 512 * 1024 // total over the Installation: at most 512 KiB
	MaxKeysPerNamespace     = 256        // keys per namespace
	MaxKeyLength            = 80         // key length in characters
	MaxValueBytes           = 32 * 1024  // value size: 32 KiB of UTF-8 JSON
	MaxMigrations           = 64         // migration declarations
	MinStorageVersion       = 1          // storage version 1 to 1000
	MaxStorageVersion       = 1000       //
	MinListLimit            = 1          // list limit 1 to 100
	MaxListLimit            = 100        //
	CompatNamespace         = "default"  // schema 1 compatibility namespace
	CompatNamespaceMaxBytes = 128 * 1024 // its size: 128 KiB, at storage version 1
)

// Manifest is a plugin's manifest.json, after validation.
type Manifest struct {
	ID             string       `json:"id"`
	Name           string       `json:"name"`
	Description    string       `json:"description,omitempty"`
	Version        string       `json:"version"`
	SchemaVersion  int          `json:"schema_version"`
	Permissions    []string     `json:"permissions"`
	DataPolicy     string       `json:"data_policy,omitempty"`
	Storage        *StorageDecl `json:"storage,omitempty"`
	Capabilities   []Capability `json:"capabilities,omitempty"`
	Extensions     []Extension  `json:"extensions,omitempty"`
	MinHostVersion string       `json:"min_host_version,omitempty"`
	Network        *Network     `json:"network,omitempty"`
	Connections    []Connection `json:"connections,omitempty"`
}

// StorageDecl is the manifest's storage declaration.
type StorageDecl struct {
	Version    int             `json:"version"`
	Namespaces []NamespaceDecl `json:"namespaces"`
	Migrations []MigrationDecl `json:"migrations,omitempty"`
}

// NamespaceDecl declares one storage namespace.
type NamespaceDecl struct {
	ID       string `json:"id"`
	MaxBytes int    `json:"max_bytes"`
	// AIAccess is none, read or read_write; empty means none.
	AIAccess string `json:"ai_access,omitempty"`
}

// Access returns the namespace's AI access, none when omitted.
func (n NamespaceDecl) Access() string {
	if n.AIAccess == "" {
		return AIAccessNone
	}
	return n.AIAccess
}

// MigrationDecl is one storage migration step of one namespace.
type MigrationDecl struct {
	From      int               `json:"from"`
	To        int               `json:"to"`
	Namespace string            `json:"namespace"`
	Rename    map[string]string `json:"rename,omitempty"`
	Delete    []string          `json:"delete,omitempty"`
}

// Capability kinds.
const (
	KindTool       = "tool"
	KindSkill      = "skill"
	KindBackground = "background"
	KindData       = "data"
)

// Capability is a capability the plugin declares.
type Capability struct {
	ID           string          `json:"id"`
	Kind         string          `json:"kind"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Module is the path in the package of the WebAssembly module (a WASI
	// preview 1 command module) that runs the capability; "" when the plugin
	// ships no code for it.
	Module string `json:"module,omitempty"`
	// Source is the folder of the plugin that pluginhost build builds the
	// module from (Go sources); it is not packaged.
	Source string `json:"source,omitempty"`
	// ModuleSHA256 is the SHA-256 (hex) of the module's bytes, recorded by
	// the host when it installs the package (the validator refuses it in
	// a package's manifest), so that a run finds its compiled module
	// without reading the stored one.
	ModuleSHA256 string `json:"module_sha256,omitempty"`
	// ScheduleSeconds is how often a background capability runs (30 to
	// 86400); 0 when it is not scheduled.
	ScheduleSeconds int `json:"schedule_seconds,omitempty"`
}

// Runnable reports whether the host can run the capability: it names a module.
func (c Capability) Runnable() bool { return c.Module != "" }

// Capability returns the declared capability with the id, if any.
func (m *Manifest) Capability(id string) (Capability, bool) {
	for _, c := range m.Capabilities {
		if c.ID == id {
			return c, true
		}
	}
	return Capability{}, false
}

// Extension is a UI extension and the path of its UI config in the package.
type Extension struct {
	ID     string `json:"id"`
	Point  string `json:"point"`
	Config string `json:"config,omitempty"`
}

// ConfigFile is the file in the package that holds the extension's config:
// the one the manifest names, else ui/<id>.json.
func (e Extension) ConfigFile() string {
	if e.Config != "" {
		return e.Config
	}
	return "ui/" + e.ID + ".json"
}

// HasPermission reports whether the manifest requests the permission.
func (m *Manifest) HasPermission(name string) bool {
	for _, p := range m.Permissions {
		if p == name {
			return true
		}
	}
	return false
}

// EffectiveStorage returns the storage the Installation gets: the explicit
// declaration, or for a schema 1 plugin that requests `storage` the compatibility
// namespace `default` (version 1, 128 KiB). It returns nil when the plugin has no
// storage.
func (m *Manifest) EffectiveStorage() *StorageDecl {
	if !m.HasPermission(PermissionStorage) {
		return nil
	}
	if m.Storage != nil {
		return m.Storage
	}
	if m.SchemaVersion == 1 {
		return &StorageDecl{
			Version:    1,
			Namespaces: []NamespaceDecl{{ID: CompatNamespace, MaxBytes: CompatNamespaceMaxBytes, AIAccess: AIAccessNone}},
		}
	}
	return nil
}

// Namespace returns the declared namespace with the id, if any.
func (s *StorageDecl) Namespace(id string) (NamespaceDecl, bool) {
	for _, n := range s.Namespaces {
		if n.ID == id {
			return n, true
		}
	}
	return NamespaceDecl{}, false
}

// DefaultNamespace is the namespace used when a call omits it: `default` when
// declared, else the first declared namespace.
func (s *StorageDecl) DefaultNamespace() string {
	if _, ok := s.Namespace(CompatNamespace); ok {
		return CompatNamespace
	}
	return s.Namespaces[0].ID
}
