package validator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"pluginhost/binding"
	"pluginhost/uicatalog"
)

const atLimitsFile = "testdata/configs/valid/at-limits.json"

// atLimitsConfig builds a config at every limit at once: 160 nodes, depth 12,
// a node with 32 children, 8 data sources, 32 state keys, 6 app bar actions,
// 8 navigation items, 16 actions in flows nested 4 deep, 32 conditions nested
// up to 4 deep, bindings of 12 segments.
func atLimitsConfig() obj {
	state := obj{"tab": "t0"}
	for i := 1; i < uicatalog.MaxStateKeys; i++ {
		switch i % 3 {
		case 0:
			state[fmt.Sprintf("k%02d", i)] = i
		case 1:
			state[fmt.Sprintf("k%02d", i)] = fmt.Sprintf("v%d", i)
		default:
			state[fmt.Sprintf("k%02d", i)] = i%2 == 0
		}
	}
	var sources []any
	for i := 0; i < 4; i++ {
		sources = append(sources, obj{"id": fmt.Sprintf("w%d", i), "capability": "weather.lookup", "trigger": "load", "refresh_seconds": 600,
			"arguments": obj{"city": fmt.Sprintf("{{state.k%02d}}", 1+3*i), "units": "metric", "days": 7}})
	}
	sources = append(sources,
		obj{"id": "notes", "capability": "host.storage.list", "arguments": obj{"namespace": "notes", "limit": 100}},
		obj{"id": "more", "capability": "host.storage.list", "trigger": "manual", "query": "{{state.k04}}", "arguments": obj{"namespace": "notes", "limit": 20}},
		obj{"id": "pinned", "capability": "host.storage.get", "arguments": obj{"namespace": "notes", "key": "pinned"}},
		obj{"id": "cities", "capability": "cities.search", "trigger": "manual", "arguments": obj{"prefix": "{{state.k07}}"}},
	)
	var barActions []any
	for i := 0; i < uicatalog.MaxAppBarActions; i++ {
		barActions = append(barActions, obj{"id": fmt.Sprintf("a%d", i), "label": fmt.Sprintf("Action %d", i), "icon": "refresh", "show_as": "auto",
			"action": obj{"type": "refresh", "source": fmt.Sprintf("w%d", i%4)}})
	}
	var navItems []any
	for i := 0; i < uicatalog.MaxNavigationItems; i++ {
		navItems = append(navItems, obj{"id": fmt.Sprintf("n%d", i), "label": fmt.Sprintf("Tab %d", i), "icon": "tab", "value": fmt.Sprintf("t%d", i),
			"action": obj{"type": "set_state", "values": obj{"tab": fmt.Sprintf("t%d", i)}}})
	}

	// 32 children with 32 conditions in all: every fourth nests 4 deep.
	var cond32 []any
	for i := 0; i < 32; i++ {
		var c any = obj{"path": fmt.Sprintf("state.k%02d", 1+i%31), "equals": fmt.Sprintf("v%d", i)}
		if i%4 == 0 {
			c = obj{"all": []any{obj{"any": []any{obj{"not": c}}}}}
		}
		cond32 = append(cond32, obj{"type": "text", "props": obj{"text": fmt.Sprintf("{{state.k%02d}} of {{data.w%d.data.city}}", 1+i%31, i%4), "visible_when": c}})
	}
	// Flows: 16 actions in all, nested 4 deep, at most 8 per flow.
	inner := obj{"type": "flow", "mode": "parallel", "actions": []any{obj{"type": "refresh", "source": "notes"}, obj{"type": "back"}}}
	for d := 0; d < 2; d++ {
		inner = obj{"type": "flow", "actions": []any{inner}}
	}
	flowA := obj{"type": "flow", "mode": "sequential", "validate": true, "actions": []any{
		obj{"type": "invoke", "capability": "host.storage.create", "arguments": obj{"namespace": "notes", "key": "{{state.k04}}", "value": obj{"t": "{{state.k07}}"}}},
		inner,
	}} // 2 + 1 + 1 + 2 = 6 entries in flows
	var eight []any
	for i := 0; i < 8; i++ {
		eight = append(eight, obj{"type": "set_state", "values": obj{fmt.Sprintf("k%02d", 3*i+3): i}})
	}
	// 8 actions in a flow, and 2 more: 16 in all with flowA.
	flowB := obj{"type": "flow", "actions": eight}
	flowC := obj{"type": "flow", "actions": []any{obj{"type": "navigate", "target": "detail", "parameters": obj{"id": "{{state.k01}}"}}, obj{"type": "refresh", "source": "more"}}}

	chain := chain(11) // a column chain whose innermost text is at depth 12 under the root
	template := obj{"type": "card", "props": obj{"action": obj{"type": "navigate", "target": "detail", "parameters": obj{"key": "{{item.key}}"}}}, "children": []any{
		obj{"type": "row", "props": obj{"spacing": 8}, "children": []any{
			obj{"type": "avatar", "props": obj{"label": "{{item.value.title}}"}},
			obj{"type": "text", "props": obj{"text": "{{item.value.title}}"}},
			obj{"type": "text", "props": obj{"text": "rev {{item.revision}}"}},
		}},
	}}
	children := []any{
		chain,
		obj{"type": "column", "props": obj{"spacing": 4}, "children": cond32},
		obj{"type": "list", "props": obj{"items_source": "{{data.notes.data.items}}"}, "children": []any{template}},
		obj{"type": "row", "children": []any{
			obj{"type": "button", "props": obj{"label": "Save", "action": flowA}},
			obj{"type": "button", "props": obj{"label": "Reset", "action": flowB}},
			obj{"type": "button", "props": obj{"label": "Open", "action": flowC}},
		}},
		obj{"type": "image", "props": obj{"url": "{{data.w0.data.icon_url}}", "aspect_ratio": 1.5}},
		obj{"type": "text", "props": obj{"text": "{{data.w1.data.raw.a.b.c.d.e.f.g.h}}"}},
		obj{"type": "text", "props": obj{"text": "Pinned: {{data.pinned.data.item.value.title}}"}},
		obj{"type": "select", "props": obj{"state_key": "k04", "options_source": "{{data.cities.data.options}}", "searchable": true}},
		obj{"type": "field", "props": obj{"state_key": "k07", "required": true, "min_length": 1, "max_length": 64, "suggestions_source": "{{data.cities.data.names}}"}},
	}
	view := obj{"type": "column", "children": children}
	// Fill up to the node limit with metrics in columns of at most 32.
	for left := uicatalog.MaxNodes - countNodes(view); left > 0; {
		col := obj{"type": "column", "props": obj{"spacing": 2}}
		left--
		var kids []any
		for len(kids) < 31 && left > 0 {
			kids = append(kids, obj{"type": "metric", "props": obj{"label": "Temp", "value": fmt.Sprintf("{{data.w%d.data.temperature}}", left%4), "unit": "°"}})
			left--
		}
		col["children"] = kids
		view["children"] = append(view["children"].([]any), col)
	}
	return config(view, obj{
		"description":   "Every limit of a UI config at once.",
		"initial_state": state,
		"data_sources":  sources,
		"app_bar":       obj{"title": "{{state.k01}}", "actions": barActions},
		"navigation":    obj{"type": "adaptive", "selected_state_key": "tab", "rail_breakpoint": 1600, "items": navItems},
		"theme": obj{"color_scheme": obj{"primary": "#0b57d0", "on_primary": "#ffffff"},
			"light": obj{"color_scheme": obj{"surface": "#ffffff", "on_surface": "#1f1f1f"}},
			"dark":  obj{"color_scheme": obj{"surface": "#131314", "on_surface": "#e3e3e3"}}},
	})
}

