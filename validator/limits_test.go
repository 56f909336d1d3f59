package validator

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/configs/limits from the limit cases")

type obj = map[string]any

func text(s string) obj { return obj{"type": "text", "props": obj{"text": s}} }

func column(children ...any) obj { return obj{"type": "column", "children": children} }

func config(view any, top obj) obj {
	c := obj{"ui_schema": 2, "view": view}
	for k, v := range top {
		c[k] = v
	}
	return c
}

// flatTree is a root column with groups of at most 31 texts: n nodes in all.
func flatTree(n int) obj {
	root := obj{"type": "column"}
	var groups []any
	left := n - 1
	for left > 0 {
		g := column()
		left--
		var kids []any
		for i := 0; i < 31 && left > 0; i++ {
			kids = append(kids, text("t"))
			left--
		}
		g["children"] = kids
		groups = append(groups, g)
	}
	root["children"] = groups
	return root
}

// chain nests columns so that the innermost text is at the depth.
func chain(depth int) any {
	var n any = text("deepest")
	for i := 0; i < depth; i++ {
		n = column(n)
	}
	return n
}

func chainPath(depth int) string { return "/view" + strings.Repeat("/children/0", depth) }

func texts(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = text("t")
	}
	return a
}

func sources(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = obj{"id": fmt.Sprintf("s%d", i), "capability": "weather.lookup", "arguments": obj{"city": "x"}}
	}
	return a
}

// readAll is a text that reads the sources s0 to s<n-1>.
func readAll(n int) obj {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "{{data.s%d.completed}} ", i)
	}
	return text(b.String())
}

func stateKeys(n int) obj {
	m := obj{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("k%02d", i)] = i
	}
	return m
}

func appBarActions(n int) obj {
	a := make([]any, n)
	for i := range a {
		a[i] = obj{"id": fmt.Sprintf("a%d", i), "label": "A", "action": obj{"type": "back"}}
	}
	return obj{"actions": a}
}

func navItems(n int) obj {
	a := make([]any, n)
	for i := range a {
		a[i] = obj{"id": fmt.Sprintf("i%d", i), "label": "I", "action": obj{"type": "back"}}
	}
	return obj{"items": a}
}

func nested(depth int) any {
	var v any = "leaf"
	for i := 0; i < depth; i++ {
		v = []any{v}
	}
	return v
}

func nestedPath(base string, depth int) string { return base + strings.Repeat("/0", depth) }

func entries(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = i
	}
	return a
}

// flows nests flows: depth flows, the innermost holding one back action.
func flows(depth int) obj {
	var a any = obj{"type": "back"}
	for i := 0; i < depth; i++ {
		a = obj{"type": "flow", "actions": []any{a}}
	}
	return a.(obj)
}

func flowPath(base string, depth int) string { return base + strings.Repeat("/actions/0", depth-1) }

func backs(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = obj{"type": "back"}
	}
	return a
}

// buttons returns a column of buttons whose flows hold the given numbers of
// back actions.
func buttons(perFlow ...int) obj {
	var kids []any
	for _, n := range perFlow {
		kids = append(kids, obj{"type": "button", "props": obj{"label": "b", "action": obj{"type": "flow", "actions": backs(n)}}})
	}
	return column(kids...)
}

// condNest nests not around a single condition: depth conditions in all.
func condNest(depth int) any {
	var c any = obj{"path": "state.k", "exists": true}
	for i := 1; i < depth; i++ {
		c = obj{"not": c}
	}
	return c
}

func condPath(base string, depth int) string { return base + strings.Repeat("/not", depth-1) }

// visibleTexts returns n texts, each with one single condition.
func visibleTexts(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = obj{"type": "text", "props": obj{"text": "t", "visible_when": obj{"path": "state.k", "equals": i}}}
	}
	return a
}

func prop(node string, props obj) obj { return obj{"type": node, "props": props} }

func stackWith(props obj) obj {
	return obj{"type": "stack", "children": []any{obj{"type": "positioned", "props": props, "children": []any{text("x")}}}}
}

func row(children ...any) obj { return obj{"type": "row", "children": children} }

func options(n int) []any {
	a := make([]any, n)
	for i := range a {
		a[i] = obj{"value": i, "label": "o"}
	}
	return a
}

