package uicatalog

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

// specNodeTypes is the list of the specification, "view / nodes".
const specNodeTypes = "column, row, wrap, grid, stack, positioned, scroll, padding, center, expanded, surface, card, section, text, icon, image, avatar, badge, divider, spacer, button, chip, metric, progress, list, timeline, calendar, chart, form, dialog, sheet, field, select, switch, empty"

func TestNodeTypesAreTheSpecifications(t *testing.T) {
	var got []string
	for _, n := range Catalog().Nodes {
		got = append(got, n.Type)
	}
	if strings.Join(got, ", ") != specNodeTypes {
		t.Fatalf("node types = %s\nwant %s", strings.Join(got, ", "), specNodeTypes)
	}
}

func TestStructuralRulesOfTheSpecification(t *testing.T) {
	c := Catalog()
	for _, typ := range []string{"positioned", "scroll", "padding", "center", "expanded", "badge"} {
		if n, _ := c.Node(typ); n.Children != ChildrenOne {
			t.Errorf("%s: children = %s, want exactly one", typ, n.Children)
		}
	}
	if n, _ := c.Node("surface"); n.Children != ChildrenAtLeastOne {
		t.Errorf("surface: children = %s, want at least one", n.Children)
	}
	if n, _ := c.Node("positioned"); strings.Join(n.Parents, ",") != "stack" {
		t.Errorf("positioned parents = %v", n.Parents)
	}
	if n, _ := c.Node("expanded"); strings.Join(n.Parents, ",") != "row,column" {
		t.Errorf("expanded parents = %v", n.Parents)
	}
	n, _ := c.Node("positioned")
	found := false
	for _, k := range n.Constraints {
		if k.Kind == AtLeastOneOf && strings.Join(k.Props, ",") == "left,top,right,bottom" {
			found = true
		}
	}
	if !found {
		t.Error("positioned does not require one of left, top, right, bottom")
	}
}

var iconName = regexp.MustCompile(`^[a-z0-9][a-z0-9_]{0,63}$`)

// checkProps checks the catalog's own consistency: every prop documented,
// typed, with values for enums and defaults that are themselves valid.
func checkProps(t *testing.T, where string, ps []Prop) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range ps {
		w := where + "." + p.Name
		if seen[p.Name] {
			t.Errorf("%s declared twice", w)
		}
		seen[p.Name] = true
		if p.Doc == "" {
			t.Errorf("%s has no doc", w)
		}
		if p.Type == "" {
			t.Errorf("%s has no type", w)
		}
		if p.Type == Enum && len(p.Values) == 0 && where != "node" {
			t.Errorf("%s is an enum without values", w)
		}
		if (p.Type == Number || p.Type == Integer) && (p.Min == nil || p.Max == nil) && where != "config" {
			t.Errorf("%s is a number without a range", w)
		}
		if p.Type == Binding && p.Expect == "" {
			t.Errorf("%s is a binding without an expected type", w)
		}
		switch d := p.Default.(type) {
		case nil:
		case string:
			switch p.Type {
			case Enum:
				if !containsString(p.Values, d) {
					t.Errorf("%s default %q is not one of %v", w, d, p.Values)
				}
			case Color:
				if !IsColorRole(d) {
					t.Errorf("%s default %q is not a colour role", w, d)
				}
			case Icon:
				if !iconName.MatchString(d) {
					t.Errorf("%s default %q is not an icon name", w, d)
				}
			case Field:
			default:
				t.Errorf("%s has a string default for type %s", w, p.Type)
			}
		case float64:
			if p.Min == nil || d < *p.Min || d > *p.Max {
				t.Errorf("%s default %v is outside its range", w, d)
			}
			if p.Type == Integer && d != math.Trunc(d) {
				t.Errorf("%s default %v is not an integer", w, d)
			}
		case bool:
			if p.Type != Boolean {
				t.Errorf("%s has a boolean default for type %s", w, p.Type)
			}
		}
		if len(p.Members) > 0 {
			checkProps(t, w, p.Members)
		}
	}
}

