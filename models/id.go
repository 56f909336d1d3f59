package models

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
)

// ID prefixes say what an id names.
const (
	PrefixUser         = "usr_"
	PrefixInstallation = "instl_"
	PrefixInstance     = "inst_"
	PrefixToken        = "tok_"
	PrefixNotification = "ntf_"
	PrefixCredential   = "cred_"
	PrefixEntity       = "ent_"
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID returns prefix followed by 128 random bits in lower-case base32.
func NewID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + strings.ToLower(idEncoding.EncodeToString(b))
}

// SessionCookie is the name of the web host's sign-in cookie.
const SessionCookie = "pluginhost_session"

// NodeType names the GraphQL type of an object with a global id (one that
// implements the interface Node).
type NodeType string

// The types with a global id.
const (
	NodeUser               NodeType = "User"
	NodeInstallation       NodeType = "Installation"
	NodeInstance           NodeType = "Instance"
	NodeAccessToken        NodeType = "AccessToken"
	NodeNotification       NodeType = "Notification"
	NodeExtension          NodeType = "Extension"
	NodeCapability         NodeType = "Capability"
	NodeNamespace          NodeType = "Namespace"
	NodeAiNamespace        NodeType = "AiNamespace"
	NodeConnection         NodeType = "Connection"
	NodeUiConfig           NodeType = "UiConfig"
	NodeNotificationAction NodeType = "NotificationAction"
	NodeAuditEntry         NodeType = "AuditEntry"
	NodeFetchRecord        NodeType = "FetchRecord"
	NodeSavedEntity        NodeType = "SavedEntity"
	NodeBackgroundRun      NodeType = "BackgroundRun"
	NodeRenderedResponse   NodeType = "RenderedResponse"
)

// nodeKind is how the global ids of one type are made: the prefix that
// names the type and what the scope holds. A type whose objects have an id
// of their own that is unique on the server (random, with the type's
// prefix) keeps that id; the others are named by their scope (say an
// Installation and a manifest id), which is what makes them stable across
// restarts and replicas.
type nodeKind struct {
	typ    NodeType
	prefix string
	scope  []string // the scope's parts, for documentation and counting
	own    bool     // the scope is the object's own id, prefix included
}

var nodeKinds = []nodeKind{
	{NodeUser, PrefixUser, []string{"user id"}, true},
	{NodeInstallation, PrefixInstallation, []string{"installation id"}, true},
	{NodeInstance, PrefixInstance, []string{"instance id"}, true},
	{NodeAccessToken, PrefixToken, []string{"token id"}, true},
	{NodeNotification, PrefixNotification, []string{"notification id"}, true},
	{NodeExtension, "ext_", []string{"installation id", "manifest id"}, false},
	{NodeCapability, "cap_", []string{"installation id", "manifest id"}, false},
	{NodeNamespace, "ns_", []string{"installation id", "manifest id"}, false},
	{NodeAiNamespace, "ains_", []string{"installation id", "manifest id"}, false},
	{NodeConnection, "conn_", []string{"instance id", "manifest id"}, false},
	{NodeUiConfig, "uic_", []string{"instance id", "extension id"}, false},
	{NodeNotificationAction, "nact_", []string{"notification id", "action id"}, false},
	{NodeAuditEntry, "aud_", []string{"record number"}, false},
	{NodeFetchRecord, "fetch_", []string{"record number"}, false},
	{NodeSavedEntity, "saved_", []string{"instance id", "key"}, false},
	{NodeBackgroundRun, "brun_", []string{"instance id", "capability id"}, false},
	{NodeRenderedResponse, "resp_", []string{"user id", "message id"}, false},
}

func nodeKindOf(t NodeType) nodeKind {
	for _, k := range nodeKinds {
		if k.typ == t {
			return k
		}
	}
	panic("models: no global id for type " + string(t))
}

// NodeID returns the global id of the object of type t in scope: unique on
// the server across all types and plugins, and the same on every replica
// and after every restart. Types whose objects have an id of their own
// unique on the server (users, Installations, Instances, access tokens,
// notifications) keep it: their scope is that id. Clients never parse a
// global id; ParseNodeID is the only reader.
func NodeID(t NodeType, scope ...string) string {
	k := nodeKindOf(t)
	if len(scope) != len(k.scope) {
		panic("models: the global id of " + string(t) + " has a scope of " + strings.Join(k.scope, " and "))
	}
	if k.own {
		return scope[0]
	}
	b, _ := json.Marshal(scope)
	return k.prefix + base64.RawURLEncoding.EncodeToString(b)
}

// ParseNodeID returns the type and the scope of a global id made by NodeID.
// Anything else, or a global id in another spelling than NodeID's, is
// BAD_USER_INPUT.
func ParseNodeID(id string) (NodeType, []string, error) {
	bad := Errorf(ErrBadUserInput, "id %q is not an id this server gave", id)
	i := strings.IndexByte(id, '_')
	if i < 0 || i == len(id)-1 {
		return "", nil, bad
	}
	prefix := id[:i+1]
	for _, k := range nodeKinds {
		if k.prefix != prefix {
			continue
		}
		if k.own {
			return k.typ, []string{id}, nil
		}
		b, err := base64.RawURLEncoding.DecodeString(id[i+1:])
		var scope []string
		if err != nil || json.Unmarshal(b, &scope) != nil || len(scope) != len(k.scope) || slices.Contains(scope, "") ||
			NodeID(k.typ, scope...) != id {
			return "", nil, bad
		}
		return k.typ, scope, nil
	}
	return "", nil, bad
}

// Node is an object with a global id: a value of one of the types that
// implement the GraphQL interface Node.
type Node interface{}