func deepBinding(segments int) string {
	p := "data.s0.data.raw"
	for i := 4; i < segments; i++ {
		p += ".x"
	}
	return "{{" + p + "}}"
}

// padded returns a valid config of exactly n bytes.
func padded(n int) []byte {
	b := []byte(`{"ui_schema": 2, "view": {"type": "text", "props": {"text": "x"}}}`)
	return append(b[:len(b)-1], append(bytes.Repeat([]byte(" "), n-len(b)), '}')...)
}

type limitCase struct {
	name, rule string
	config     any // obj, or []byte for raw text
	errors     [][2]string
}

var st = obj{"initial_state": obj{"k": 0}}

// limitCases are every limit of the specification at the limit (valid) and
// one past it (the exact error).
func limitCases() []limitCase {
	e := func(path, code string) [][2]string { return [][2]string{{path, code}} }
	var cs []limitCase
	add := func(name, rule string, atLimit, past any, errs [][2]string) {
		cs = append(cs, limitCase{name + "-at-limit", rule, atLimit, nil}, limitCase{name + "-past-limit", rule, past, errs})
	}
	add("nodes", "nodes per tree: 160", config(flatTree(160), nil), config(flatTree(161), nil), e("/view", CodeTooManyNodes))
	add("depth", "tree depth: 12 (root is depth 0)", config(chain(12), nil), config(chain(13), nil), e(chainPath(13), CodeTooDeep))
	add("children", "children per node: 32", config(column(texts(32)...), nil), config(column(texts(33)...), nil), e("/view/children", CodeTooManyChildren))
	add("data-sources", "data sources: 8", config(readAll(8), obj{"data_sources": sources(8)}), config(readAll(9), obj{"data_sources": sources(9)}), e("/data_sources", CodeCount))
	add("state-keys", "state keys: 32", config(text("x"), obj{"initial_state": stateKeys(32)}), config(text("x"), obj{"initial_state": stateKeys(33)}), e("/initial_state", CodeCount))
	k64, k65 := "k"+strings.Repeat("x", 63), "k"+strings.Repeat("x", 64)
	add("state-key-length", "state key length: 64", config(text("x"), obj{"initial_state": obj{k64: 1}}), config(text("x"), obj{"initial_state": obj{k65: 1}}), e("/initial_state/"+k65, CodeFormat))
	add("config-size", "config JSON size: 32 KiB", padded(32*1024), padded(32*1024+1), e("", CodeTooLarge))
	add("app-bar-actions", "app bar actions per extension: 6", config(text("x"), obj{"app_bar": appBarActions(6)}), config(text("x"), obj{"app_bar": appBarActions(7)}), e("/app_bar/actions", CodeCount))
	add("navigation-items-min", "navigation items: 2 to 8", config(text("x"), obj{"navigation": navItems(2)}), config(text("x"), obj{"navigation": navItems(1)}), e("/navigation/items", CodeCount))
	add("navigation-items-max", "navigation items: 2 to 8", config(text("x"), obj{"navigation": navItems(8)}), config(text("x"), obj{"navigation": navItems(9)}), e("/navigation/items", CodeCount))
	nav := func(bp any) obj { n := navItems(2); n["rail_breakpoint"] = bp; return n }
	add("rail-breakpoint-min", "rail_breakpoint: 480 to 1600", config(text("x"), obj{"navigation": nav(480)}), config(text("x"), obj{"navigation": nav(479.5)}), e("/navigation/rail_breakpoint", CodeRange))
	add("rail-breakpoint-max", "rail_breakpoint: 480 to 1600", config(text("x"), obj{"navigation": nav(1600)}), config(text("x"), obj{"navigation": nav(1601)}), e("/navigation/rail_breakpoint", CodeRange))
	src := func(r any) obj {
		return obj{"data_sources": []any{obj{"id": "s", "capability": "weather.lookup", "arguments": obj{"city": "x"}, "refresh_seconds": r}}}
	}
	readS := text("{{data.s.summary}}")
	add("refresh-min", "automatic refresh: 30 to 86400 seconds", config(readS, src(30)), config(readS, src(29)), e("/data_sources/0/refresh_seconds", CodeRange))
	add("refresh-max", "automatic refresh: 30 to 86400 seconds", config(readS, src(86400)), config(readS, src(86401)), e("/data_sources/0/refresh_seconds", CodeRange))
	deep := func(n int) obj { return column(text(deepBinding(n)), readAll(1)) }
	add("binding-depth", "binding depth: 12 segments", config(deep(12), obj{"data_sources": sources(1)}), config(deep(13), obj{"data_sources": sources(1)}), e("/view/children/0/props/text", CodeBindingDepth))
	add("value-depth", "JSON binding value depth: 8", config(text("x"), obj{"initial_state": obj{"k": nested(8)}}), config(text("x"), obj{"initial_state": obj{"k": nested(9)}}), e(nestedPath("/initial_state/k", 8), CodeValueDepth))
	add("value-entries", "arrays/objects up to 64 entries", config(text("x"), obj{"initial_state": obj{"k": entries(64)}}), config(text("x"), obj{"initial_state": obj{"k": entries(65)}}), e("/initial_state/k", CodeValueEntries))
	btn := func(a any) obj { return prop("button", obj{"label": "b", "action": a}) }
	add("flow-depth", "flow nesting depth: 4", config(btn(flows(4)), nil), config(btn(flows(5)), nil), e(flowPath("/view/props/action", 5), CodeFlowDepth))
	add("flow-actions-per-flow", "actions: 8 per flow", config(btn(obj{"type": "flow", "actions": backs(8)}), nil), config(btn(obj{"type": "flow", "actions": backs(9)}), nil), e("/view/props/action/actions", CodeTooManyActions))
	add("flow-actions-total", "actions in all flows: 16 total", config(buttons(8, 8), nil), config(buttons(8, 8, 1), nil), e("/view/children/2/props/action/actions/0", CodeTooManyActions))
	vis := func(c any) obj { return prop("text", obj{"text": "x", "visible_when": c}) }
	add("condition-depth", "condition depth: 4", config(vis(condNest(4)), st), config(vis(condNest(5)), st), e(condPath("/view/props/visible_when", 5), CodeConditionDepth))
	halves := func(n int) obj { a := visibleTexts(n); return column(column(a[:16]...), column(a[16:]...)) }
	add("conditions", "condition count: 32", config(halves(32), st), config(halves(33), st), e("/view/children/1/children/16/props/visible_when", CodeTooManyConditions))
	conds := func(n int) obj {
		items := make([]any, n)
		for i := range items {
			items[i] = obj{"path": "state.k", "equals": i}
		}
		return vis(obj{"any": items})
	}
	add("conditions-in-one-combinator", "condition count: 32", config(conds(32), st), config(conds(33), st), e("/view/props/visible_when/any/32", CodeTooManyConditions))
	add("options", "static options: 64 (the JSON entries limit)", config(prop("select", obj{"state_key": "k", "options": options(64)}), st), config(prop("select", obj{"state_key": "k", "options": options(65)}), st), e("/view/props/options", CodeCount))
	add("description", "description: at most 500 characters", config(text("x"), obj{"description": strings.Repeat("é", 500)}), config(text("x"), obj{"description": strings.Repeat("é", 501)}), e("/description", CodeRange))

	// Prop value ranges, at both ends.
	r := func(name, rule string, node func(v any) obj, path string, lo, hi, below, above any) {
		add(name+"-min", rule, config(node(lo), nil), config(node(below), nil), e(path, CodeRange))
		add(name+"-max", rule, config(node(hi), nil), config(node(above), nil), e(path, CodeRange))
	}
	width := func(v any) obj { return prop("text", obj{"text": "x", "width": v}) }
	r("size", "sizes: 0 to 4096", width, "/view/props/width", 0, 4096, -1, 4097)
	left := func(v any) obj { return stackWith(obj{"left": v}) }
	r("offset", "position offsets: -4096 to 4096", left, "/view/children/0/props/left", -4096, 4096, -4097, 4097)
	spacing := func(v any) obj { return obj{"type": "column", "props": obj{"spacing": v}} }
	r("spacing", "spacing and inset: 0 to 128", spacing, "/view/props/spacing", 0, 128, -1, 129)
	inset := func(v any) obj {
		return obj{"type": "padding", "props": obj{"padding": obj{"left": v}}, "children": []any{text("x")}}
	}
	r("inset", "spacing and inset: 0 to 128", inset, "/view/props/padding/left", 0, 128, -0.5, 128.5)
	radius := func(v any) obj {
		return obj{"type": "surface", "props": obj{"border_radius": v}, "children": []any{text("x")}}
	}
	r("border-radius", "border_radius: 0 to 64", radius, "/view/props/border_radius", 0, 64, -1, 65)
	opacity := func(v any) obj { return prop("text", obj{"text": "x", "opacity": v}) }
	r("opacity", "opacity: 0 to 1", opacity, "/view/props/opacity", 0, 1, -0.01, 1.01)
	flex := func(v any) obj {
		return row(obj{"type": "expanded", "props": obj{"flex": v}, "children": []any{text("x")}})
	}
	r("flex", "flex: 1 to 24", flex, "/view/children/0/props/flex", 1, 24, 0, 25)
	border := func(v any) obj {
		return obj{"type": "surface", "props": obj{"border_width": v}, "children": []any{text("x")}}
	}
	r("border-width", "border_width: lower bound 0 (upper bound 16 chosen)", border, "/view/props/border_width", 0, 16, -1, 16.5)
	elev := func(v any) obj { return obj{"type": "card", "props": obj{"elevation": v}} }
	r("elevation", "elevation: lower bound 0 (upper bound 24 chosen)", elev, "/view/props/elevation", 0, 24, -1, 25)
	ratio := func(v any) obj { return prop("image", obj{"url": "{{data.s0.data.icon_url}}", "aspect_ratio": v}) }
	ratioCfg := func(v any) obj { return config(ratio(v), obj{"data_sources": sources(1)}) }
	add("aspect-ratio-min", "aspect_ratio: lower bound 0.1 (upper bound 10 chosen)", ratioCfg(0.1), ratioCfg(0.09), e("/view/props/aspect_ratio", CodeRange))
	add("aspect-ratio-max", "aspect_ratio: lower bound 0.1 (upper bound 10 chosen)", ratioCfg(10), ratioCfg(10.5), e("/view/props/aspect_ratio", CodeRange))
	return cs
}

