package models

// Caller is who asks to use an Instance, and under which restrictions. Every
// feature that uses an Instance for someone says so with a Caller, and the
// Instance gate (package access) applies the same rule to it.
type Caller struct {
	// UserID is whose the Instance must be: the user who asks, or for a
	// background run the Instance's owner.
	UserID string
	// AI is the user's AI assistant asking: storage then applies each
	// namespace's ai_access (read allows list and get; read_write also
	// create, update and delete; none and undeclared namespaces are
	// refused) and requires the ai_storage consent.
	AI bool
	// Generation, when not zero, is the package generation the call was
	// issued for (a tool handle's, invoke's generation argument, a run's);
	// another current generation is PLUGIN_STORAGE_CONFLICT.
	Generation int64
	// Actor, when set, records each change and each refused attempt in the
	// audit trail: one of the Actor constants.
	Actor string
	// Capability names what acts for the actor: the storage tool the AI
	// called, or the capability that runs or whose host actions apply.
	Capability string
}

// Actors of the audit trail.
const (
	// ActorAI is the user's AI assistant, through its tools.
	ActorAI = "ai"
	// ActorHost is the host applying a capability's result (host actions
	// of applyCapabilityResult).
	ActorHost = "host"
	// ActorCapability is a capability run started by invoke, and
	// ActorBackground one started by the schedule; a run the AI started is
	// ActorAI.
	ActorCapability = "capability"
	ActorBackground = "background"
)

// String returns a short description of a caller for logs.
func (c Caller) String() string {
	if c.AI {
		return "ai(user=" + c.UserID + ")"
	}
	return "user=" + c.UserID
}
