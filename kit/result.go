package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// Result is what a run answers: an ExtensionResult (a summary, data and
// evidence), with the host actions and notifications the host applies, or
// a round of fetches for the host to make before it runs the capability
// again.
type Result struct {
	// Summary is a short human-readable account of the result.
	Summary string
	// Data is the result's data, checked against the output_schema. The
	// kit adds host_actions and notifications to it when there are any;
	// the host takes them out again before the check.
	Data map[string]any
	// Evidence cites the stored items the result rests on.
	Evidence []Evidence
	// HostActions change the Instance's storage, all or none, at the run's
	// package generation.
	HostActions []HostAction
	// Notifications tell the user something (the plugin must request the
	// notifications permission).
	Notifications []Notification

	fetch []Fetch
	carry any
}

// Evidence is one cited item.
type Evidence struct {
	Type       string `json:"type"`
	InstanceID string `json:"instance_id"`
	Namespace  string `json:"namespace"`
	Key        string `json:"key"`
	Revision   int64  `json:"revision"`
}

// Reply returns a result with a summary and data.
func Reply(summary string, data map[string]any) *Result {
	return &Result{Summary: summary, Data: data}
}

// HostAction is one change of the Instance's storage.
type HostAction struct {
	Type      string          `json:"type"`
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value,omitempty"`
	Revision  int64           `json:"revision,omitempty"`
}

// Host action types.
const (
	ActionSet    = "plugin_storage_set"
	ActionDelete = "plugin_storage_delete"
)

// Create returns the host action that creates a key (refused when the key
// exists).
func Create(namespace, key string, value any) HostAction {
	return HostAction{Type: ActionSet, Namespace: namespace, Key: key, Value: mustJSON(value)}
}

// Update returns the host action that changes an item of the snapshot, at
// its revision (refused when it changed since).
func Update(namespace string, it Item, value any) HostAction {
	return HostAction{Type: ActionSet, Namespace: namespace, Key: it.Key, Value: mustJSON(value), Revision: it.Revision}
}

// Delete returns the host action that deletes an item of the snapshot, at
// its revision.
func Delete(namespace string, it Item) HostAction {
	return HostAction{Type: ActionDelete, Namespace: namespace, Key: it.Key, Revision: it.Revision}
}

// Do adds host actions to the result.
func (r *Result) Do(actions ...HostAction) *Result {
	r.HostActions = append(r.HostActions, actions...)
	return r
}

// Cite adds evidence to the result.
func (r *Result) Cite(evidence ...Evidence) *Result {
	r.Evidence = append(r.Evidence, evidence...)
	return r
}

// Notify adds notifications to the result.
func (r *Result) Notify(n ...Notification) *Result {
	r.Notifications = append(r.Notifications, n...)
	return r
}

// Notification is one notification; the same ID for the same Instance
// replaces the earlier one.
type Notification struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Body     string         `json:"body,omitempty"`
	Severity string         `json:"severity"`
	Actions  []ActionButton `json:"actions,omitempty"`
}

// Severities of a notification.
const (
	Info    = "info"
	Success = "success"
	Warning = "warning"
	Error   = "error"
)

// ActionButton is an action the user can take on a notification.
type ActionButton struct {
	ID     string `json:"id"`
	Label  string `json:"label"`
	Action Action `json:"action"`
}

// Action is what a notification's action does: apply host actions, open an
// extension, or invoke a capability.
type Action struct {
	Type        string         `json:"type"`
	HostActions []HostAction   `json:"host_actions,omitempty"`
	Extension   string         `json:"extension,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Capability  string         `json:"capability,omitempty"`
	Arguments   map[string]any `json:"arguments,omitempty"`
}

// Apply is the action that applies host actions when the user takes it.
func Apply(actions ...HostAction) Action { return Action{Type: "host_actions", HostActions: actions} }

// Open is the action that opens an extension of the plugin.
func Open(extension string, parameters map[string]any) Action {
	return Action{Type: "open", Extension: extension, Parameters: parameters}
}

// Invoke is the action that invokes a capability of the plugin.
func Invoke(capability string, arguments map[string]any) Action {
	return Action{Type: "invoke", Capability: capability, Arguments: arguments}
}

// Fetch is one request for the host to make. The host makes it only to a
// host the manifest's network.hosts lists, over HTTPS; with Connection, it
// attaches that connection's credential itself.
type Fetch struct {
	ID           string            `json:"id"`
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	BodyEncoding string            `json:"body_encoding,omitempty"`
	Connection   string            `json:"connection,omitempty"`
}

// Get returns a GET request.
func Get(id, url string) Fetch { return Fetch{ID: id, Method: "GET", URL: url} }

// Fetching returns the result that asks the host for a round of fetches (1
// to 4): the host makes them and runs the capability again, with the
// answers in Request.Fetched and Request.Round one higher.
func Fetching(fetches ...Fetch) *Result { return &Result{fetch: fetches} }

// MaxCarry bounds what a round carries (Carry), as compact JSON.
const MaxCarry = 64 << 10

// Carry adds to a round of fetches (Fetching) a value the next run reads
// in Request.Carry (Request.Carried): what this run learned that the next
// needs, such as an earlier round's answer, instead of fetching it again.
// It must encode to at most MaxCarry bytes of JSON, and is carried to the
// next run only: a run that needs it later carries it again.
func (r *Result) Carry(v any) *Result {
	r.carry = v
	return r
}

// encode writes the result as the host reads it.
func (r *Result) encode() ([]byte, error) {
	if r.fetch != nil {
		out := map[string]any{"fetch": r.fetch}
		if r.carry != nil {
			carry, err := marshal(r.carry)
			if err != nil {
				return nil, fmt.Errorf("the round's carry is not JSON: %w", err)
			}
			if len(carry) > MaxCarry {
				return nil, fmt.Errorf("the round's carry encodes to %d bytes of JSON; at most %d (kit.MaxCarry) are carried to the next round: carry less, such as the ids to fetch again", len(carry), MaxCarry)
			}
			out["carry"] = json.RawMessage(carry)
		}
		return marshal(out)
	}
	if r.carry != nil {
		return nil, errors.New("Carry is for a round of fetches (kit.Fetching(...).Carry(v)); a result that ends the run carries nothing")
	}
	for _, name := range [...]string{"host_actions", "notifications"} {
		if _, taken := r.Data[name]; taken {
			return nil, fmt.Errorf("data.%s is set both in Data and by the result's builders", name)
		}
	}
	data := r.Data
	if len(r.HostActions) > 0 || len(r.Notifications) > 0 {
		data = maps.Clone(r.Data)
		if data == nil {
			data = map[string]any{}
		}
		if len(r.HostActions) > 0 {
			data["host_actions"] = r.HostActions
		}
		if len(r.Notifications) > 0 {
			data["notifications"] = r.Notifications
		}
	}
	if data == nil {
		data = map[string]any{}
	}
	evidence := r.Evidence
	if evidence == nil {
		evidence = []Evidence{}
	}
	return marshal(struct {
		Summary  string         `json:"summary"`
		Data     map[string]any `json:"data"`
		Evidence []Evidence     `json:"evidence"`
	}{r.Summary, data, evidence})
}

// mustJSON encodes a value for a host action; a value that cannot be JSON is
// a bug of the capability, reported when the result is written.
func mustJSON(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kit: a host action's value is not JSON: %v", err))
	}
	return b
}
