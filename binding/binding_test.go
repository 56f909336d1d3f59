package binding

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

type conformance struct {
	Contexts  map[string]any `json:"contexts"`
	Templates []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
		Context  any    `json:"context"`
		Want     any    `json:"want"`
	} `json:"templates"`
	InvalidTemplates []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
		Code     string `json:"code"`
	} `json:"invalid_templates"`
	Conditions []struct {
		Name      string `json:"name"`
		Condition any    `json:"condition"`
		Context   any    `json:"context"`
		Want      bool   `json:"want"`
	} `json:"conditions"`
	InvalidConditions []struct {
		Name      string `json:"name"`
		Condition any    `json:"condition"`
		Problems  []struct {
			Path string `json:"path"`
			Code string `json:"code"`
		} `json:"problems"`
	} `json:"invalid_conditions"`
}

func loadConformance(t *testing.T) *conformance {
	t.Helper()
	raw, err := os.ReadFile("testdata/conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var c conformance
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if len(c.Templates) == 0 || len(c.InvalidTemplates) == 0 || len(c.Conditions) == 0 || len(c.InvalidConditions) == 0 {
		t.Fatal("conformance corpus has an empty section")
	}
	return &c
}

func (c *conformance) context(t *testing.T, v any) any {
	if name, ok := v.(string); ok {
		ctx, ok := c.Contexts[name]
		if !ok {
			t.Fatalf("unknown context %q", name)
		}
		return ctx
	}
	return v
}

func TestConformanceTemplates(t *testing.T) {
	c := loadConformance(t)
	for _, tc := range c.Templates {
		t.Run(tc.Name, func(t *testing.T) {
			tpl, err := Parse(tc.Template)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.Template, err)
			}
			got := tpl.Eval(c.context(t, tc.Context))
			if !sameJSON(got, tc.Want) {
				t.Fatalf("Eval(%q) = %#v, want %#v", tc.Template, got, tc.Want)
			}
		})
	}
}

// sameJSON is Equal, plus the requirement that strings are strings: Equal
// already never mixes types.
func sameJSON(a, b any) bool { return Equal(a, b) }

func TestConformanceInvalidTemplates(t *testing.T) {
	c := loadConformance(t)
	for _, tc := range c.InvalidTemplates {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := Parse(tc.Template)
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("Parse(%q) = %v, want error %s", tc.Template, err, tc.Code)
			}
			if e.Code != tc.Code {
				t.Fatalf("Parse(%q) code = %s (%s), want %s", tc.Template, e.Code, e.Message, tc.Code)
			}
			if e.Message == "" || e.Offset < 0 || e.Offset > len(tc.Template) {
				t.Fatalf("error %+v lacks a message or has a bad offset", e)
			}
		})
	}
}

func TestConformanceConditions(t *testing.T) {
	c := loadConformance(t)
	for _, tc := range c.Conditions {
		t.Run(tc.Name, func(t *testing.T) {
			cond, ps := ParseCondition(tc.Condition)
			if len(ps) > 0 {
				t.Fatalf("ParseCondition: %+v", ps)
			}
			if got := cond.Eval(c.context(t, tc.Context)); got != tc.Want {
				t.Fatalf("Eval = %v, want %v", got, tc.Want)
			}
		})
	}
}

