package binding

import (
	"fmt"
	"strings"
)

// Value types a readable path is known to have (TypeAny: whatever was stored).
const (
	TypeAny     = "any"
	TypeBoolean = "boolean"
	TypeNumber  = "number"
	TypeString  = "string"
	TypeObject  = "object"
)

// shape describes what may follow a path prefix. The tree below is the
// specification's list of readable roots ("data_sources[]": "Results are read
// through ... Other readable roots: ...").
type shape struct {
	// name is a literal segment, or a placeholder such as <source_id> that
	// matches any name.
	name     string
	children []*shape
	// readable: a path may end here; typ is then the value's type.
	readable bool
	typ      string
	// open: any further names and indexes may follow (a JSON value of unknown
	// shape).
	open bool
	doc  string
}

func (s *shape) placeholder() bool { return strings.HasPrefix(s.name, "<") }

var roots = []*shape{
	{name: "data", doc: "results of the config's data sources", children: []*shape{
		{name: "<source_id>", doc: "a data source declared in data_sources", children: []*shape{
			{name: "completed", readable: true, typ: TypeBoolean, doc: "true once the source has a result"},
			{name: "summary", readable: true, typ: TypeString, doc: "the result's human-readable summary"},
			{name: "data", readable: true, open: true, typ: TypeAny, doc: "the result's data; deeper paths are checked against the capability's output_schema"},
		}},
	}},
	{name: "item", readable: true, open: true, typ: TypeAny, doc: "the current entry, only inside the template of a repeated node (items_source)"},
	{name: "state", doc: "the screen's state", children: []*shape{
		{name: "<key>", readable: true, open: true, typ: TypeAny, doc: "a key declared in initial_state"},
	}},
	{name: "context", doc: "facts the host provides", children: []*shape{
		{name: "platform", readable: true, typ: TypeString, doc: "android, ios, web, macos, windows or linux"},
		{name: "screen", children: []*shape{
			{name: "width", readable: true, typ: TypeNumber, doc: "logical pixels"},
			{name: "height", readable: true, typ: TypeNumber, doc: "logical pixels"},
			{name: "size_class", readable: true, typ: TypeString, doc: "compact (< 600), medium (600 to 839) or expanded (>= 840)"},
		}},
		{name: "permissions", children: []*shape{
			{name: "<permission>", readable: true, typ: TypeBoolean, doc: "whether the active Instance holds the permission (storage, ai_storage, network)"},
		}},
		{name: "connections", children: []*shape{
			{name: "<connection>", readable: true, typ: TypeObject, doc: "a connection the manifest declares (by its id; the specification's <credential>): {connected, label, account}, never its secret", children: []*shape{
				{name: "connected", readable: true, typ: TypeBoolean, doc: "whether the Instance has connected it"},
				{name: "label", readable: true, typ: TypeString, doc: "its label, as the manifest declares it"},
				{name: "account", readable: true, typ: TypeAny, doc: "the account it is connected as, as the provider names it (a string), or null"},
			}},
		}},
		{name: "connected", readable: true, typ: TypeBoolean, doc: "whether every connection the manifest declares is connected (true when it declares none)"},
		{name: "loading", children: []*shape{
			{name: "<source>", readable: true, typ: TypeBoolean, doc: "whether the data source is loading"},
		}},
		{name: "errors", children: []*shape{
			{name: "<source>", readable: true, open: true, typ: TypeAny, doc: "the data source's last error ({code, message}), or null"},
		}},
		{name: "route", children: []*shape{
			{name: "<parameter>", readable: true, open: true, typ: TypeAny, doc: "a parameter passed by the navigate action that opened this screen"},
		}},
	}},
}

// CheckPath checks a parsed path against the readable roots and MaxDepth.
func CheckPath(p Path) error {
	if len(p) > MaxDepth {
		return &Error{CodeDepth, 0, fmt.Sprintf("path %s has %d segments; a binding reads at most %d", p, len(p), MaxDepth)}
	}
	_, _, err := walkShape(p)
	return err
}

// TypeOf returns the type the path's root shape gives its value: one of the
// Type constants. Paths into data, item, state and route values are TypeAny.
func TypeOf(p Path) string {
	s, n, err := walkShape(p)
	if err != nil || n < len(p) {
		return TypeAny
	}
	return s.typ
}

// walkShape follows p through the shape tree and returns the last shape
// reached and how many segments led to it (fewer than len(p) when the path
// goes deeper into an open JSON value).
func walkShape(p Path) (*shape, int, error) {
	if len(p) == 0 || p[0].IsIndex {
		return nil, 0, &Error{CodeSyntax, 0, "a path starts with a root name"}
	}
	level := roots
	var cur *shape
	for i, seg := range p {
		if cur != nil && cur.open {
			return cur, i, nil
		}
		var next *shape
		if !seg.IsIndex {
			for _, c := range level {
				if c.name == seg.Name || c.placeholder() {
					next = c
					break
				}
			}
		}
		if next == nil {
			if i == 0 {
				return nil, 0, &Error{CodeRoot, 0, fmt.Sprintf("%q is not a readable root; a path starts with data, item, state or context", seg.Name)}
			}
			return nil, 0, &Error{CodePath, 0, fmt.Sprintf("in %s: after %s comes %s, not %s", p, p[:i], choices(level), segText(seg))}
		}
		cur = next
		level = next.children
	}
	if !cur.readable {
		return nil, 0, &Error{CodePath, 0, fmt.Sprintf("%s cannot be read as a whole; continue with %s", p, choices(cur.children))}
	}
	return cur, len(p), nil
}

func segText(s Segment) string {
	if s.IsIndex {
		return fmt.Sprintf("[%d]", s.Index)
	}
	return s.Name
}

func choices(level []*shape) string {
	if len(level) == 0 {
		return "nothing (the path ends here)"
	}
	names := make([]string, len(level))
	for i, c := range level {
		names[i] = c.name
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// Root describes one readable path pattern of the specification.
type Root struct {
	// Pattern is the path with placeholders, such as data.<source_id>.completed;
	// a trailing ".…" means deeper names and indexes may follow.
	Pattern string `json:"pattern"`
	Type    string `json:"type"`
	Doc     string `json:"doc"`
}

// Roots lists every readable path pattern, in the order of the specification.
func Roots() []Root {
	var out []Root
	var walk func(prefix string, level []*shape)
	walk = func(prefix string, level []*shape) {
		for _, s := range level {
			name := s.name
			if prefix != "" {
				name = prefix + "." + s.name
			}
			if s.readable {
				pat := name
				if s.open {
					pat += ".…"
				}
				out = append(out, Root{Pattern: pat, Type: s.typ, Doc: s.doc})
			}
			walk(name, s.children)
		}
	}
	walk("", roots)
	return out
}