// countNodes counts the nodes of a tree built from obj values.
func countNodes(n any) int {
	m, ok := n.(obj)
	if !ok {
		return 0
	}
	c := 1
	if kids, ok := m["children"].([]any); ok {
		for _, k := range kids {
			c += countNodes(k)
		}
	}
	return c
}

// maxDepth is the depth of the deepest node (the root is 0).
func maxDepth(n any) int {
	d := 0
	if kids, ok := n.(obj)["children"].([]any); ok {
		for _, k := range kids {
			d = max(d, 1+maxDepth(k))
		}
	}
	return d
}

func atLimitsBytes() []byte {
	b, err := json.Marshal(atLimitsConfig())
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// TestAtLimitsConfig checks that the benchmark's config is valid and at every
// limit, and that testdata holds it (-update rewrites it).
func TestAtLimitsConfig(t *testing.T) {
	data := atLimitsBytes()
	if *update {
		os.WriteFile(atLimitsFile, data, 0o644)
	}
	if got, err := os.ReadFile(atLimitsFile); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("%s is stale: go test ./validator -run TestAtLimitsConfig -update", atLimitsFile)
	}
	if len(data) > uicatalog.MaxConfigBytes {
		t.Fatalf("the config has %d bytes, over the limit", len(data))
	}
	r := CheckUIConfig(data, loadManifest(t, "manifest.json"), "main")
	if !r.Valid || len(r.Warnings) > 0 {
		t.Fatalf("errors:%s\nwarnings:%s", messages(r.Errors), messages(r.Warnings))
	}
	u := newUI(loadManifest(t, "manifest.json"), "main")
	u.check(data)
	c := atLimitsConfig()
	counts := map[string][2]int{
		"nodes":         {u.nodes, uicatalog.MaxNodes},
		"flow actions":  {u.flowActions, uicatalog.MaxFlowActions},
		"conditions":    {u.conditions, binding.MaxConditions},
		"data sources":  {len(c["data_sources"].([]any)), uicatalog.MaxDataSources},
		"state keys":    {len(c["initial_state"].(obj)), uicatalog.MaxStateKeys},
		"bar actions":   {len(c["app_bar"].(obj)["actions"].([]any)), uicatalog.MaxAppBarActions},
		"nav items":     {len(c["navigation"].(obj)["items"].([]any)), uicatalog.MaxNavigationItems},
		"depth":         {maxDepth(c["view"]), uicatalog.MaxTreeDepth},
		"children (32)": {len(c["view"].(obj)["children"].([]any)[1].(obj)["children"].([]any)), uicatalog.MaxChildren},
	}
	for what, n := range counts {
		if n[0] != n[1] {
			t.Errorf("%s = %d, want the limit %d", what, n[0], n[1])
		}
	}
}

// BenchmarkCheckUIConfigAtLimits validates a config at every limit at once.
// The budget is 1 ms per config on one core.
func BenchmarkCheckUIConfigAtLimits(b *testing.B) {
	data, err := os.ReadFile(atLimitsFile)
	if err != nil {
		b.Fatal(err)
	}
	m := loadManifest(b, "manifest.json")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if r := CheckUIConfig(data, m, "main"); !r.Valid {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkCheckUIConfigInvalid validates a config with many problems, which
// also pays for putting them in document order.
func BenchmarkCheckUIConfigInvalid(b *testing.B) {
	data := bytes.ReplaceAll(atLimitsBytes(), []byte(`"type":"metric"`), []byte(`"type":"metrik"`))
	m := loadManifest(b, "manifest.json")
	b.ReportAllocs()
	for b.Loop() {
		if r := CheckUIConfig(data, m, "main"); r.Valid {
			b.Fatal("valid")
		}
	}
}
