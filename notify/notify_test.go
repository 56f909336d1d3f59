package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"pluginhost/access"
	"pluginhost/capability"
	"pluginhost/internal/fixture"
	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/notify"
	"pluginhost/sandbox"
)

// notes is the example notes plugin with two more capabilities for the
// tests: notes.request (a skill that returns what its arguments say,
// notifications included) and notes.data (a data capability, which may not
// notify). edit changes the manifest.
func notes(t testing.TB, version string, edit func(m map[string]any)) (map[string]any, map[string][]byte) {
	t.Helper()
	m, files := plugintest.Package(t, "../examples/notes")
	files["capabilities/request.wasm"] = wasmtest.Module(t, "../sandbox/testdata/modules", "request")
	m["version"] = version
	m["capabilities"] = append(m["capabilities"].([]any),
		map[string]any{"id": "notes.request", "kind": "skill", "description": "answers its arguments", "module": "capabilities/request.wasm"},
		map[string]any{"id": "notes.data", "kind": "data", "description": "answers its arguments", "module": "capabilities/request.wasm"})
	if edit != nil {
		edit(m)
	}
	return m, files
}

type host struct {
	env    *fixture.Env
	svc    *notify.Service
	alice  *models.User
	bob    *models.User
	instl  *models.Installation
	inst   *models.Instance
	caller models.Caller
}

func newHost(t *testing.T, b testenv.Backend) *host {
	t.Helper()
	env := fixture.New(t, b)
	h := &host{env: env, svc: env.Server.Notify, alice: env.User(t, "alice"), bob: env.User(t, "bob")}
	m, files := notes(t, "1.0.0", nil)
	var err error
	if h.instl, err = env.Life.Install(context.Background(), h.alice, env.Package(t, m, files)); err != nil {
		t.Fatal(err)
	}
	h.inst = env.Instance(t, h.alice, h.instl)
	h.caller = models.Caller{UserID: h.alice.ID}
	return h
}

// send runs notes.request (or another capability) so that it returns the
// notifications.
func (h *host) send(instanceID, capabilityID string, notifications ...any) error {
	args, _ := json.Marshal(map[string]any{"notifications": notifications})
	_, err := h.env.Runs.Run(context.Background(), capability.Call{Caller: h.caller, InstanceID: instanceID, Capability: capabilityID,
		Arguments: args, Trigger: sandbox.TriggerInvoke})
	return err
}

func notice(id, title string, actions ...any) map[string]any {
	if actions == nil {
		actions = []any{}
	}
	return map[string]any{"id": id, "title": title, "body": "", "severity": "info", "actions": actions}
}

func action(id string, a map[string]any) map[string]any {
	return map[string]any{"id": id, "label": "Do " + id, "action": a}
}

func hostActions(list ...any) map[string]any {
	return map[string]any{"type": "host_actions", "host_actions": list}
}

func set(key string, value any) map[string]any {
	return map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": key, "value": value}
}

// page is a page of notifications with the user's unread count.
type page struct {
	Notifications []*notify.Notification
	Unread        int
	HasMore       bool
}

