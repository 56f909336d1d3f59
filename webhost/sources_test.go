package webhost

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"

	"pluginhost/models"
)

// The server reads a first screen's storage sources when their arguments
// read only the state (persisted state over the initial, declared keys
// only) and the route; anything else, a manual source, a plugin's own
// capability, a broken binding or a failed read is left to the page.
func TestFirstSources(t *testing.T) {
	start := `{"data": {"start": {"generation": 3, "persistedState": {"sort": "old", "undeclared": "x"},
		"config": {"initial_state": {"sort": "new", "limit": 20, "ns": "notes"}, "data_sources": [
		{"id": "plain", "capability": "host.storage.list", "trigger": "load", "arguments": {"namespace": "notes", "limit": 50}},
		{"id": "state", "capability": "host.storage.list", "trigger": "load", "arguments": {"namespace": "{{state.ns}}", "limit": "{{state.limit}}", "cursor": "by-{{state.sort}}"}},
		{"id": "route", "capability": "host.storage.get", "trigger": "load", "arguments": {"namespace": "notes", "key": "{{context.route.key}}"}},
		{"id": "query", "capability": "host.storage.list", "arguments": {}, "query": "{{state.sort}} first"},
		{"id": "screen", "capability": "host.storage.list", "trigger": "load", "arguments": {"limit": "{{context.screen.width}}"}},
		{"id": "data", "capability": "host.storage.get", "trigger": "load", "arguments": {"key": "{{data.plain.summary}}"}},
		{"id": "broken", "capability": "host.storage.get", "trigger": "load", "arguments": {"key": "{{state.}}"}},
		{"id": "manual", "capability": "host.storage.list", "trigger": "manual", "arguments": {}},
		{"id": "plugin", "capability": "notes.summary", "trigger": "load", "arguments": {}},
		{"id": "refused", "capability": "host.storage.get", "trigger": "load", "arguments": {"key": "missing"}}
	]}}}}`
	var mu sync.Mutex
	var ran []string
	s := &Server{Execute: func(ctx context.Context, user *models.User, query string, vars map[string]any) []byte {
		if !strings.Contains(query, "invoke(") || vars["g"] != 3 || vars["i"] != "inst_1" {
			t.Errorf("ran %s with %v", query, vars)
		}
		a, _ := json.Marshal(vars["a"])
		mu.Lock()
		ran = append(ran, vars["c"].(string)+" "+string(a)+" "+func() string { q, _ := vars["q"].(string); return q }())
		mu.Unlock()
		if strings.Contains(string(a), "missing") {
			return []byte(`{"errors": [{"message": "no such key", "extensions": {"code": "PLUGIN_STORAGE_NOT_FOUND"}}], "data": null}`)
		}
		return []byte(`{"data": {"invoke": {"summary": "read with secret-token", "data": {}, "evidence": []}}}`)
	}}
	sources, generation := s.firstSources(context.Background(), &models.User{}, "secret-token", "inst_1",
		&Preload{Status: 200, Body: json.RawMessage(start)}, map[string]string{"key": "milk"})
	sort.Strings(ran)
	want := []string{
		`host.storage.get {"key":"milk","namespace":"notes"} `,
		`host.storage.get {"key":"missing"} `,
		`host.storage.list {"cursor":"by-old","limit":20,"namespace":"notes"} `,
		`host.storage.list {"limit":50,"namespace":"notes"} `,
		`host.storage.list {} old first`,
	}
	if strings.Join(ran, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ran:\n%s\nwant:\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
	if generation != 3 || len(sources) != 4 {
		t.Fatalf("%d sources at generation %d, want 4 at 3", len(sources), generation)
	}
	for _, src := range sources {
		if strings.Contains(string(src.Result), "secret-token") || !strings.Contains(string(src.Result), "[redacted]") {
			t.Fatalf("the credential is not redacted: %s", src.Result)
		}
	}
	// Nothing to read without a start.
	if got, _ := s.firstSources(context.Background(), &models.User{}, "", "inst_1", nil, nil); got != nil {
		t.Fatalf("without a start: %v", got)
	}
}
