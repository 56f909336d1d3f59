package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pluginhost/internal/testenv"
)

// everyIDQ reads an object of every type with an id, with its __typename,
// for the twins' Instances a and b.
const everyIDQ = `query($a:ID!,$b:ID!){
  viewer{__typename id}
  installations{__typename id pluginId
    extensions{__typename id manifestId description}
    capabilities{__typename id manifestId description}
    namespaces{__typename id manifestId aiAccess}
    instances{__typename id
      connections{__typename id manifestId connected label}
      backgroundRuns(first:5){nodes{__typename id capability}}}}
  ua:uiConfig(instanceId:$a,extension:"main"){__typename id instanceId extension}
  ub:uiConfig(instanceId:$b,extension:"main"){__typename id instanceId extension}
  aiTools{capability instanceId namespaces{__typename id manifestId access}}
  notifications(first:20){nodes{__typename id pluginId actions{__typename id actionId label}}}
  sa:savedEntities(instanceId:$a){nodes{__typename id key title}}
  sb:savedEntities(instanceId:$b){nodes{__typename id key title}}
  storageAudit(first:50){nodes{__typename id}}
  renderedResponses{nodes{__typename id messageId instanceId}}
}`

// objectIDs walks an answer and returns the __typename of every object
// with an id, by id; an id given to two types fails the test.
func objectIDs(t *testing.T, v any, into map[string]string) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["id"].(string); ok {
			typ, _ := v["__typename"].(string)
			if was, ok := into[id]; ok && was != typ {
				t.Fatalf("id %s names a %s and a %s", id, was, typ)
			}
			into[id] = typ
		}
		for _, c := range v {
			objectIDs(t, c, into)
		}
	case []any:
		for _, c := range v {
			objectIDs(t, c, into)
		}
	}
}