func (h *host) list(t *testing.T, userID string, unreadOnly bool) *page {
	t.Helper()
	p, err := h.svc.List(context.Background(), userID, unreadOnly, models.PageArgs{First: new(notify.MaxPage)})
	if err != nil {
		t.Fatal(err)
	}
	unread, err := h.svc.Unread(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return &page{Notifications: p.Nodes(), Unread: unread, HasMore: p.PageInfo.HasNextPage}
}

func wantError(t *testing.T, what string, err error, code models.Code, says string) {
	t.Helper()
	if models.ErrorCode(err) != code || !strings.Contains(models.ErrorMessage(err), says) {
		t.Errorf("%s: %v, want %s saying %q", what, err, code, says)
	}
}

// Every rule of a notification, at its limit and one past it: a broken rule
// fails the run with bad_output naming the rule, and nothing of the run is
// applied or kept.
func TestNotificationRules(t *testing.T) {
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	many := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	with := func(key string, v any) map[string]any {
		n := notice("n", "Title")
		n[key] = v
		return n
	}
	tooManyHostActions := many(storageMax+1, func(i int) any { return set(fmt.Sprintf("k%d", i), i) })
	open := map[string]any{"type": "open", "extension": "main", "parameters": map[string]any{}}
	for _, tt := range []struct {
		name          string
		capability    string
		notifications []any
		says          string // "" when the run must succeed
	}{
		{"4 notifications", "notes.request", many(4, func(i int) any { return notice(fmt.Sprint(i), "t") }), ""},
		{"5 notifications", "notes.request", many(5, func(i int) any { return notice(fmt.Sprint(i), "t") }), "holds 5 notifications; a run sends at most 4"},
		{"a title of 120 characters", "notes.request", []any{notice("n", strings.Repeat("é", 120))}, ""},
		{"a title of 121 characters", "notes.request", []any{notice("n", strings.Repeat("é", 121))}, "title has 121 characters; at most 120"},
		{"no title", "notes.request", []any{with("title", " ")}, "title is required"},
		{"a body of 1,000 characters", "notes.request", []any{with("body", strings.Repeat("b", 1000))}, ""},
		{"a body of 1,001 characters", "notes.request", []any{with("body", strings.Repeat("b", 1001))}, "body has 1001 characters; at most 1000"},
		{"an unknown severity", "notes.request", []any{with("severity", "fatal")}, "severity must be one of info, success, warning, error"},
		{"no severity", "notes.request", []any{map[string]any{"id": "n", "title": "t"}}, "severity must be one of"},
		{"an id of 64 characters", "notes.request", []any{notice(strings.Repeat("i", 64), "t")}, ""},
		{"an id of 65 characters", "notes.request", []any{notice(strings.Repeat("i", 65), "t")}, "id must be 1 to 64 characters"},
		{"no id", "notes.request", []any{notice("", "t")}, "id must be 1 to 64 characters"},
		{"an id twice", "notes.request", []any{notice("n", "t"), notice("n", "u")}, `id "n" is used twice in the run`},
		{"an unknown member", "notes.request", []any{with("color", "red")}, `unknown field "color"`},
		{"not a list", "notes.request", nil, "must be an array of notifications"},
		{"3 actions", "notes.request", []any{notice("n", "t", action("a", open), action("b", open), action("c", open))}, ""},
		{"4 actions", "notes.request", []any{notice("n", "t", action("a", open), action("b", open), action("c", open), action("d", open))}, "holds 4 actions; at most 3"},
		{"an action id twice", "notes.request", []any{notice("n", "t", action("a", open), action("a", open))}, `actions[1].id "a" is used twice`},
		{"a label of 41 characters", "notes.request", []any{notice("n", "t", map[string]any{"id": "a", "label": strings.Repeat("l", 41), "action": open})}, "label must be 1 to 40 characters"},
		{"no action", "notes.request", []any{notice("n", "t", map[string]any{"id": "a", "label": "A"})}, "action is required"},
		{"an unknown action type", "notes.request", []any{notice("n", "t", action("a", map[string]any{"type": "email"}))}, `action.type "email": want host_actions, open or invoke`},
		{"open an unknown extension", "notes.request", []any{notice("n", "t", action("a", map[string]any{"type": "open", "extension": "nope"}))}, `extension "nope" is not a screen or home extension`},
		{"open with parameters not an object", "notes.request", []any{notice("n", "t", action("a", map[string]any{"type": "open", "extension": "main", "parameters": []any{1}}))}, "parameters must be an object"},
		{"invoke a background capability", "notes.request", []any{notice("n", "t", action("a", map[string]any{"type": "invoke", "capability": "notes.archive"}))}, `capability "notes.archive" is not a runnable tool or skill`},
		{"invoke an undeclared capability", "notes.request", []any{notice("n", "t", action("a", map[string]any{"type": "invoke", "capability": "notes.nope"}))}, `capability "notes.nope" is not a runnable tool or skill`},
		{"invoke with a member of another type", "notes.request", []any{notice("n", "t", action("a", map[string]any{"type": "invoke", "capability": "notes.summary", "extension": "main"}))}, `unknown field "extension"`},
		{"64 host actions", "notes.request", []any{notice("n", "t", action("a", hostActions(tooManyHostActions[:storageMax]...)))}, ""},
		{"65 host actions", "notes.request", []any{notice("n", "t", action("a", hostActions(tooManyHostActions...)))}, "host_actions action is"},
		{"no host actions", "notes.request", []any{notice("n", "t", action("a", hostActions()))}, "host_actions action is"},
		{"a host action without a value", "notes.request", []any{notice("n", "t", action("a", hostActions(map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "k"})))}, "plugin_storage_set needs a value"},
		{"a host action of an unknown type", "notes.request", []any{notice("n", "t", action("a", hostActions(map[string]any{"type": "plugin_storage_wipe", "namespace": "notes", "key": "k"})))}, `type "plugin_storage_wipe"`},
		{"a data capability", "notes.data", []any{notice("n", "t")}, "a data capability does not notify"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := h.list(t, h.alice.ID, false)
			var err error
			if tt.notifications == nil {
				args := `{"notifications": {"id": "n"}}`
				_, err = h.env.Runs.Run(context.Background(), capability.Call{Caller: h.caller, InstanceID: h.inst.ID, Capability: tt.capability,
					Arguments: models.JSON(args), Trigger: sandbox.TriggerInvoke})
			} else {
				err = h.send(h.inst.ID, tt.capability, tt.notifications...)
			}
			if tt.says == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *models.Error
			if models.ErrorCode(err) != models.ErrCapabilityFailed || !errorAs(err, &e) || e.Reason != models.ReasonBadOutput || !strings.Contains(e.Message, tt.says) {
				t.Fatalf("got %v, want CAPABILITY_FAILED bad_output saying %q", err, tt.says)
			}
			if after := h.list(t, h.alice.ID, false); len(after.Notifications) != len(before.Notifications) || after.Unread != before.Unread {
				t.Fatalf("a refused run kept notifications: %d before, %d after", len(before.Notifications), len(after.Notifications))
			}
		})
	}

	// A plugin without the permission may not notify, and a refused run
	// applies none of its host actions either.
	m, files := notes(t, "1.0.0", func(m map[string]any) {
		m["id"] = "com.example.quiet"
		m["permissions"] = []any{"storage", "ai_storage"}
	})
	quiet, err := h.env.Life.Install(context.Background(), h.alice, h.env.Package(t, m, files))
	if err != nil {
		t.Fatal(err)
	}
	qi := h.env.Instance(t, h.alice, quiet)
	args, _ := json.Marshal(map[string]any{"host_actions": []any{set("k", 1)}, "notifications": []any{notice("n", "t")}})
	_, err = h.env.Runs.Run(context.Background(), capability.Call{Caller: h.caller, InstanceID: qi.ID, Capability: "notes.request", Arguments: args, Trigger: sandbox.TriggerInvoke})
	wantError(t, "without the permission", err, models.ErrCapabilityFailed, "does not request the notifications permission")
	if items, err := h.env.Store.Invoke(context.Background(), h.caller, qi.ID, models.ToolList, models.JSON(`{"namespace": "notes"}`)); err != nil || strings.Contains(string(items.Data), `"k"`) {
		t.Fatalf("a refused run applied its host actions: %s %v", items.Data, err)
	}
}