func TestCatalogIsConsistent(t *testing.T) {
	c := Catalog()
	checkProps(t, "common", c.CommonProps)
	common := map[string]bool{}
	for _, p := range c.CommonProps {
		common[p.Name] = true
	}
	for _, n := range c.Nodes {
		checkProps(t, n.Type, n.Props)
		for _, p := range n.Props {
			if common[p.Name] {
				t.Errorf("%s.%s shadows a common prop", n.Type, p.Name)
			}
			if _, ok := n.Prop(p.Name); !ok {
				t.Errorf("%s.%s is not indexed", n.Type, p.Name)
			}
		}
		if _, ok := n.Prop("visible_when"); !ok {
			t.Errorf("%s lacks the common props", n.Type)
		}
		for _, parent := range n.Parents {
			if _, ok := c.Node(parent); !ok {
				t.Errorf("%s: parent %s is not a node type", n.Type, parent)
			}
		}
		if n.Repeats {
			if p, ok := n.Prop("items_source"); !ok || p.Type != Binding || n.Children != ChildrenMany {
				t.Errorf("%s repeats without an items_source binding or with fixed children", n.Type)
			}
		}
		for _, k := range n.Constraints {
			if k.Code == "" || len(k.Props) < 2 {
				t.Errorf("%s: constraint %+v lacks a code or props", n.Type, k)
			}
			for _, name := range k.Props {
				if _, ok := n.Prop(name); !ok {
					t.Errorf("%s: constraint %s names unknown prop %s", n.Type, k.Kind, name)
				}
			}
		}
	}
	for _, a := range c.Actions {
		checkProps(t, "action "+a.Type, a.Fields)
	}
	checkProps(t, "config", c.Config.TopLevel)
	checkProps(t, "app_bar", c.Config.AppBar)
	checkProps(t, "navigation", c.Config.Navigation)
	checkProps(t, "data_source", c.Config.DataSource)
	checkProps(t, "a2ui", c.Config.A2UI)
	checkProps(t, "theme", c.Config.Theme)
	for _, p := range c.ContrastPairs {
		if !IsColorRole(p.Foreground) || !IsColorRole(p.Background) {
			t.Errorf("contrast pair %+v names an unknown role", p)
		}
	}
	seen := map[string]bool{}
	for _, r := range c.ColorRoles {
		if seen[r] || !regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`).MatchString(r) {
			t.Errorf("colour role %q is repeated or not snake_case", r)
		}
		seen[r] = true
	}
}

func TestSpecRanges(t *testing.T) {
	want := map[string][2]float64{
		RangeSize: {0, 4096}, RangeOffset: {-4096, 4096}, RangeSpacing: {0, 128}, RangeBorderRadius: {0, 64},
		RangeOpacity: {0, 1}, RangeFlex: {1, 24}, RangeRailBreakpoint: {480, 1600}, RangeRefresh: {30, 86400},
	}
	lower := map[string]float64{RangeBorderWidth: 0, RangeElevation: 0, RangeAspectRatio: 0.1}
	for _, r := range Catalog().Ranges {
		if w, ok := want[r.Name]; ok && (r.Min != w[0] || r.Max != w[1]) {
			t.Errorf("range %s = %v..%v, want %v..%v", r.Name, r.Min, r.Max, w[0], w[1])
		}
		if lo, ok := lower[r.Name]; ok && (r.Min != lo || r.Max <= lo) {
			t.Errorf("range %s = %v..%v, want lower bound %v", r.Name, r.Min, r.Max, lo)
		}
	}
}

func TestGeneratedFilesAreUpToDate(t *testing.T) {
	for file, want := range map[string][]byte{"../docs/ui-catalog.md": Markdown(), "catalog.json": JSON()} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./uicatalog", file)
		}
	}
}

func TestJSONRoundTrips(t *testing.T) {
	var d Data
	if err := json.Unmarshal(JSON(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Nodes) != len(Catalog().Nodes) || len(d.ColorRoles) == 0 || len(d.Bindings.Roots) == 0 {
		t.Fatalf("decoded catalog is incomplete: %d nodes", len(d.Nodes))
	}
	p, _ := Lookup(d.Nodes[0].Props, "spacing")
	if p == nil || p.Max == nil || *p.Max != 128 {
		t.Fatalf("ranges are not filled into the JSON: %+v", p)
	}
}

func TestParseColor(t *testing.T) {
	tests := []struct {
		in   string
		want RGBA
		ok   bool
	}{
		{"#fff", RGBA{255, 255, 255, 255}, true},
		{"#1A73e8", RGBA{0x1a, 0x73, 0xe8, 255}, true},
		{"#00000080", RGBA{0, 0, 0, 0x80}, true},
		{"#ffff", RGBA{}, false},
		{"#ggg", RGBA{}, false},
		{"fff", RGBA{}, false},
		{"#", RGBA{}, false},
		{"#1234567890", RGBA{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseColor(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseColor(%q) = %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestContrastRatio(t *testing.T) {
	c := func(s string) RGBA { v, _ := ParseColor(s); return v }
	tests := []struct {
		fg, bg string
		want   float64
	}{
		{"#000", "#fff", 21},
		{"#fff", "#fff", 1},
		{"#777777", "#ffffff", 4.48},
		{"#767676", "#ffffff", 4.54},
		{"#1a73e8", "#ffffff", 4.50},
	}
	for _, tt := range tests {
		got, ok := ContrastRatio(c(tt.fg), c(tt.bg))
		if !ok || math.Abs(got-tt.want) > 0.01 {
			t.Errorf("ContrastRatio(%s, %s) = %.3f, want %.2f", tt.fg, tt.bg, got, tt.want)
		}
	}
	if _, ok := ContrastRatio(c("#00000080"), c("#fff")); ok {
		t.Error("a translucent colour must not be decided")
	}
}