// TestGlobalIDs: two plugins that give the same ids to their extensions,
// capabilities, namespaces, connection and notification actions get a
// different global id for each, unique across types, the same after a
// restart; node(id) reads each as its own query does, and another user's
// is refused with the error its own query gives.
func TestGlobalIDs(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	th := newTwinHost(t, h)
	alice := th.Alice
	bob := h.user(t, "bob", false)
	root := h.user(t, "root", true)
	vars := map[string]any{"a": th.Instance["alpha"], "b": th.Instance["beta"]}
	for i, w := range twins {
		th.Notify(t, w, "import")
		alice.Must(t, `mutation($i:ID!){saveEntity(instanceId:$i,key:"place",entity:{type:"place",title:"Louvre"}){key}}`, map[string]any{"i": th.Instance[w.Key]}, nil)
		th.Respond(t, w, fmt.Sprintf("msg-%d", i))
	}

	read := func(c *Client) (map[string]string, map[string]any) {
		t.Helper()
		data, errs := c.Do(t, everyIDQ, vars)
		if len(errs) > 0 {
			t.Fatalf("every id: %+v", errs)
		}
		var answer map[string]any
		raw, _ := json.Marshal(data)
		json.Unmarshal(raw, &answer)
		ids := map[string]string{}
		objectIDs(t, answer, ids)
		return ids, answer
	}
	ids, answer := read(alice)
	byType := map[string]int{}
	for _, typ := range ids {
		byType[typ]++
	}
	// Each twin has its own of each; the user has one of each other kind.
	for typ, want := range map[string]int{"User": 1, "Installation": 2, "Instance": 2, "Extension": 4, "Capability": 4, "Namespace": 2,
		"Connection": 2, "BackgroundRun": 2, "UiConfig": 2, "AiNamespace": 2, "Notification": 2, "NotificationAction": 4,
		"SavedEntity": 2, "AuditEntry": 4, "RenderedResponse": 2} {
		if byType[typ] < want {
			t.Errorf("%d ids of %s, want at least %d: %v", byType[typ], typ, want, byType)
		}
	}

	t.Logf("ids by type: %v", byType)
	// The plugins' own ids are in manifestId and actionId, and name each
	// plugin's own thing.
	type named struct {
		ID, ManifestID, Description string
	}
	var got struct {
		Installations []struct {
			ID, PluginID string
			Extensions   []named
			Capabilities []named
			Namespaces   []struct{ ID, ManifestID, AiAccess string }
			Instances    []struct {
				ID          string
				Connections []struct {
					ID, ManifestID string
					Connected      bool
				}
			}
		}
		Notifications struct {
			Nodes []struct {
				PluginID string
				Actions  []struct{ ID, ActionID, Label string }
			}
		}
	}
	raw, _ := json.Marshal(answer)
	json.Unmarshal(raw, &got)
	mains := map[string]bool{}
	for _, instl := range got.Installations {
		w := twins[slices.IndexFunc(twins, func(w twin) bool { return w.PluginID == instl.PluginID })]
		if e := instl.Extensions[0]; e.ManifestID != "main" || e.Description != w.Description() {
			t.Errorf("%s's main = %+v, want its own description %q", w.Key, e, w.Description())
		}
		mains[instl.Extensions[0].ID] = true
		if c := instl.Capabilities[0]; c.ManifestID != "notes.request" || c.Description != w.CapabilityDescription() {
			t.Errorf("%s's notes.request = %+v", w.Key, c)
		}
		if n := instl.Namespaces[0]; n.ManifestID != "notes" || n.AiAccess != w.Access {
			t.Errorf("%s's notes = %+v, want ai access %s", w.Key, n, w.Access)
		}
		if c := instl.Instances[0].Connections[0]; c.ManifestID != "account" || c.Connected != w.Connected {
			t.Errorf("%s's account = %+v, want connected %v", w.Key, c, w.Connected)
		}
	}
	if len(mains) != 2 {
		t.Errorf("the two plugins' main extensions share the id %v", mains)
	}
	for _, n := range got.Notifications.Nodes {
		w := twins[slices.IndexFunc(twins, func(w twin) bool { return w.PluginID == n.PluginID })]
		if len(n.Actions) != 2 || n.Actions[0].ActionID != "undo" || n.Actions[0].Label != w.UndoLabel() || n.Actions[1].ActionID != "open" {
			t.Errorf("%s's notification actions = %+v", w.Key, n.Actions)
		}
	}

	// node(id) reads every one as the viewer's own.
	list := slices.Sorted(func(yield func(string) bool) {
		for id := range ids {
			if !yield(id) {
				return
			}
		}
	})
	nodes := func(c *Client) (map[string]json.RawMessage, []GQLError) {
		var q strings.Builder
		q.WriteString("{")
		for i, id := range list {
			fmt.Fprintf(&q, "n%d:node(id:%q){__typename id ...on Extension{manifestId} ...on NotificationAction{actionId}} ", i, id)
		}
		q.WriteString("}")
		return c.Do(t, q.String(), nil)
	}
	data, errs := nodes(alice)
	if len(errs) > 0 {
		t.Fatalf("node of alice's ids: %+v", errs)
	}
	for i, id := range list {
		var n struct{ Typename, ID string }
		var m map[string]any
		json.Unmarshal(data[fmt.Sprintf("n%d", i)], &m)
		n.Typename, _ = m["__typename"].(string)
		n.ID, _ = m["id"].(string)
		if n.ID != id || n.Typename != ids[id] {
			t.Errorf("node(%s) = %s %s, want the %s", id, n.Typename, n.ID, ids[id])
		}
	}

	// Another user gets, for each, the error of its type's own query (a
	// user's is only theirs, the rest refuse another user's as unknown),
	// and no data.
	data, errs = nodes(bob)
	if len(errs) != len(list) {
		t.Fatalf("bob's node of alice's %d ids: %d errors", len(list), len(errs))
	}
	for _, e := range errs {
		i := -1
		if len(e.Path) == 1 {
			fmt.Sscanf(fmt.Sprint(e.Path[0]), "n%d", &i)
		}
		if i < 0 || i >= len(list) {
			t.Fatalf("error at %v: %s", e.Path, e.Message)
		}
		typ, want := ids[list[i]], "PLUGIN_STORAGE_PERMISSION_DENIED"
		if typ == "User" {
			want = "FORBIDDEN"
		}
		if e.Code() != want {
			t.Errorf("bob's node of alice's %s: %s %q, want %s", typ, e.Code(), e.Message, want)
		}
		if d := data[fmt.Sprintf("n%d", i)]; string(d) != "null" {
			t.Errorf("bob reads alice's %s %s: %s", typ, list[i], d)
		}
	}
	// The error is the one the type's own query gives.
	for _, tc := range []struct{ node, own string }{
		{th.Instance["alpha"], `query($i:ID!){instance(id:$i){id}}`},
		{th.Installation["alpha"], `mutation($i:ID!){createInstance(installationId:$i){id}}`},
	} {
		own := bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", tc.own, map[string]any{"i": tc.node})
		viaNode := bob.Fail(t, own.Code(), `query($i:ID!){node(id:$i){id}}`, map[string]any{"i": tc.node})
		if viaNode.Message != own.Message {
			t.Errorf("node says %q, its own query %q", viaNode.Message, own.Message)
		}
	}
	bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", `{node(id:"inst_unknown"){id}}`, nil)
	bob.Fail(t, "BAD_USER_INPUT", `{node(id:"main"){id}}`, nil)
	bob.Fail(t, "BAD_USER_INPUT", `{node(id:"ext_bm90IGEgc2NvcGU"){id}}`, nil)
	// Users and tokens are an admin's to read.
	var viewer struct{ Viewer struct{ ID string } }
	alice.Must(t, `{viewer{id}}`, nil, &viewer)
	var user struct{ Node struct{ Name string } }
	root.Must(t, `query($i:ID!){node(id:$i){...on User{name}}}`, map[string]any{"i": viewer.Viewer.ID}, &user)
	if user.Node.Name != "alice" {
		t.Errorf("an admin's node of alice's user: %+v", user.Node)
	}
	var tokens struct {
		AccessTokens struct{ Nodes []struct{ ID string } }
	}
	root.Must(t, `{accessTokens(user:"alice"){nodes{id}}}`, nil, &tokens)
	tok := tokens.AccessTokens.Nodes[0].ID
	root.Must(t, `query($i:ID!){node(id:$i){...on AccessToken{userName}}}`, map[string]any{"i": tok}, nil)
	alice.Fail(t, "FORBIDDEN", `query($i:ID!){node(id:$i){id}}`, map[string]any{"i": tok})

	// The same ids after a restart.
	h.Stop(t)
	h.Server = Start(t, b.DSN, h.pub.Dir)
	alice.URL = h.URL
	again, _ := read(alice)
	if len(again) != len(ids) {
		t.Fatalf("%d ids after a restart, %d before", len(again), len(ids))
	}
	for id, typ := range ids {
		if again[id] != typ {
			t.Errorf("after a restart the %s %s is gone", typ, id)
		}
	}
}