// storageMax is the most host actions one action may hold: as many as one
// run's.
const storageMax = notify.MaxHostActions

func errorAs(err error, e **models.Error) bool {
	v, ok := err.(*models.Error)
	*e = v
	return ok
}

// Sent, listed, replaced, read and acted on, on both databases: host actions
// apply at the current generation and bump the revision, open and invoke
// say what to do; another user sees nothing and is refused; a muted
// Instance sends nothing; an update makes older host actions a conflict.
func TestNotifications(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		feed := h.svc.Subscribe(ctx, h.alice.ID)
		bobFeed := h.svc.Subscribe(ctx, h.bob.ID)
		changes := h.env.Changes(t, h.alice, h.inst.ID)

		undo := action("undo", hostActions(set("restored", map[string]any{"text": "back"})))
		open := action("open", map[string]any{"type": "open", "extension": "main", "parameters": map[string]any{"tab": "all"}})
		invoke := action("sum", map[string]any{"type": "invoke", "capability": "notes.summary", "arguments": map[string]any{"limit": 1}})
		if err := h.send(h.inst.ID, "notes.request", notice("first", "First", undo, open, invoke), notice("second", "Second")); err != nil {
			t.Fatal(err)
		}
		var got []*notify.Notification
		for len(got) < 2 {
			select {
			case n := <-feed:
				got = append(got, n)
			case <-ctx.Done():
				t.Fatalf("the subscription got %d of 2 notifications", len(got))
			}
		}
		if got[0].Title != "First" || got[1].Title != "Second" || got[0].InstanceID != h.inst.ID || got[0].PluginID != "com.example.notes" ||
			got[0].Capability != "notes.request" || len(got[0].Actions) != 3 || got[0].Actions[0].Type != notify.ActionHostActions {
			t.Fatalf("subscription: %+v %+v", got[0], got[1])
		}
		if strings.Contains(fmt.Sprint(got[0].Actions), "restored") {
			t.Fatal("a host_actions action shows its host actions")
		}
		page := h.list(t, h.alice.ID, false)
		if len(page.Notifications) != 2 || page.Unread != 2 || page.Notifications[0].Title != "Second" || page.HasMore {
			t.Fatalf("list: %+v", page)
		}
		first := page.Notifications[1]
		if !strings.HasPrefix(first.ID, models.PrefixNotification) {
			t.Fatalf("notification id %q", first.ID)
		}

		// Another user sees nothing of it, and is refused as for storage.
		if p := h.list(t, h.bob.ID, false); len(p.Notifications) != 0 || p.Unread != 0 {
			t.Fatalf("bob sees %+v", p)
		}
		_, err := h.svc.Get(ctx, h.bob.ID, first.ID)
		wantError(t, "bob reads it", err, models.ErrPermissionDenied, "does not exist or is not yours")
		_, err = h.svc.MarkRead(ctx, h.bob.ID, []string{first.ID})
		wantError(t, "bob marks it read", err, models.ErrPermissionDenied, "not yours")
		_, err = h.svc.RunAction(ctx, h.bob.ID, first.ID, "undo")
		wantError(t, "bob takes its action", err, models.ErrPermissionDenied, "not yours")
		select {
		case n := <-bobFeed:
			t.Fatalf("bob's subscription got alice's %+v", n)
		default:
		}

		// Paging, and the bounds of a page and of the ids.
		p1, err := h.svc.List(ctx, h.alice.ID, false, models.PageArgs{First: new(1)})
		if err != nil || len(p1.Edges) != 1 || !p1.PageInfo.HasNextPage {
			t.Fatalf("first page %+v %v", p1, err)
		}
		p2, err := h.svc.List(ctx, h.alice.ID, false, models.PageArgs{First: new(1), After: p1.PageInfo.EndCursor})
		if err != nil || len(p2.Edges) != 1 || p2.PageInfo.HasNextPage || p2.Edges[0].Node.ID != first.ID {
			t.Fatalf("second page %+v %v", p2, err)
		}
		for _, n := range []int{0, notify.MaxPage + 1} {
			_, err := h.svc.List(ctx, h.alice.ID, false, models.PageArgs{First: new(n)})
			wantError(t, fmt.Sprintf("first %d", n), err, models.ErrBadUserInput, "it must be from 1 to 100")
		}
		_, err = h.svc.List(ctx, h.alice.ID, false, models.PageArgs{After: new(first.ID)})
		wantError(t, "a notification id as after", err, models.ErrBadUserInput, "is not a cursor of notifications")
		_, err = h.svc.MarkRead(ctx, h.alice.ID, nil)
		wantError(t, "no ids", err, models.ErrBadUserInput, "1 to 100")
		_, err = h.svc.MarkRead(ctx, h.alice.ID, make([]string, notify.MaxPage+1))
		wantError(t, "101 ids", err, models.ErrBadUserInput, "1 to 100")

		// The host actions apply, bump the revision, reach subscribers, and
		// read the notification.
		rev := revision(t, h)
		out, err := h.svc.RunAction(ctx, h.alice.ID, first.ID, "undo")
		if err != nil || out.Result == nil || !strings.Contains(out.Result.Summary, "Applied 1 host action") {
			t.Fatalf("undo: %+v %v", out, err)
		}
		if r := revision(t, h); r != rev+1 {
			t.Fatalf("revision %d after the action, want %d", r, rev+1)
		}
		if c, ok := changes.Next(ctx); !ok || c.Key == nil || *c.Key != "restored" || c.Operation != models.OpCreate {
			t.Fatalf("the storage subscriber got %+v", c)
		}
		if p := h.list(t, h.alice.ID, true); len(p.Notifications) != 1 || p.Unread != 1 || p.Notifications[0].Title != "Second" {
			t.Fatalf("unread after the action: %+v", p)
		}
		// Taken twice, the create is refused: the key exists.
		_, err = h.svc.RunAction(ctx, h.alice.ID, first.ID, "undo")
		wantError(t, "undo twice", err, models.ErrConflict, "already exists")
		out, err = h.svc.RunAction(ctx, h.alice.ID, first.ID, "open")
		if err != nil || out.Type != notify.ActionOpen || out.Extension != "main" || string(out.Parameters) != `{"tab":"all"}` || out.InstanceID != h.inst.ID {
			t.Fatalf("open: %+v %v", out, err)
		}
		out, err = h.svc.RunAction(ctx, h.alice.ID, first.ID, "sum")
		if err != nil || out.Type != notify.ActionInvoke || out.Capability != "notes.summary" || string(out.Arguments) != `{"limit":1}` {
			t.Fatalf("invoke: %+v %v", out, err)
		}
		_, err = h.svc.RunAction(ctx, h.alice.ID, first.ID, "nope")
		wantError(t, "an unknown action", err, models.ErrBadUserInput, `has no action "nope"`)
		if n, err := h.svc.MarkRead(ctx, h.alice.ID, []string{page.Notifications[0].ID, first.ID}); err != nil || n != 1 {
			t.Fatalf("mark read: %d %v", n, err)
		}

		// The same id replaces the earlier notification, and its pending
		// host actions.
		if err := h.send(h.inst.ID, "notes.request", notice("first", "First again", action("undo", hostActions(set("other", 1))))); err != nil {
			t.Fatal(err)
		}
		page = h.list(t, h.alice.ID, false)
		if len(page.Notifications) != 2 || page.Notifications[0].Title != "First again" || page.Unread != 1 || page.Notifications[0].Read {
			t.Fatalf("after the replacement: %+v", page)
		}
		if n := testenv.Count(t, h.env.DB.Read, "pending_actions", "instance_id = ?", h.inst.ID); n != 1 {
			t.Fatalf("%d pending actions after the replacement, want 1", n)
		}
		_, err = h.svc.RunAction(ctx, h.alice.ID, first.ID, "undo")
		wantError(t, "the replaced notification", err, models.ErrPermissionDenied, "does not exist")

		// Muted, the Instance sends nothing; unmuted, it does again.
		if inst, err := h.env.Life.SetInstanceGrant(ctx, h.alice, h.inst.ID, models.PermissionNotifications, false); err != nil || !inst.NotificationsMuted {
			t.Fatalf("mute: %+v %v", inst, err)
		}
		if err := h.send(h.inst.ID, "notes.request", notice("muted", "Muted")); err != nil {
			t.Fatal(err)
		}
		if p := h.list(t, h.alice.ID, false); len(p.Notifications) != 2 {
			t.Fatalf("a muted Instance notified: %+v", p.Notifications[0])
		}
		if _, err := h.env.Life.SetInstanceGrant(ctx, h.bob, h.inst.ID, models.PermissionNotifications, true); models.ErrorCode(err) != models.ErrPermissionDenied {
			t.Fatalf("bob unmutes alice's Instance: %v", err)
		}
		if _, err := h.env.Life.SetInstanceGrant(ctx, h.alice, h.inst.ID, models.PermissionNotifications, true); err != nil {
			t.Fatal(err)
		}
		if err := h.send(h.inst.ID, "notes.request", notice("unmuted", "Unmuted")); err != nil {
			t.Fatal(err)
		}
		if p := h.list(t, h.alice.ID, false); len(p.Notifications) != 3 || p.Notifications[0].Title != "Unmuted" {
			t.Fatalf("after unmuting: %+v", p)
		}

		// While the Instance is disabled its actions are refused.
		if _, err := h.env.Life.SetInstanceEnabled(ctx, h.alice, h.inst.ID, false); err != nil {
			t.Fatal(err)
		}
		latest := h.list(t, h.alice.ID, false).Notifications[1] // "First again"
		_, err = h.svc.RunAction(ctx, h.alice.ID, latest.ID, "undo")
		wantError(t, "a disabled Instance", err, models.ErrPermissionDenied, "disabled")
		if _, err := h.env.Life.SetInstanceEnabled(ctx, h.alice, h.inst.ID, true); err != nil {
			t.Fatal(err)
		}

		// After an update, host actions of the older generation are a
		// conflict, and nothing is applied.
		m, files := notes(t, "1.0.1", nil)
		if _, err := h.env.Life.Update(ctx, h.alice, h.instl.ID, h.env.Package(t, m, files)); err != nil {
			t.Fatal(err)
		}
		rev = revision(t, h)
		_, err = h.svc.RunAction(ctx, h.alice.ID, latest.ID, "undo")
		wantError(t, "an older generation", err, models.ErrConflict, "generation 1; the plugin is now at generation 2")
		if r := revision(t, h); r != rev {
			t.Fatalf("a refused action changed the revision: %d, want %d", r, rev)
		}
	})
}

