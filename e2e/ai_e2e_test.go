package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"pluginhost/internal/testenv"
)

// TestAIAndHostActionsOverGraphQL: consent, AI tools and calls, saved entities
// through typed operations and through the AI, host actions, the snapshot and
// the audit trail.
func TestAIAndHostActionsOverGraphQL(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.user(t, "alice", false), h.user(t, "bob", false)
		m := manifest("com.test.assistant",
			map[string]any{"id": "notes", "max_bytes": 8192, "ai_access": "read_write"},
			map[string]any{"id": "saved_entities", "max_bytes": 8192, "ai_access": "read_write"},
			map[string]any{"id": "prefs", "max_bytes": 1024, "ai_access": "read"})
		m["permissions"] = []any{"storage", "ai_storage"}
		m["capabilities"] = []any{map[string]any{"id": "notes.sync", "kind": "background"}}
		instl, ids := h.install(t, alice, m, 1)
		id := ids[0]

		var tools struct {
			AiTools []struct {
				Handle, Capability, InstanceID string
				Namespaces                     []struct{ ID, ManifestID, Access string }
			}
		}
		alice.Must(t, `{aiTools{handle capability instanceId namespaces{id manifestId access}}}`, nil, &tools)
		if len(tools.AiTools) != 0 {
			t.Fatalf("tools before consent: %+v", tools)
		}
		alice.Must(t, `mutation($i:ID!){setAiStorageConsent(installationId:$i,granted:true){aiStorageConsent}}`, map[string]any{"i": instl}, nil)
		alice.Must(t, `{aiTools{handle capability instanceId namespaces{id manifestId access}}}`, nil, &tools)
		handles := map[string]string{}
		for _, tl := range tools.AiTools {
			handles[tl.Capability] = tl.Handle
		}
		if len(handles) != 5 {
			t.Fatalf("tools = %+v", tools)
		}
		aiInvoke := `mutation($h:String!,$a:JSON){aiInvoke(handle:$h,arguments:$a){summary data evidence{key revision}}}`
		// The AI saves an entity through the standard tools; the app reads it typed.
		alice.Must(t, aiInvoke, map[string]any{"h": handles["host.storage.create"], "a": map[string]any{
			"namespace": "saved_entities", "key": "louvre", "value": map[string]any{"type": "place", "title": "Louvre", "url": "https://www.louvre.fr", "favorite": true}}}, nil)
		var saved struct {
			SavedEntities struct {
				Nodes []struct {
					Key, Type, Title string
					URL              *string
					Favorite         bool
					Revision         int
				}
			}
		}
		alice.Must(t, `query($i:ID!){savedEntities(instanceId:$i,favoritesOnly:true){nodes{key type title url favorite revision}}}`, map[string]any{"i": id}, &saved)
		if len(saved.SavedEntities.Nodes) != 1 || saved.SavedEntities.Nodes[0].Title != "Louvre" {
			t.Fatalf("saved = %+v", saved)
		}
		// The app saves one with typed input; an http url is refused.
		e := alice.Fail(t, "PLUGIN_STORAGE_INVALID", `mutation($i:ID!){saveEntity(instanceId:$i,key:"x",entity:{type:"place",title:"X",url:"http://insecure.example"}){key}}`, map[string]any{"i": id})
		if !strings.Contains(e.Message, "url") || !strings.Contains(e.Message, "https") {
			t.Fatalf("message: %s", e.Message)
		}
		var typed struct {
			SaveEntity struct {
				Key      string
				Revision int
				Favorite bool
			}
		}
		alice.Must(t, `mutation($i:ID!){saveEntity(instanceId:$i,key:"orsay",entity:{type:"place",title:"Orsay"}){key revision favorite}}`, map[string]any{"i": id}, &typed)
		var toggled struct{ ToggleFavorite struct{ Favorite bool } }
		alice.Must(t, `mutation($i:ID!){toggleFavorite(instanceId:$i,key:"orsay",revision:1){favorite revision}}`, map[string]any{"i": id}, &toggled)
		if !toggled.ToggleFavorite.Favorite {
			t.Fatal("toggle did not set the favourite")
		}
		// The AI refusals the issue lists, over the wire.
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", aiInvoke, map[string]any{"h": handles["host.storage.update"], "a": map[string]any{"namespace": "prefs", "key": "k", "value": 1, "revision": 1}})
		alice.Fail(t, "PLUGIN_STORAGE_INVALID", aiInvoke, map[string]any{"h": handles["host.storage.get"], "a": map[string]any{"key": "louvre", "instance_id": id}})
		alice.Fail(t, "PLUGIN_STORAGE_INVALID", aiInvoke, map[string]any{"h": handles["host.storage.create"], "a": map[string]any{"namespace": "notes", "key": "refresh_token", "value": "x"}})
		bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", aiInvoke, map[string]any{"h": handles["host.storage.get"], "a": map[string]any{"namespace": "saved_entities", "key": "louvre"}})
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", aiInvoke, map[string]any{"h": "aih1_forged", "a": map[string]any{"key": "louvre"}})

		// A background runner reads the snapshot and returns host actions.
		var snap struct{ PluginStorageSnapshot json.RawMessage }
		alice.Must(t, `query($i:ID!){pluginStorageSnapshot(instanceId:$i)}`, map[string]any{"i": id}, &snap)
		var s struct {
			Generation int `json:"generation"`
			Namespaces []struct {
				ID    string `json:"id"`
				Items []any  `json:"items"`
			} `json:"namespaces"`
		}
		json.Unmarshal(snap.PluginStorageSnapshot, &s)
		if s.Generation != 1 || len(s.Namespaces) != 3 || len(s.Namespaces[1].Items) != 2 {
			t.Fatalf("snapshot = %s", snap.PluginStorageSnapshot)
		}
		apply := `mutation($i:ID!,$c:String!,$g:Int!,$r:JSON!){applyCapabilityResult(instanceId:$i,capability:$c,generation:$g,result:$r){summary evidence{namespace key revision}}}`
		res := map[string]any{"summary": "synced", "data": map[string]any{"host_actions": []any{
			map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": "synced", "value": map[string]any{"n": 1}},
			map[string]any{"type": "plugin_storage_delete", "namespace": "saved_entities", "key": "orsay", "revision": 2},
		}}}
		var applied struct {
			ApplyCapabilityResult struct {
				Evidence []struct {
					Namespace, Key string
					Revision       int
				}
			}
		}
		alice.Must(t, apply, map[string]any{"i": id, "c": "notes.sync", "g": 1, "r": res}, &applied)
		if len(applied.ApplyCapabilityResult.Evidence) != 2 {
			t.Fatalf("applied = %+v", applied)
		}
		alice.Fail(t, "PLUGIN_STORAGE_CONFLICT", apply, map[string]any{"i": id, "c": "notes.sync", "g": 9, "r": res})
		// The user reads their audit trail; values never appear in it.
		var audit struct {
			StorageAudit struct {
				Nodes    []struct{ Actor, Operation, Outcome, Key string }
				PageInfo struct{ HasNextPage bool }
			}
		}
		alice.Must(t, `{storageAudit(first:100){nodes{actor operation outcome key} pageInfo{hasNextPage}}}`, nil, &audit)
		got := map[string]int{}
		for _, en := range audit.StorageAudit.Nodes {
			got[en.Actor+":"+en.Outcome]++
		}
		if got["ai:ok"] != 1 || got["host:ok"] != 2 || got["ai:PLUGIN_STORAGE_PERMISSION_DENIED"] != 2 || got["host:PLUGIN_STORAGE_CONFLICT"] != 1 {
			t.Fatalf("audit = %v", got)
		}
		raw, _ := json.Marshal(audit)
		if strings.Contains(string(raw), "Louvre") {
			t.Fatal("a value appears in the audit trail")
		}
		var bobAudit struct {
			StorageAudit struct{ Nodes []struct{ Key string } }
		}
		bob.Must(t, `{storageAudit{nodes{key}}}`, nil, &bobAudit)
		// One Instance's trail: alice's Instance, for bob, looks like an
		// unknown one; neither is an empty page.
		for _, inst := range []string{id, "inst_doesnotexist"} {
			bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", `query($i:ID){storageAudit(instanceId:$i){nodes{key}}}`, map[string]any{"i": inst})
		}
		alice.Must(t, `query($i:ID){storageAudit(instanceId:$i){nodes{key}}}`, map[string]any{"i": id}, nil)
		for _, en := range bobAudit.StorageAudit.Nodes {
			if en.Key == "louvre" && len(bobAudit.StorageAudit.Nodes) > 1 {
				t.Fatal("bob sees more than his own attempt")
			}
		}
	})
}