func TestConformanceInvalidConditions(t *testing.T) {
	c := loadConformance(t)
	for _, tc := range c.InvalidConditions {
		t.Run(tc.Name, func(t *testing.T) {
			_, ps := ParseCondition(tc.Condition)
			if len(ps) != len(tc.Problems) {
				t.Fatalf("got problems %+v, want %+v", ps, tc.Problems)
			}
			for i, w := range tc.Problems {
				if ps[i].Pointer != w.Path || ps[i].Code != w.Code || ps[i].Message == "" {
					t.Errorf("problem %d = %+v, want %s at %q", i, ps[i], w.Code, w.Path)
				}
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	a, b := 0.1, 0.2
	point3 := a + b
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-1, "-1"}, {1.5, "1.5"}, {100, "100"}, {0.1, "0.1"},
		{123456789, "123456789"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"},
		{1.2345e22, "1.2345e+22"}, {1e-6, "0.000001"}, {1.5e-6, "0.0000015"}, {1e-7, "1e-7"},
		{-2.5e-8, "-2.5e-8"}, {point3, "0.30000000000000004"}, {1 << 53, "9007199254740992"},
		{5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.f); got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestParseParts(t *testing.T) {
	tpl, err := Parse("Hi {{ state.name }}, \\{{ {{item.tags[2]}}")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range tpl.Parts {
		if p.Path != nil {
			got = append(got, "<"+p.Path.String()+">")
		} else {
			got = append(got, p.Text)
		}
	}
	want := []string{"Hi ", "<state.name>", ", {{ ", "<item.tags[2]>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("parts = %q, want %q", got, want)
	}
	if tpl.Whole() || !tpl.HasBindings() {
		t.Fatal("mixed template reported as whole or without bindings")
	}
	if tpl.Parts[1].Offset != 3 || tpl.Parts[3].Offset != 25 {
		t.Fatalf("offsets = %d %d", tpl.Parts[1].Offset, tpl.Parts[3].Offset)
	}
}

func TestErrorOffsetPointsAtTheProblem(t *testing.T) {
	_, err := Parse("abc {{ state.a b }}")
	e := err.(*Error)
	if e.Code != CodeSyntax || e.Offset != 14 {
		t.Fatalf("got %+v, want binding_syntax at byte 14 (the space)", e)
	}
}

func TestTypeOf(t *testing.T) {
	tests := map[string]string{
		"data.w.completed":                     TypeBoolean,
		"data.w.summary":                       TypeString,
		"data.w.data":                          TypeAny,
		"data.w.data.x":                        TypeAny,
		"context.screen.width":                 TypeNumber,
		"context.screen.size_class":            TypeString,
		"context.permissions.network":          TypeBoolean,
		"context.connected":                    TypeBoolean,
		"context.connections.github":           TypeObject,
		"context.connections.github.connected": TypeBoolean,
		"context.connections.github.label":     TypeString,
		"context.connections.github.account":   TypeAny,
		"context.route.id":                     TypeAny,
		"state.x":                              TypeAny,
		"item":                                 TypeAny,
	}
	for path, want := range tests {
		p, err := ParsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := TypeOf(p); got != want {
			t.Errorf("TypeOf(%s) = %s, want %s", path, got, want)
		}
	}
}

func TestRootsListsTheSpecification(t *testing.T) {
	var pats []string
	for _, r := range Roots() {
		pats = append(pats, r.Pattern)
	}
	want := "data.<source_id>.completed data.<source_id>.summary data.<source_id>.data.… item.… state.<key>.… " +
		"context.platform context.screen.width context.screen.height context.screen.size_class " +
		"context.permissions.<permission> context.connections.<connection> context.connections.<connection>.connected " +
		"context.connections.<connection>.label context.connections.<connection>.account context.connected " +
		"context.loading.<source> context.errors.<source>.… context.route.<parameter>.…"
	if strings.Join(pats, " ") != want {
		t.Fatalf("Roots() = %s", strings.Join(pats, " "))
	}
}

func TestConditionLeavesAndWalk(t *testing.T) {
	var v any
	json.Unmarshal([]byte(`{"all":[{"path":"state.a","exists":true},{"not":{"any":[{"path":"state.b","equals":1},{"path":"state.c","equals":2}]}}]}`), &v)
	c, ps := ParseCondition(v)
	if len(ps) != 0 {
		t.Fatal(ps)
	}
	if c.Leaves() != 3 {
		t.Fatalf("Leaves = %d, want 3", c.Leaves())
	}
	var ptrs []string
	c.Walk(func(x *Condition) { ptrs = append(ptrs, x.Pointer) })
	want := ",/all/0,/all/1,/all/1/not,/all/1/not/any/0,/all/1/not/any/1"
	if strings.Join(ptrs, ",") != want {
		t.Fatalf("Walk pointers = %s", strings.Join(ptrs, ","))
	}
}

// FuzzBinding checks that parsing and evaluating any template never panics,
// that a parsed template's paths always pass CheckPath, and that an error
// always carries a code and an offset inside the template.
func FuzzBinding(f *testing.F) {
	for _, s := range []string{"", "Hi {{state.name}}", "{{data.w.data.items[0].title}}", "\\{{x}}", "{{", "{{}}",
		"{{context.screen.width}}px", "{{item.a[1][2]}}", "{{ a.b }}", "{{state.x[999999999]}}"} {
		f.Add(s)
	}
	var ctx any
	json.Unmarshal([]byte(`{"state":{"name":"Ada","x":[1,2]},"item":{"a":[0,[1,2,3]]},"data":{"w":{"data":{"items":[{"title":"t"}]}}}}`), &ctx)
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := Parse(s)
		if err != nil {
			e := err.(*Error)
			if e.Code == "" || e.Message == "" || e.Offset < 0 || e.Offset > len(s) {
				t.Fatalf("bad error %+v for %q", e, s)
			}
			return
		}
		for _, p := range tpl.Parts {
			if p.Path != nil {
				if err := CheckPath(p.Path); err != nil {
					t.Fatalf("parsed path %s fails CheckPath: %v", p.Path, err)
				}
			}
		}
		v := tpl.Eval(ctx)
		if !tpl.Whole() {
			if _, ok := v.(string); !ok {
				t.Fatalf("text template %q gave %T", s, v)
			}
		}
	})
}