func limitCaseFile(c limitCase) []byte {
	var cfg json.RawMessage
	if raw, ok := c.config.([]byte); ok {
		cfg = raw
	} else {
		b, err := json.Marshal(c.config)
		if err != nil {
			panic(err)
		}
		cfg = b
	}
	errs := c.errors
	if errs == nil {
		errs = [][2]string{}
	}
	out := struct {
		Rule   string          `json:"rule"`
		Config json.RawMessage `json:"config,omitempty"`
		Text   string          `json:"config_text,omitempty"`
		Errors [][2]string     `json:"errors"`
	}{Rule: c.rule, Errors: errs}
	if _, raw := c.config.([]byte); raw {
		out.Text = string(cfg)
	} else {
		out.Config = cfg
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// TestLimits runs every limit at the limit and one past it, and keeps the
// cases in testdata/configs/limits (go test -run TestLimits -update rewrites
// them) so that they can be read and run through pluginhost validate.
func TestLimits(t *testing.T) {
	m := loadManifest(t, "manifest.json")
	dir := "testdata/configs/limits"
	if *update {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
	}
	seen := map[string]bool{}
	for _, c := range limitCases() {
		t.Run(c.name, func(t *testing.T) {
			file := limitCaseFile(c)
			path := filepath.Join(dir, c.name+".json")
			seen[c.name+".json"] = true
			if *update {
				if err := os.WriteFile(path, file, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, file) {
				t.Fatalf("%s is stale or missing: go test ./validator -run TestLimits -update", path)
			}
			var raw []byte
			if b, ok := c.config.([]byte); ok {
				raw = b
			} else {
				raw, _ = json.Marshal(c.config)
			}
			quietAgrees(t, raw, m, "")
			r := CheckUIConfig(raw, m, "")
			want := c.errors
			if want == nil {
				want = [][2]string{}
			}
			if got := problemPairs(r.Errors); !samePairs(got, want) {
				t.Fatalf("rule: %s\nerrors = %v\nwant     %v%s", c.rule, got, want, messages(r.Errors))
			}
			if len(r.Warnings) > 0 {
				t.Fatalf("unexpected warnings:%s", messages(r.Warnings))
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s is not a limit case any more: go test ./validator -run TestLimits -update", f)
		}
	}
}
