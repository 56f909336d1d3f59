package main

import (
	"encoding/json"
	"errors"
	"pluginhost/gqlhttp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsClient is a raw websocket client of /graphql.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
}

func (h *limitsHost) dial(t testing.TB, proto string) *wsClient {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{proto}, HandshakeTimeout: 10 * time.Second}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(h.URL, "http")+"/graphql", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &wsClient{t: t, conn: conn}
}

func (c *wsClient) send(raw string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(raw)); err != nil {
		c.t.Fatal(err)
	}
}

// init sends connection_init with the token and waits for the ack.
func (c *wsClient) init(token string) {
	c.t.Helper()
	c.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + token + `"}}`)
	if m := c.next(); m["type"] != "connection_ack" {
		c.t.Fatalf("init: got %v", m)
	}
}

// next reads the next message; a close is returned as {"close": code}.
func (c *wsClient) next() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a safety net, not a measure
	_, b, err := c.conn.ReadMessage()
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return map[string]any{"close": ce.Code, "reason": ce.Text}
	}
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// closeCode reads until the server closes, and returns the close code.
func (c *wsClient) closeCode() (int, string) {
	c.t.Helper()
	for {
		m := c.next()
		if code, ok := m["close"].(int); ok {
			reason, _ := m["reason"].(string)
			return code, reason
		}
		c.t.Logf("before the close: %v", m)
	}
}

// TestWebsocketCaps: a user holds at most MaxWebsocketsPerUser initialised
// websockets (one past: close 1008), the server MaxWebsockets (one past:
// close 1013); a closed websocket frees its place.
func TestWebsocketCaps(t *testing.T) {
	h := newLimitsHost(t, gqlhttp.Limits{MaxWebsocketsPerUser: 2, MaxWebsockets: 4})
	bob := h.user(t, "bob")
	first := h.dial(t, "graphql-transport-ws")
	first.init(h.token)
	h.dial(t, "graphql-transport-ws").init(h.token) // alice at her limit
	third := h.dial(t, "graphql-transport-ws")
	third.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + h.token + `"}}`)
	if code, reason := third.closeCode(); code != gqlhttp.CloseUserSocketLimit {
		t.Fatalf("alice one past her limit: close %d %q, want %d", code, reason, gqlhttp.CloseUserSocketLimit)
	}
	h.dial(t, "graphql-ws").init(bob) // bob is not held back by alice
	first.conn.Close()
	for h.env.Server.GraphQL.Sockets.Connections() > 2 {
		time.Sleep(time.Millisecond) // until the server has seen the close
	}
	h.dial(t, "graphql-transport-ws").init(h.token) // alice's place is free again
	h.dial(t, "graphql-transport-ws")               // the server at its limit: 4 open
	over := h.dial(t, "graphql-transport-ws")
	if code, reason := over.closeCode(); code != gqlhttp.CloseServerSocketLimit {
		t.Fatalf("one past the server's limit: close %d %q, want %d", code, reason, gqlhttp.CloseServerSocketLimit)
	}
}

// TestWebsocketProtocolErrors: the graphql-transport-ws rules close the
// connection with the protocol's codes, on both subprotocols.
func TestWebsocketProtocolErrors(t *testing.T) {
	h := newLimitsHost(t, gqlhttp.Limits{})
	sub := func(id string) string {
		return `{"id":"` + id + `","type":"subscribe","payload":{"query":"subscription($i:ID!){storageChanged(instanceId:$i){storageRevision}}","variables":{"i":"` + h.instance + `"}}}`
	}
	start := func(id string) string { return strings.Replace(sub(id), `"subscribe"`, `"start"`, 1) }
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		op := sub
		if proto == "graphql-ws" {
			op = start
		}
		for _, tc := range []struct {
			name   string
			init   bool
			send   []string
			code   int
			reason string
		}{
			{"a duplicate subscription id", true, []string{op("1"), op("1")}, 4409, "Subscriber for 1 already exists"},
			{"a second connection_init", true, []string{`{"type":"connection_init","payload":{}}`}, 4429, "Too many initialisation requests"},
			{"a message that is not JSON", true, []string{`{"type":`}, 4400, "Invalid message received"},
			{"a message without a type", true, []string{`{"id":"1"}`}, 4400, "Invalid message received"},
			{"a message of an unknown type", true, []string{`{"type":"subscribe-all"}`}, 4400, "Invalid message received: unknown type"},
			{"an invalid first message", false, []string{`[1,2]`}, 4400, "Invalid message received"},
			{"a subscription before connection_init", false, []string{op("1")}, 4401, "Unauthorized"},
		} {
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				c := h.dial(t, proto)
				if tc.init {
					c.init(h.token)
				}
				for _, m := range tc.send {
					c.send(m)
				}
				code, reason := c.closeCode()
				if code != tc.code || reason != tc.reason {
					t.Fatalf("close %d %q, want %d %q", code, reason, tc.code, tc.reason)
				}
			})
		}
	}
}

// TestWebsocketOperationsShareInFlightBounds: a query or mutation sent over
// a websocket takes a place among its user's operations in flight, as one
// sent over HTTP does: with the user's places held by HTTP requests, an
// operation over the socket waits, then gets TOO_MANY_REQUESTS; another
// user's goes through; and once a place frees up, the socket's goes through.
func TestWebsocketOperationsShareInFlightBounds(t *testing.T) {
	h := newLimitsHost(t, gqlhttp.Limits{MaxInFlightPerUser: 2, MaxInFlight: 8, InFlightWait: 100 * time.Millisecond,
		BodyReadTimeout: time.Minute, MaxBodyBytes: 8192})
	bob := h.user(t, "bob")
	query := func(c *wsClient, id string) map[string]any {
		c.send(`{"type":"subscribe","id":"` + id + `","payload":{"query":"{viewer{name}}"}}`)
		return c.next()
	}
	alice := h.dial(t, "graphql-transport-ws")
	alice.init(h.token)
	if m := query(alice, "1"); m["type"] != "next" {
		t.Fatalf("alice's query over the socket: %v", m)
	}
	alice.next() // complete
	held1, _ := h.stall(t, h.token, 100)
	held2, _ := h.stall(t, h.token, 100)
	m := query(alice, "2")
	b, _ := json.Marshal(m)
	if m["type"] != "next" || !strings.Contains(string(b), "TOO_MANY_REQUESTS") {
		t.Fatalf("alice's query over the socket with her places held: %s", b)
	}
	other := h.dial(t, "graphql-transport-ws")
	other.init(bob)
	if m := query(other, "1"); m["type"] != "next" || m["payload"].(map[string]any)["errors"] != nil {
		t.Fatalf("bob's query while alice is at her bound: %v", m)
	}
	held1.Close()
	held2.Close()
	for alice.next()["type"] != "complete" {
	}
	for { // the server sees the closed requests go
		if requests, _ := h.env.Server.GraphQL.Limiter().InFlight(); requests == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if m := query(alice, "3"); m["type"] != "next" || m["payload"].(map[string]any)["errors"] != nil {
		t.Fatalf("alice's query once her places are free: %v", m)
	}
}
