package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"pluginhost/internal/wasmtest"
)

// twin is one of two plugins that give the same ids to everything they
// name (extensions main and answer, capability notes.request, background
// capability notes.tick, namespace notes, connection account, the actions
// undo and open of their notifications) and differ in what those ids name.
// A client that keys its cache by a plugin's own ids shows one plugin's
// data for the other's.
type twin struct {
	Key      string // alpha or beta
	Title    string // Alpha or Beta
	PluginID string
	// Access is the AI's access to namespace notes: the alpha plugin's is
	// read, the beta plugin's read_write.
	Access string
	// Connected says whether the test connects the account connection (the
	// alpha plugin's only).
	Connected bool
}

// Description is what the twin's main extension says it is.
func (w twin) Description() string { return w.Title + " notes, listed" }

// CapabilityDescription is how the twin describes notes.request.
func (w twin) CapabilityDescription() string { return w.Title + " answers its arguments" }

// UndoLabel is the label of the undo action of the twin's notifications.
func (w twin) UndoLabel() string { return "Undo " + w.Title + " import" }

// OpenLabel is the label of their open action.
func (w twin) OpenLabel() string { return "Open " + w.Title + " list" }

var twins = []twin{
	{Key: "alpha", Title: "Alpha", PluginID: "com.test.alpha", Access: "read", Connected: true},
	{Key: "beta", Title: "Beta", PluginID: "com.test.beta", Access: "read_write"},
}

// Package returns the twin's manifest and files.
func (w twin) Package(t *testing.T) (map[string]any, map[string]string) {
	t.Helper()
	host := "api." + w.Key + ".example"
	m := map[string]any{
		"id": w.PluginID, "name": w.Title, "version": "1.0.0", "schema_version": 2,
		"description": "The " + w.Title + " twin: its ids are the other's, its data is its own.",
		"permissions": []any{"storage", "ai_storage", "notifications", "network"},
		"data_policy": "purge",
		"storage": map[string]any{"version": 1, "namespaces": []any{
			map[string]any{"id": "notes", "max_bytes": 65536, "ai_access": w.Access},
			map[string]any{"id": "saved_entities", "max_bytes": 65536},
		}},
		"network": map[string]any{"hosts": []any{host}},
		"connections": []any{map[string]any{"id": "account", "label": w.Title + " account", "kind": "api_key", "hosts": []any{host},
			"api_key": map[string]any{"header": "X-Api-Key"}}},
		"capabilities": []any{
			map[string]any{"id": "notes.request", "kind": "skill", "description": w.CapabilityDescription(), "module": "capabilities/request.wasm"},
			map[string]any{"id": "notes.tick", "kind": "background", "description": w.Title + " ticks once a day", "module": "capabilities/request.wasm",
				"schedule_seconds": 86400},
		},
		"extensions": []any{
			map[string]any{"id": "main", "point": "screen", "config": "ui/main.json"},
			map[string]any{"id": "answer", "point": "response", "config": "ui/answer.json"},
		},
	}
	main, _ := json.Marshal(map[string]any{
		"ui_schema": 2, "description": w.Description(),
		"data_sources": []any{map[string]any{"id": "notes", "capability": "host.storage.list", "trigger": "load",
			"arguments": map[string]any{"namespace": "notes", "limit": 50}}},
		"view": map[string]any{"type": "column", "children": []any{
			map[string]any{"type": "text", "props": map[string]any{"text": w.Title + " notes", "style": "title_large"}},
			map[string]any{"type": "list", "props": map[string]any{"items_source": "{{data.notes.data.items}}"},
				"children": []any{map[string]any{"type": "text", "props": map[string]any{"text": "{{item.key}}"}}}},
		}},
	})
	answer, _ := json.Marshal(map[string]any{
		"ui_schema": 2, "description": "The " + w.Title + " notes the assistant found.",
		"a2ui": map[string]any{"version": 1, "description": "Use when the answer lists " + w.Title + " notes.",
			"schema": map[string]any{"type": "object", "required": []any{"data"}}},
		"data_sources": []any{map[string]any{"id": "notes", "capability": "host.storage.list", "trigger": "load",
			"arguments": map[string]any{"namespace": "notes", "limit": 50}}},
		"view": map[string]any{"type": "column", "children": []any{
			map[string]any{"type": "text", "props": map[string]any{"text": w.Title + " answer"}},
		}},
	})
	return m, map[string]string{
		"ui/main.json":              string(main),
		"ui/answer.json":            string(answer),
		"capabilities/request.wasm": string(wasmtest.Module(t, "../sandbox/testdata/modules", "request")),
	}
}

