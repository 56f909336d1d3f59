package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
)

// notifyingNotes is the example notes plugin with notes.request, a skill
// that returns what its arguments say (notifications included).
func notifyingNotes(t *testing.T) (map[string]any, map[string]string) {
	t.Helper()
	m, raw := plugintest.Package(t, "../examples/notes")
	files := map[string]string{}
	for name, b := range raw {
		files[name] = string(b)
	}
	files["capabilities/request.wasm"] = string(wasmtest.Module(t, "../sandbox/testdata/modules", "request"))
	m["capabilities"] = append(m["capabilities"].([]any),
		map[string]any{"id": "notes.request", "kind": "skill", "description": "answers its arguments", "module": "capabilities/request.wasm"})
	return m, files
}

const (
	notificationAddedQ = `subscription{notificationAdded{id instanceId pluginId capability title severity read actions{id actionId label type extension capability}}}`
	notificationsQ     = `query($u:Boolean){notifications(unreadOnly:$u,first:10){unread pageInfo{hasNextPage} nodes{id title read actions{id actionId type}}}}`
	runActionQ         = `mutation($n:ID!,$a:String!){runNotificationAction(notificationId:$n,actionId:$a){type instanceId extension parameters result{summary data}}}`
)

type notificationsPage struct {
	Notifications struct {
		Unread   int
		PageInfo struct{ HasNextPage bool }
		Nodes    []struct {
			ID, Title string
			Read      bool
		}
	}
}

