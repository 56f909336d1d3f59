package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Subprotocols.
const (
	transportWS = "graphql-transport-ws"
	legacyWS    = "graphql-ws"
)

// WS is a GraphQL websocket client for tests.
type WS struct {
	t     testing.TB
	conn  *websocket.Conn
	proto string
	msgs  chan wsMsg // messages without an id
	done  chan struct{}
	err   error

	mu   sync.Mutex
	subs map[string]chan wsMsg // messages of each subscription
}

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Change is a storageChanged event.
type Change struct {
	InstanceID      string  `json:"instanceId"`
	StorageRevision int     `json:"storageRevision"`
	Namespace       string  `json:"namespace"`
	Key             *string `json:"key"`
	Operation       string  `json:"operation"`
	ItemRevision    *int    `json:"itemRevision"`
	Generation      int     `json:"generation"`
}

const changedQuery = `subscription($i:ID!,$n:[String!]){storageChanged(instanceId:$i,namespaces:$n){instanceId storageRevision namespace key operation itemRevision generation}}`

// DialWS connects with a subprotocol; token "" sends no connection_init.
func DialWS(t testing.TB, url, proto string) *WS {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{proto}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.Dial(strings.Replace(url, "http://", "ws://", 1)+"/graphql", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if conn.Subprotocol() != proto {
		t.Fatalf("negotiated %q, want %q", conn.Subprotocol(), proto)
	}
	w := &WS{t: t, conn: conn, proto: proto, msgs: make(chan wsMsg, 1024), done: make(chan struct{}), subs: map[string]chan wsMsg{}}
	go func() {
		defer close(w.done)
		for {
			var m wsMsg
			if err := conn.ReadJSON(&m); err != nil {
				w.err = err
				return
			}
			if m.Type == "ka" || m.Type == "ping" {
				if m.Type == "ping" {
					conn.WriteJSON(wsMsg{Type: "pong"})
				}
				continue
			}
			if m.ID != "" {
				w.queue(m.ID) <- m
				continue
			}
			w.msgs <- m
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return w
}

func (w *WS) queue(id string) chan wsMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.subs[id]
	if q == nil {
		q = make(chan wsMsg, 4096)
		w.subs[id] = q
	}
	return q
}

// Init sends connection_init with a token and waits for the ack.
func (w *WS) Init(token string) {
	w.t.Helper()
	w.send(wsMsg{Type: "connection_init", Payload: mustJSON(map[string]any{"Authorization": "Bearer " + token})})
	if m := w.Next(); m.Type != "connection_ack" {
		w.t.Fatalf("after connection_init: %s %s", m.Type, m.Payload)
	}
}

func (w *WS) send(m wsMsg) {
	if err := w.conn.WriteJSON(m); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// Subscribe starts storageChanged on an Instance.
func (w *WS) Subscribe(id, instanceID string, namespaces ...string) {
	vars := map[string]any{"i": instanceID}
	if len(namespaces) > 0 {
		vars["n"] = namespaces
	}
	typ := "subscribe"
	if w.proto == legacyWS {
		typ = "start"
	}
	w.send(wsMsg{ID: id, Type: typ, Payload: mustJSON(map[string]any{"query": changedQuery, "variables": vars})})
}

// Start starts any subscription.
func (w *WS) Start(id, query string, vars map[string]any) {
	typ := "subscribe"
	if w.proto == legacyWS {
		typ = "start"
	}
	w.send(wsMsg{ID: id, Type: typ, Payload: mustJSON(map[string]any{"query": query, "variables": vars})})
}

// Stop ends a subscription.
func (w *WS) Stop(id string) {
	typ := "complete"
	if w.proto == legacyWS {
		typ = "stop"
	}
	w.send(wsMsg{ID: id, Type: typ})
}

// Next returns the next message without an id, failing after 15 s.
func (w *WS) Next() wsMsg {
	w.t.Helper()
	return w.next(w.msgs)
}

// Of returns the next message of a subscription, failing after 15 s.
func (w *WS) Of(id string) wsMsg {
	w.t.Helper()
	return w.next(w.queue(id))
}

// Failure returns the payload of a subscription's error: an error message, or
// a result with errors; it fails the test on anything else.
func (w *WS) Failure(id string) string {
	w.t.Helper()
	m := w.Of(id)
	if m.Type == "error" || strings.Contains(string(m.Payload), `"errors"`) {
		return string(m.Payload)
	}
	w.t.Fatalf("want an error of %s, got %s %s", id, m.Type, m.Payload)
	return ""
}

func (w *WS) next(q chan wsMsg) wsMsg {
	w.t.Helper()
	// Messages that arrived before the connection closed come first.
	select {
	case m := <-q:
		return m
	default:
	}
	select {
	case m := <-q:
		return m
	case <-w.done:
		select {
		case m := <-q:
			return m
		default:
		}
		w.t.Fatalf("connection closed: %v", w.err)
	case <-time.After(15 * time.Second):
		w.t.Fatal("no message within 15 s")
	}
	return wsMsg{}
}

// Change returns the next storageChanged event of a subscription.
func (w *WS) Change(id string) Change {
	w.t.Helper()
	m := w.Of(id)
	if m.Type != "next" && m.Type != "data" {
		w.t.Fatalf("want an event of %s, got %s %s %s", id, m.ID, m.Type, m.Payload)
	}
	var p struct {
		Data   struct{ StorageChanged Change } `json:"data"`
		Errors []GQLError                      `json:"errors"`
	}
	json.Unmarshal(m.Payload, &p)
	if len(p.Errors) > 0 {
		w.t.Fatalf("event with errors: %s", m.Payload)
	}
	return p.Data.StorageChanged
}

// Closed waits for the server to close the connection and returns why.
func (w *WS) Closed(within time.Duration) error {
	select {
	case <-w.done:
		return w.err
	case <-time.After(within):
		w.t.Fatalf("the connection was not closed within %v", within)
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func describe(c Change) string {
	s := fmt.Sprintf("%d %s %s", c.StorageRevision, c.Operation, c.Namespace)
	if c.Key != nil {
		s += " " + *c.Key
	}
	return s
}