// Notice returns a notification of the twin's notes.request (its run
// answers the arguments it was given): id noticeID, with the actions undo
// (host actions that write key in notes) and open.
func (w twin) Notice(noticeID, key string) map[string]any {
	return map[string]any{"id": noticeID, "title": fmt.Sprintf("%s import %s", w.Title, noticeID), "body": "", "severity": "info",
		"actions": []any{
			map[string]any{"id": "undo", "label": w.UndoLabel(), "action": map[string]any{"type": "host_actions", "host_actions": []any{
				map[string]any{"type": "plugin_storage_set", "namespace": "notes", "key": key, "value": map[string]any{"text": "undone " + w.Key}}}}},
			map[string]any{"id": "open", "label": w.OpenLabel(), "action": map[string]any{"type": "open", "extension": "main", "parameters": map[string]any{}}},
		}}
}

// twinHost is a server with both twins installed by one user, one Instance
// each: consent given, the alpha plugin's account connected.
type twinHost struct {
	*host
	Alice *Client
	// Installation and Instance hold the ids of each twin's, by Key.
	Installation, Instance map[string]string
}

const notifyQ = `mutation($i:ID!,$a:JSON){invoke(instanceId:$i,capability:"notes.request",arguments:$a){summary}}`

func newTwinHost(t *testing.T, h *host) *twinHost {
	t.Helper()
	th := &twinHost{host: h, Alice: h.user(t, "alice", false), Installation: map[string]string{}, Instance: map[string]string{}}
	for _, w := range twins {
		m, files := w.Package(t)
		instl, ids := installApp(t, h, th.Alice, m, files, 1)
		th.Installation[w.Key], th.Instance[w.Key] = instl, ids[0]
		th.Alice.Must(t, `mutation($i:ID!){setAiStorageConsent(installationId:$i,granted:true){id}}`, map[string]any{"i": instl}, nil)
		if w.Connected {
			th.Alice.Must(t, `mutation($i:ID!){connectApiKey(instanceId:$i,connection:"account",key:"k-1"){id}}`, map[string]any{"i": ids[0]}, nil)
		}
		warmCapability(t, th.Alice, ids[0], "notes.request")
	}
	return th
}

// Notify has the twin's notes.request send notifications with the notice
// ids (at most 4).
func (th *twinHost) Notify(t *testing.T, w twin, noticeIDs ...string) {
	t.Helper()
	list := []any{}
	for _, id := range noticeIDs {
		list = append(list, w.Notice(id, "undone-"+id))
	}
	th.Alice.Must(t, notifyQ, map[string]any{"i": th.Instance[w.Key], "a": map[string]any{"notifications": list}}, nil)
}

// Respond shows the twin's answer response in the AI message messageID.
func (th *twinHost) Respond(t *testing.T, w twin, messageID string) {
	t.Helper()
	var cands struct {
		ResponseCandidates []struct{ Handle, InstanceID string }
	}
	th.Alice.Must(t, `{responseCandidates{handle instanceId}}`, nil, &cands)
	for _, c := range cands.ResponseCandidates {
		if c.InstanceID != th.Instance[w.Key] {
			continue
		}
		var sel struct {
			SelectResponseUi struct {
				Rendered bool
				Reasons  []struct{ Code, Message string }
			}
		}
		th.Alice.Must(t, `mutation($h:String!,$m:String!,$r:JSON!){selectResponseUi(handle:$h,messageId:$m,capability:"host.storage.list",arguments:{namespace:"notes"},result:$r){rendered reasons{code message}}}`,
			map[string]any{"h": c.Handle, "m": messageID, "r": map[string]any{"summary": w.Title + " notes", "data": map[string]any{"namespace": "notes", "items": []any{}}, "evidence": []any{}}}, &sel)
		if !sel.SelectResponseUi.Rendered {
			t.Fatalf("the %s response of %s was not rendered: %+v", w.Key, messageID, sel.SelectResponseUi.Reasons)
		}
		return
	}
	t.Fatalf("no response candidate of the %s Instance: %+v", w.Key, cands)
}