// Two replicas on MariaDB and Redis: a notification a run sends on replica
// A reaches the user's socket on replica B; its actions run there (host
// actions reach the storage subscribers, open and invoke do what they say);
// another user sees nothing and is refused; uninstall deletes them.
func TestNotificationsAcrossReplicas(t *testing.T) {
	redisURL := testenv.Redis(t)
	dsn := testenv.FreshMySQL(t)
	pub := NewPublisher(t)
	a := Start(t, dsn, pub.Dir, "--redis", redisURL)
	b := Start(t, dsn, pub.Dir, "--redis", redisURL)
	h := &host{Server: a, pub: pub}
	alice := &Client{URL: a.URL, Token: Token(t, dsn, "alice", false)}
	bob := &Client{URL: a.URL, Token: Token(t, dsn, "bob", false)}
	m, files := notifyingNotes(t)
	installation, ids := installApp(t, h, alice, m, files, 1)
	inst := ids[0]
	// Compiled on both replicas before the test begins.
	warmCapability(t, alice, inst, "notes.request")
	warmCapability(t, &Client{URL: b.URL, Token: alice.Token}, inst, "notes.request")

	ws := DialWS(t, b.URL, transportWS)
	ws.Init(alice.Token)
	ws.Start("n", notificationAddedQ, nil)
	ws.Subscribe("s", inst)
	if c := ws.Change("s"); c.Operation != "snapshot" {
		t.Fatalf("storage snapshot %+v", c)
	}
	bobWS := DialWS(t, b.URL, transportWS)
	bobWS.Init(bob.Token)
	bobWS.Start("n", notificationAddedQ, nil)

	// The note is not marked done: the example's notes.archive, which runs
	// every 30 s, would move it to the archive, sometimes before the summary
	// below counts it.
	notice := map[string]any{"id": "reminder", "title": "Call Bob", "body": "before noon", "severity": "warning", "actions": []any{
		map[string]any{"id": "done", "label": "Done", "action": map[string]any{"type": "host_actions", "host_actions": []any{
			map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "called-bob", "value": map[string]any{"text": "called Bob"}}}}},
		map[string]any{"id": "open", "label": "Open", "action": map[string]any{"type": "open", "extension": "main", "parameters": map[string]any{"key": "called-bob"}}},
		map[string]any{"id": "sum", "label": "Summary", "action": map[string]any{"type": "invoke", "capability": "notes.summary", "arguments": map[string]any{"limit": 1}}},
	}}
	// Subscriptions are set up on B before the run on A: wait for the
	// acknowledged storage snapshot above, then send.
	alice.Must(t, invokeQ, map[string]any{"i": inst, "c": "notes.request", "a": map[string]any{"notifications": []any{notice}}}, nil)
	msg := ws.Of("n")
	var added struct {
		Data struct {
			NotificationAdded struct {
				ID, InstanceID, PluginID, Capability, Title, Severity string
				Read                                                  bool
				Actions                                               []struct{ ID, ActionID, Label, Type string }
			}
		}
	}
	json.Unmarshal(msg.Payload, &added)
	n := added.Data.NotificationAdded
	if n.Title != "Call Bob" || n.InstanceID != inst || n.PluginID != "com.example.notes" || n.Capability != "notes.request" || n.Severity != "warning" || n.Read || len(n.Actions) != 3 ||
		n.Actions[0].ActionID != "done" || n.Actions[0].ID == n.Actions[1].ID || n.Actions[0].ID == "done" {
		t.Fatalf("notificationAdded on replica B: %s", msg.Payload)
	}

	onB := &Client{URL: b.URL, Token: alice.Token}
	var page notificationsPage
	onB.Must(t, notificationsQ, nil, &page)
	if page.Notifications.Unread != 1 || len(page.Notifications.Nodes) != 1 || page.Notifications.Nodes[0].ID != n.ID {
		t.Fatalf("notifications on B: %+v", page)
	}

	// Bob sees nothing and is refused as for storage; his socket got nothing.
	var bobs notificationsPage
	bob.Must(t, notificationsQ, nil, &bobs)
	if len(bobs.Notifications.Nodes) != 0 || bobs.Notifications.Unread != 0 {
		t.Fatalf("bob sees %+v", bobs)
	}
	bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", runActionQ, map[string]any{"n": n.ID, "a": "done"})
	bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", `mutation($n:ID!){markNotificationsRead(ids:[$n])}`, map[string]any{"n": n.ID})

	// Its host actions apply on B and reach the storage subscriber.
	var ran struct {
		RunNotificationAction struct {
			Type, InstanceID, Extension string
			Parameters                  json.RawMessage
			Result                      *struct{ Summary string }
		}
	}
	onB.Must(t, runActionQ, map[string]any{"n": n.ID, "a": "done"}, &ran)
	if r := ran.RunNotificationAction; r.Type != "host_actions" || r.Result == nil || !strings.Contains(r.Result.Summary, "Applied 1 host action") {
		t.Fatalf("host actions: %+v", r)
	}
	if c := ws.Change("s"); c.Operation != "create" || c.Key == nil || *c.Key != "called-bob" || c.StorageRevision != 1 {
		t.Fatalf("storage change after the action: %s", describe(c))
	}
	onB.Must(t, runActionQ, map[string]any{"n": n.ID, "a": "open"}, &ran)
	if r := ran.RunNotificationAction; r.Type != "open" || r.Extension != "main" || string(r.Parameters) != `{"key":"called-bob"}` || r.InstanceID != inst {
		t.Fatalf("open: %+v", r)
	}
	onB.Must(t, runActionQ, map[string]any{"n": n.ID, "a": "sum"}, &ran)
	if r := ran.RunNotificationAction; r.Type != "invoke" || r.Result == nil || r.Result.Summary != "1 notes, 2 words" {
		t.Fatalf("invoke: %+v (result %+v)", r, r.Result)
	}
	onB.Must(t, notificationsQ, map[string]any{"u": true}, &page)
	if page.Notifications.Unread != 0 || len(page.Notifications.Nodes) != 0 {
		t.Fatalf("taking an action did not read it: %+v", page)
	}
	select {
	case m := <-bobWS.queue("n"):
		t.Fatalf("bob's socket got %s", m.Payload)
	default:
	}

	// Muted, the Instance sends nothing.
	alice.Must(t, `mutation($i:ID!){setInstanceGrant(instanceId:$i,permission:"notifications",granted:false){notificationsMuted}}`, map[string]any{"i": inst}, nil)
	alice.Must(t, invokeQ, map[string]any{"i": inst, "c": "notes.request", "a": map[string]any{"notifications": []any{map[string]any{"id": "muted", "title": "Muted", "severity": "info"}}}}, nil)
	onB.Must(t, notificationsQ, nil, &page)
	if len(page.Notifications.Nodes) != 1 {
		t.Fatalf("a muted Instance notified: %+v", page)
	}

	// Uninstall deletes them.
	alice.Must(t, `mutation($i:ID!){uninstallPlugin(installationId:$i)}`, map[string]any{"i": installation}, nil)
	onB.Must(t, notificationsQ, nil, &page)
	if len(page.Notifications.Nodes) != 0 || page.Notifications.Unread != 0 {
		t.Fatalf("after uninstall: %+v", page)
	}
	for _, s := range []*Server{a, b} {
		if strings.Contains(s.Log(), "called Bob") {
			t.Fatal("a stored value reached the log")
		}
	}
}