func revision(t *testing.T, h *host) int64 {
	t.Helper()
	inst, err := h.env.Life.Instance(context.Background(), h.alice, h.inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	return inst.StorageRevision
}

// A user keeps the 200 newest notifications (with their pending actions);
// deleting an Instance and uninstalling delete theirs.
func TestRetentionAndUninstall(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		ctx := context.Background()
		other := h.env.Instance(t, h.alice, h.instl)
		runs := notify.Keep/notify.MaxPerRun + 1 // 204 notifications
		for r := 0; r < runs; r++ {
			list := make([]any, notify.MaxPerRun)
			for i := range list {
				list[i] = notice(fmt.Sprintf("r%d-%d", r, i), fmt.Sprintf("run %d #%d", r, i), action("a", hostActions(set("k", r))))
			}
			if err := h.send(h.inst.ID, "notes.request", list...); err != nil {
				t.Fatal(err)
			}
		}
		page := h.list(t, h.alice.ID, false)
		if page.Unread != notify.Keep || !page.HasMore || page.Notifications[0].Title != fmt.Sprintf("run %d #3", runs-1) {
			t.Fatalf("after %d: unread %d, newest %q", runs*notify.MaxPerRun, page.Unread, page.Notifications[0].Title)
		}
		if n := testenv.Count(t, h.env.DB.Read, "notifications", "user_id = ?", h.alice.ID); n != notify.Keep {
			t.Fatalf("%d notifications kept, want %d", n, notify.Keep)
		}
		if n := testenv.Count(t, h.env.DB.Read, "notifications", "notice_id LIKE ?", "r0-%"); n != 0 {
			t.Fatalf("the oldest run's %d notifications are still kept", n)
		}
		if n := testenv.Count(t, h.env.DB.Read, "pending_actions", "instance_id = ?", h.inst.ID); n != notify.Keep {
			t.Fatalf("%d pending actions kept, want %d", n, notify.Keep)
		}

		// Deleting an Instance deletes its notifications only.
		if err := h.send(other.ID, "notes.request", notice("o", "Other", action("a", hostActions(set("k", 1))))); err != nil {
			t.Fatal(err)
		}
		if err := h.env.Life.DeleteInstance(ctx, h.alice, other.ID); err != nil {
			t.Fatal(err)
		}
		if n := testenv.Count(t, h.env.DB.Read, "notifications", "instance_id = ?", other.ID); n != 0 {
			t.Fatalf("%d notifications of a deleted Instance", n)
		}
		if n := testenv.Count(t, h.env.DB.Read, "notifications", "instance_id = ?", h.inst.ID); n != notify.Keep-1 {
			t.Fatalf("%d notifications left of the other Instance, want %d", n, notify.Keep-1)
		}

		// Uninstall (retain) deletes the rest, with their pending actions.
		if err := h.env.Life.Uninstall(ctx, h.alice, h.instl.ID); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"notifications", "pending_actions"} {
			if n := testenv.Count(t, h.env.DB.Read, table, "installation_id = ?", h.instl.ID); n != 0 {
				t.Fatalf("%d rows of %s after uninstall", n, table)
			}
		}
	})
}

