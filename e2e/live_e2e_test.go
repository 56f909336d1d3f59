package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/testenv"

	"github.com/gorilla/websocket"
)

// TestSubscriptions: both subprotocols; the snapshot first; then every path's
// changes in revision order; namespace filters; ends with an error on disable.
func TestSubscriptions(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.user(t, "alice", false), h.user(t, "bob", false)
		m := manifest("com.test.live",
			map[string]any{"id": "notes", "max_bytes": 8192, "ai_access": "read_write"},
			map[string]any{"id": "other", "max_bytes": 8192})
		m["permissions"] = []any{"storage", "ai_storage"}
		m["capabilities"] = []any{map[string]any{"id": "notes.sync", "kind": "background"}}
		instl, ids := h.install(t, alice, m, 2)
		id := ids[0]
		alice.Must(t, createQ, map[string]any{"i": id, "n": "notes", "k": "before", "v": 1}, nil)

		for _, proto := range []string{transportWS, legacyWS} {
			t.Run(proto, func(t *testing.T) {
				var cur struct{ Instance struct{ StorageRevision int } }
				alice.Must(t, `query($i:ID!){instance(id:$i){storageRevision}}`, map[string]any{"i": id}, &cur)
				ws := DialWS(t, h.URL, proto)
				ws.Init(alice.Token)
				ws.Subscribe("all", id)
				ws.Subscribe("other-only", id, "other")
				snap := map[string]Change{"all": ws.Change("all"), "other-only": ws.Change("other-only")}
				for _, sid := range []string{"all", "other-only"} {
					if c := snap[sid]; c.Operation != "snapshot" || c.StorageRevision != cur.Instance.StorageRevision || c.InstanceID != id {
						t.Fatalf("%s first message = %+v, want snapshot at %d", sid, c, cur.Instance.StorageRevision)
					}
				}
				base := cur.Instance.StorageRevision
				// Every path: app create/update/delete, AI, host actions, REST reset.
				k := "k-" + proto
				alice.Must(t, createQ, map[string]any{"i": id, "n": "notes", "k": k, "v": 1}, nil)
				alice.Must(t, updateQ, map[string]any{"i": id, "n": "notes", "k": k, "v": 2, "r": 1}, nil)
				alice.Must(t, createQ, map[string]any{"i": id, "n": "other", "k": k, "v": 1}, nil)
				alice.Must(t, deleteQ, map[string]any{"i": id, "n": "notes", "k": k, "r": 2}, nil)
				alice.Must(t, `mutation($i:ID!){setAiStorageConsent(installationId:$i,granted:true){id}}`, map[string]any{"i": instl}, nil)
				var tools struct {
					AiTools []struct{ Handle, Capability, InstanceID string }
				}
				alice.Must(t, `{aiTools{handle capability instanceId}}`, nil, &tools)
				for _, tl := range tools.AiTools {
					if tl.InstanceID == id && tl.Capability == "host.storage.create" {
						alice.Must(t, `mutation($h:String!,$a:JSON){aiInvoke(handle:$h,arguments:$a){summary}}`, map[string]any{"h": tl.Handle, "a": map[string]any{"namespace": "notes", "key": "ai-" + proto, "value": true}}, nil)
					}
				}
				alice.Must(t, `mutation($i:ID!,$r:JSON!){applyCapabilityResult(instanceId:$i,capability:"notes.sync",generation:1,result:$r){summary}}`,
					map[string]any{"i": id, "r": map[string]any{"data": map[string]any{"host_actions": []any{map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "host-" + proto, "value": 1}}}}}, nil)
				if status, _ := alice.REST(t, "DELETE", "/v1/plugin-instances/"+id+"/storage", nil); status != 200 {
					t.Fatalf("reset: %d", status)
				}
				want := []string{
					fmt.Sprintf("%d create notes %s", base+1, k), fmt.Sprintf("%d update notes %s", base+2, k),
					fmt.Sprintf("%d create other %s", base+3, k), fmt.Sprintf("%d delete notes %s", base+4, k),
					fmt.Sprintf("%d create notes ai-%s", base+5, proto), fmt.Sprintf("%d create notes host-%s", base+6, proto),
					fmt.Sprintf("%d reset ", base+7),
				}
				for _, w := range want {
					if got := describe(ws.Change("all")); got != w {
						t.Fatalf("all: got %q, want %q", got, w)
					}
				}
				for _, w := range []string{fmt.Sprintf("%d create other %s", base+3, k), fmt.Sprintf("%d reset ", base+7)} {
					if got := describe(ws.Change("other-only")); got != w {
						t.Fatalf("other-only: got %q, want %q", got, w)
					}
				}
				// After a stop, nothing more arrives for that subscription.
				ws.Stop("other-only")
				time.Sleep(100 * time.Millisecond)
				alice.Must(t, createQ, map[string]any{"i": id, "n": "other", "k": "after-stop-" + proto, "v": 1}, nil)
				if got := describe(ws.Change("all")); !strings.Contains(got, "after-stop") {
					t.Fatalf("all after stop: %s", got)
				}
				select {
				case m := <-ws.queue("other-only"):
					if m.Type != "complete" {
						t.Fatalf("a stopped subscription received %s %s", m.Type, m.Payload)
					}
				case <-time.After(300 * time.Millisecond):
				}
			})
		}

		t.Run("authorisation", func(t *testing.T) {
			// Another user's Instance, an unknown one, an undeclared namespace.
			ws := DialWS(t, h.URL, transportWS)
			ws.Init(bob.Token)
			for i, tc := range []struct {
				instance string
				ns       []string
			}{{id, nil}, {"inst_nope", nil}} {
				sid := fmt.Sprint("x", i)
				ws.Subscribe(sid, tc.instance, tc.ns...)
				if p := ws.Failure(sid); !strings.Contains(p, "PLUGIN_STORAGE_PERMISSION_DENIED") {
					t.Fatalf("bob subscribing to %s: %s", tc.instance, p)
				}
			}
			wa := DialWS(t, h.URL, transportWS)
			wa.Init(alice.Token)
			wa.Subscribe("ns", id, "nope")
			if p := wa.Failure("ns"); !strings.Contains(p, "not declared") {
				t.Fatalf("undeclared namespace: %s", p)
			}
			// Without a valid token there is no connection; the close reason
			// says why, and for a malformed payload the form expected.
			for _, tc := range []struct {
				payload map[string]any
				why     string
			}{
				{map[string]any{"Authorization": "Bearer "}, `connection_init needs the payload {"Authorization": "Bearer <token>"}`},
				{map[string]any{"token": alice.Token}, `connection_init needs the payload {"Authorization": "Bearer <token>"}`},
				{map[string]any{"Authorization": alice.Token}, `connection_init needs the payload {"Authorization": "Bearer <token>"}`},
				{map[string]any{"Authorization": "Bearer ph_bogus"}, "the bearer token is not valid"},
			} {
				w := DialWS(t, h.URL, transportWS)
				w.send(wsMsg{Type: "connection_init", Payload: mustJSON(tc.payload)})
				err := w.Closed(10 * time.Second)
				var ce *websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != 4403 || !strings.Contains(ce.Text, tc.why) {
					t.Fatalf("payload %v: %v, want 4403 saying %s", tc.payload, err, tc.why)
				}
				if strings.Contains(ce.Text, alice.Token) {
					t.Fatal("the close reason quotes the token")
				}
			}
		})

		t.Run("ends with an error when the Instance is disabled or uninstalled", func(t *testing.T) {
			ws := DialWS(t, h.URL, transportWS)
			ws.Init(alice.Token)
			ws.Subscribe("a", ids[0])
			ws.Subscribe("b", ids[1])
			ws.Change("a")
			ws.Change("b")
			alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){id}}`, map[string]any{"i": ids[1]}, nil)
			if p := ws.Failure("b"); !strings.Contains(p, "PLUGIN_STORAGE_PERMISSION_DENIED") || !strings.Contains(p, "disabled") {
				t.Fatalf("after disable: %s", p)
			}
			// The error ends the operation: nothing else arrives for it.
			select {
			case m := <-ws.queue("b"):
				if m.Type != "complete" {
					t.Fatalf("after the error: %s %s", m.Type, m.Payload)
				}
			case <-time.After(300 * time.Millisecond):
			}
			alice.Must(t, uninstallMutation, map[string]any{"i": instl}, nil)
			if p := ws.Failure("a"); !strings.Contains(p, "uninstalled") {
				t.Fatalf("after uninstall: %s", p)
			}
		})
	})
}

// TestSubscriptionLimitsAndTimeouts: per-connection and per-user limits, and
// the connection_init timeout.
func TestSubscriptionLimitsAndTimeouts(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	pub := NewPublisher(t)
	srv := Start(t, b.DSN, pub.Dir, "--max-subscriptions-per-connection", "3", "--max-subscriptions-per-user", "5", "--ws-init-timeout", "1s")
	h := &host{Server: srv, pub: pub}
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.limits", ns("n", 100)), 1)

	w1 := DialWS(t, h.URL, transportWS)
	w1.Init(alice.Token)
	for i := range 3 {
		w1.Subscribe(fmt.Sprint(i), ids[0])
		w1.Change(fmt.Sprint(i))
	}
	w1.Subscribe("3", ids[0])
	if p := w1.Failure("3"); !strings.Contains(p, "at most 3 are allowed per connection") {
		t.Fatalf("4th on one connection: %s", p)
	}
	w2 := DialWS(t, h.URL, transportWS)
	w2.Init(alice.Token)
	for i := range 2 {
		w2.Subscribe(fmt.Sprint(i), ids[0])
		w2.Change(fmt.Sprint(i))
	}
	w2.Subscribe("2", ids[0])
	if p := w2.Failure("2"); !strings.Contains(p, "at most 5 are allowed per user") {
		t.Fatalf("6th of one user: %s", p)
	}
	// Ending a subscription frees its place.
	w1.Stop("0")
	time.Sleep(200 * time.Millisecond)
	w2.Subscribe("again", ids[0])
	if c := w2.Change("again"); c.Operation != "snapshot" {
		t.Fatalf("after a stop: %+v", c)
	}
	// A client that never sends connection_init is closed.
	idle := DialWS(t, h.URL, transportWS)
	if err := idle.Closed(5 * time.Second); err == nil {
		t.Fatal("no error for an idle connection")
	}
}
