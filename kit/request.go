package kit

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Triggers of a run: what started it.
const (
	TriggerInvoke   = "invoke"   // a data source or an invoke action of a screen, or an app client
	TriggerSchedule = "schedule" // the background schedule
	TriggerAI       = "ai"       // the user's AI assistant
)

// Request is what the host writes on a run's standard input.
type Request struct {
	// Capability is the capability's id; Kind its kind (tool, skill,
	// background, data).
	Capability string `json:"capability"`
	Kind       string `json:"kind"`
	// Trigger says what started the run.
	Trigger string `json:"trigger"`
	// Arguments is a JSON object, checked against the input_schema.
	Arguments json.RawMessage `json:"arguments"`
	// Query is the data source's query, when it has one.
	Query *string `json:"query"`
	// Instance is the Instance the run is for.
	Instance Instance `json:"instance"`
	// PluginStorage is the Instance's storage, read at one point in time;
	// nil when the manifest does not request storage.
	PluginStorage *Storage `json:"plugin_storage,omitempty"`
	// Round counts the fetch rounds so far: 0 on the first run, then 1 after
	// the host fetched what the run asked for, and so on.
	Round int `json:"round,omitempty"`
	// Fetched holds the answers of the last round's fetches, by their id.
	Fetched map[string]Response `json:"fetched,omitempty"`
	// Carry is the JSON the run that asked for the last round carried to
	// this one (Result.Carry); nil on the first run and when it carried
	// nothing. Carried decodes it.
	Carry json.RawMessage `json:"carry,omitempty"`
}

// Instance says which Instance a run is for.
type Instance struct {
	ID             string `json:"id"`
	InstallationID string `json:"installation_id"`
	Generation     int64  `json:"generation"`
}

// Storage is the storage snapshot: every item of every declared namespace.
type Storage struct {
	Revision   int64             `json:"storage_revision"`
	Namespaces map[string][]Item `json:"namespaces"`
}

// Item is one stored item.
type Item struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
	// checked is Value as the request held it, checked as JSON already.
	checked json.RawMessage
}

// Decode decodes the item's value into v.
func (it Item) Decode(v any) error {
	same := len(it.checked) > 0 && len(it.checked) == len(it.Value) && &it.checked[0] == &it.Value[0]
	if err := unmarshalChecked(it.Value, v, same); err != nil {
		return fmt.Errorf("item %q: %w", it.Key, err)
	}
	return nil
}

// Args decodes the arguments into v (a pointer to a struct or a map).
func (r *Request) Args(v any) error {
	if len(r.Arguments) == 0 {
		return nil
	}
	if err := unmarshal(r.Arguments, v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// Items returns the items of a namespace in the snapshot, in key order;
// none when the namespace is empty or the plugin has no storage.
func (r *Request) Items(namespace string) []Item {
	if r.PluginStorage == nil {
		return nil
	}
	return r.PluginStorage.Namespaces[namespace]
}

// Item returns one item of a namespace in the snapshot.
func (r *Request) Item(namespace, key string) (Item, bool) {
	for _, it := range r.Items(namespace) {
		if it.Key == key {
			return it, true
		}
	}
	return Item{}, false
}

// Evidence cites an item of the snapshot, for the result's evidence.
func (r *Request) Evidence(namespace string, it Item) Evidence {
	return Evidence{Type: "plugin_storage", InstanceID: r.Instance.ID, Namespace: namespace, Key: it.Key, Revision: it.Revision}
}

// Carried decodes what the previous round carried (Result.Carry) into v
// and reports whether there was anything: false, and v unchanged, on the
// first run or after a round that carried nothing.
func (r *Request) Carried(v any) (bool, error) {
	if len(r.Carry) == 0 {
		return false, nil
	}
	if err := unmarshal(r.Carry, v); err != nil {
		return true, fmt.Errorf("carry: %w", err)
	}
	return true, nil
}

// Response is the answer to one fetch of the last round: a status, headers
// and a body, or Error when the request could not be made (a refused
// connection, a TLS error, a timeout) or its body could not be read (a body
// too large, a connection cut): then Status and Headers are those that came.
type Response struct {
	Status       int               `json:"status,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	BodyEncoding string            `json:"body_encoding,omitempty"`
	Error        string            `json:"error,omitempty"`
}

// ErrFetch is wrapped by the error of Answer for a fetch that failed.
var ErrFetch = errors.New("fetch failed")

// Answer returns the answer to the last round's fetch of an id: an error
// wrapping ErrFetch when the request could not be made, or when there is no
// answer of that id.
func (r *Request) Answer(id string) (Response, error) {
	resp, ok := r.Fetched[id]
	switch {
	case !ok:
		return Response{}, fmt.Errorf("%w: no answer to fetch %q in round %d", ErrFetch, id, r.Round)
	case resp.Error != "":
		return resp, fmt.Errorf("%w: %s: %s", ErrFetch, id, resp.Error)
	}
	return resp, nil
}

// JSON decodes the body of a response into v.
func (resp Response) JSON(v any) error {
	if resp.BodyEncoding != "" {
		return fmt.Errorf("the body is %s-encoded, not JSON text", resp.BodyEncoding)
	}
	return unmarshal([]byte(resp.Body), v)
}