// The example's background capability notifies when it archives, and its
// undo moves the notes back.
func TestArchiveUndo(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		ctx := context.Background()
		for _, key := range []string{"milk", "eggs"} {
			if _, err := h.env.Store.Create(ctx, h.caller, h.inst.ID, "notes", key, models.JSON(`{"text": "buy `+key+`", "done": true}`)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := h.env.Runs.Run(ctx, capability.Call{Caller: h.caller, InstanceID: h.inst.ID, Capability: "notes.archive", Arguments: models.JSON(`{}`), Trigger: sandbox.TriggerSchedule}); err != nil {
			t.Fatal(err)
		}
		page := h.list(t, h.alice.ID, false)
		if len(page.Notifications) != 1 {
			t.Fatalf("archiving sent %d notifications", len(page.Notifications))
		}
		n := page.Notifications[0]
		if n.Title != "2 notes archived" || n.Severity != "success" || !strings.Contains(n.Body, "buy milk") || len(n.Actions) != 2 || n.Actions[1].Extension != "main" {
			t.Fatalf("notification %+v", n)
		}
		if _, err := h.svc.RunAction(ctx, h.alice.ID, n.ID, "undo"); err != nil {
			t.Fatal(err)
		}
		for ns, want := range map[string]int{"notes": 2, "archive": 0} {
			res, err := h.env.Store.Invoke(ctx, h.caller, h.inst.ID, models.ToolList, models.JSON(`{"namespace": "`+ns+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			var data struct{ Items []any }
			json.Unmarshal(res.Data, &data)
			if len(data.Items) != want {
				t.Fatalf("%s holds %d items after the undo, want %d: %s", ns, len(data.Items), want, res.Data)
			}
		}
	})
}

// Parallel notifications that replace the same one leave exactly one, with
// its pending actions only, on both databases.
func TestParallelReplace(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		ctx := context.Background()
		target, err := h.env.Server.Gate.Open(ctx, h.caller, h.inst.ID, access.Use)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := target.Manifest.Capability("notes.request")
		const writers = 8
		errs := make(chan error, writers)
		for i := range writers {
			go func() {
				raw, _ := json.Marshal([]any{notice("same", fmt.Sprintf("writer %d", i), action("a", hostActions(set("k", i))))})
				list, err := notify.Parse(target.Manifest, c, raw)
				if err == nil {
					err = h.svc.Record(ctx, target, c.ID, list)
				}
				errs <- err
			}()
		}
		var failed []error
		for range writers {
			if err := <-errs; err != nil {
				failed = append(failed, err)
			}
		}
		if len(failed) > 0 {
			t.Fatalf("%d of %d writers failed: %v", len(failed), writers, failed)
		}
		if n := testenv.Count(t, h.env.DB.Read, "notifications", "instance_id = ? AND notice_id = ?", h.inst.ID, "same"); n != 1 {
			t.Fatalf("%d notifications with the same id, want 1", n)
		}
		if n := testenv.Count(t, h.env.DB.Read, "pending_actions", "instance_id = ?", h.inst.ID); n != 1 {
			t.Fatalf("%d pending actions, want 1", n)
		}
	})
}