// The web host's bell in Chromium: the unread count follows new
// notifications live; the list's host actions run and the open screen shows
// their change; open leads to the extension's page.
func TestAppNotificationBell(t *testing.T) {
	testenv.Chromium(t)
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	m, files := notifyingNotes(t)
	_, ids := installApp(t, h, alice, m, files, 1)
	inst := ids[0]
	// Compiled and warm before the page opens.
	warmCapability(t, alice, inst, "notes.request")

	p := openApp(t, alice, "/app/"+inst+"/main")
	p.WaitFor(liveReady)
	waitUntil(p, `document.querySelector('.ph-bell') && document.querySelector('[data-ph-unread]').getAttribute('data-ph-unread') === '0'`, 15*time.Second)

	notice := map[string]any{"id": "reminder", "title": "Call Bob", "body": "before noon", "severity": "warning", "actions": []any{
		map[string]any{"id": "done", "label": "Mark called", "action": map[string]any{"type": "host_actions", "host_actions": []any{
			map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "called-bob", "value": map[string]any{"text": "called Bob"}}}}},
		map[string]any{"id": "open", "label": "Open", "action": map[string]any{"type": "open", "extension": "main", "parameters": map[string]any{"from": "bell"}}},
	}}
	alice.Must(t, invokeQ, map[string]any{"i": inst, "c": "notes.request", "a": map[string]any{"notifications": []any{notice}}}, nil)
	waitUntil(p, `document.querySelector('[data-ph-unread]').getAttribute('data-ph-unread') === '1'`, 15*time.Second)
	if label := p.EvalString(`document.querySelector('.ph-bell').getAttribute('aria-label')`); label != "Notifications, 1 unread" {
		t.Fatalf("bell label %q", label)
	}
	p.Click(`.ph-bell`)
	waitText(p, "Call Bob")
	waitText(p, "before noon")
	// It names the plugin and Instance that sent it, not their ids.
	if meta := p.EvalString(`document.querySelector(".ph-bell-meta").textContent`); !strings.HasPrefix(meta, m["name"].(string)+" · Instance 1 · ") || strings.Contains(meta, m["id"].(string)) {
		t.Fatalf("the notification is signed %q", meta)
	}
	var page notificationsPage
	alice.Must(t, notificationsQ, nil, &page)
	id := page.Notifications.Nodes[0].ID
	screenshot(t, p, "notification-bell")

	// Its host actions change storage, and the open screen shows it.
	p.Click(`[data-ph-notification-action="` + id + `/done"]`)
	waitText(p, "called-bob: called Bob")
	waitUntil(p, `document.querySelector('[data-ph-unread]').getAttribute('data-ph-unread') === '0'`, 15*time.Second)
	waitText(p, "Applied 1 host action")

	// A second notification arrives while the list is open.
	alice.Must(t, invokeQ, map[string]any{"i": inst, "c": "notes.request", "a": map[string]any{"notifications": []any{
		map[string]any{"id": "second", "title": "Second one", "severity": "info"}}}}, nil)
	waitText(p, "Second one")
	waitUntil(p, `document.querySelector('[data-ph-unread]').getAttribute('data-ph-unread') === '1'`, 15*time.Second)
	p.Click(`[data-ph-mark-all]`)
	waitUntil(p, `document.querySelector('[data-ph-unread]').getAttribute('data-ph-unread') === '0'`, 15*time.Second)

	// Open leads to the extension's page with the parameters.
	p.Click(`[data-ph-notification-action="` + id + `/open"]`)
	waitUntil(p, `location.pathname === "/app/`+inst+`/main" && location.search === "?from=bell"`, 15*time.Second)
	p.WaitFor(liveReady)
	waitText(p, "called-bob: called Bob")
}
