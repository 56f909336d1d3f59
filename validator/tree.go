package validator

import (
	"fmt"
	"strings"
	"sync"

	"pluginhost/jsonschema"
	"pluginhost/uicatalog"
)

// appBarTypes are node types that would recreate the app bar inside the tree.
// Spec, Structural rules: "The app bar is not recreated inside the tree."
var appBarTypes = []string{"app_bar", "appbar", "top_app_bar", "toolbar"}

// tree checks the view and the tree-wide limits.
func (u *ui) tree(path string, v any) {
	u.node(path, v, 0, "", scope{})
	if u.nodes > uicatalog.MaxNodes {
		u.errorf(path, CodeTooManyNodes, "the tree has %d nodes; a tree has at most %d (node %d is at %s)", u.nodes, uicatalog.MaxNodes, uicatalog.MaxNodes+1, u.extraNode)
	}
}

// node checks one node and its subtree. depth is the node's depth (the root
// is 0); parent is the type of the parent node, "" for the root.
func (u *ui) node(path string, v any, depth int, parent string, sc scope) {
	m := u.object(path, v, "type", "props", "children")
	if m == nil {
		return
	}
	u.nodes++
	if u.nodes == uicatalog.MaxNodes+1 {
		u.extraNode = path
	}
	if depth == uicatalog.MaxTreeDepth+1 {
		u.errorf(path, CodeTooDeep, "this node is at depth %d; a tree is at most %d deep (the root, view, is depth 0)", depth, uicatalog.MaxTreeDepth)
	}
	typ := ""
	var nt *uicatalog.NodeType
	if tv, ok := m.get("type"); !ok {
		u.errorf(u.pkey(path, "type"), CodeRequired, "a node needs a type: one of %s", u.nodeTypes())
	} else if s, ok := u.str(u.pkey(path, "type"), tv); ok {
		typ = s
		if contains(appBarTypes, s) {
			u.errorf(u.pkey(path, "type"), CodeAppBarInTree, "the app bar is declared once, in the top-level app_bar, and is not recreated inside the tree")
		} else if nt, ok = u.cat.Node(s); !ok {
			u.errorf(u.pkey(path, "type"), CodeUnknownNodeType, "%q is not a node type; node types: %s", s, u.nodeTypes())
		}
	}
	var pm *object
	if pv, ok := m.get("props"); ok {
		pm = u.object(u.pkey(path, "props"), pv)
	}
	childScope := sc
	repeat := false
	if nt != nil {
		if len(nt.Parents) > 0 && !contains(nt.Parents, parent) {
			where := "the root of the tree"
			if parent != "" {
				where = "a child of " + parent
			}
			u.errorf(path, typ+codeParentSuffix, "%s must be a direct child of %s; here it is %s", typ, strings.Join(nt.Parents, " or "), where)
		}
		repeat, childScope = u.props(path, nt, pm, sc)
	}
	var kids []any
	cp := u.pkey(path, "children")
	if cv, ok := m.get("children"); ok {
		kids, _ = u.array(cp, cv)
	}
	n := len(kids)
	if n > uicatalog.MaxChildren {
		u.errorf(cp, CodeTooManyChildren, "this node has %d children; a node has at most %d", n, uicatalog.MaxChildren)
	}
	if nt != nil {
		switch {
		case repeat:
			if n != 1 {
				u.errorf(cp, CodeTemplateChild, "%s with items_source has exactly one child, the template drawn for each entry; it has %d", article(typ), n)
			}
		case nt.Children == uicatalog.ChildrenNone && n > 0:
			u.errorf(cp, CodeChildrenNotAllowed, "%s has no children; it has %d", article(typ), n)
		case nt.Children == uicatalog.ChildrenOne && n != 1:
			u.errorf(cp, CodeSingleChild, "%s has exactly one child; it has %d", article(typ), n)
		case nt.Children == uicatalog.ChildrenAtLeastOne && n == 0:
			u.errorf(cp, CodeMissingChild, "%s has at least one child; it has none", article(typ))
		}
	}
	for i, k := range kids {
		u.node(u.pidx(cp, i), k, depth+1, typ, childScope)
	}
}

func (u *ui) nodeTypes() string {
	names := make([]string, len(u.cat.Nodes))
	for i, n := range u.cat.Nodes {
		names[i] = n.Type
	}
	return strings.Join(names, ", ")
}

// nodeInfo indexes a node type's props, the common ones first, and the props
// of its constraints.
type nodeInfo struct {
	props       []*uicatalog.Prop
	index       map[string]int
	constraints [][]int
}

// maxNodeProps bounds the props of one node type (common ones included).
const maxNodeProps = 64

var nodeInfos = sync.OnceValue(func() map[string]*nodeInfo {
	c := uicatalog.Catalog()
	out := map[string]*nodeInfo{}
	for i := range c.Nodes {
		nt := &c.Nodes[i]
		info := &nodeInfo{index: map[string]int{}}
		add := func(p *uicatalog.Prop) {
			info.index[p.Name] = len(info.props)
			info.props = append(info.props, p)
		}
		for j := range c.CommonProps {
			add(&c.CommonProps[j])
		}
		for j := range nt.Props {
			add(&nt.Props[j])
		}
		if len(info.props) > maxNodeProps {
			panic("validator: node type " + nt.Type + " has too many props")
		}
		for _, k := range nt.Constraints {
			idx := make([]int, len(k.Props))
			for j, name := range k.Props {
				idx[j] = info.index[name]
			}
			info.constraints = append(info.constraints, idx)
		}
		out[nt.Type] = info
	}
	return out
})

// props checks a node's props. It reports whether the node repeats a template
// and returns the scope of its children.
func (u *ui) props(path string, nt *uicatalog.NodeType, pm *object, sc scope) (bool, scope) {
	pp := u.pkey(path, "props")
	info := nodeInfos()[nt.Type]
	var presentBuf [maxNodeProps]bool
	var valueBuf [maxNodeProps]any
	present, values := presentBuf[:len(info.props)], valueBuf[:len(info.props)]
	var members []member
	if pm != nil {
		members = pm.members
	}
	for _, mb := range members {
		k, v := mb.key, mb.val
		if i, ok := info.index[k]; ok {
			present[i], values[i] = true, v
			continue
		}
		u.warnf(u.pkey(pp, k), CodeUnknownProp, "%s has no prop %q; the host ignores it (props of %s: %s)", article(nt.Type), k, nt.Type, nodePropNames(nt))
		if def := rangedProps()[k]; def != nil {
			u.value(u.pkey(pp, k), def, v, sc)
		}
	}
	child := sc
	repeat := false
	for i, p := range info.props {
		if !present[i] {
			if p.Required {
				u.errorf(u.pkey(pp, p.Name), CodeRequired, "%s needs %s: %s", article(nt.Type), p.Name, p.Doc)
			}
			continue
		}
		v := values[i]
		at := u.pkey(pp, p.Name)
		switch {
		case p.Name == "items_source" && nt.Repeats:
			// The template reads item even when items_source has a problem
			// of its own, which is reported once, here.
			child.inItem, child.item = true, nil
			if vt, ok := u.bindingProp(at, p, v, sc); ok && vt.schema != nil {
				child.item = vt.schema.Items
			}
			repeat = true
		case p.Type == uicatalog.Color:
			lit := u.color(at, v)
			if lit == "" {
				continue
			}
			switch p.Name {
			case "color":
				if nt.Type == "surface" || nt.Type == "card" {
					child.bg, child.bgPath = lit, at
				} else if nt.Type == "text" || nt.Type == "icon" {
					u.contrast(at, lit, sc.bgPath, sc.bg, nt.Type+" colour")
				}
			case "text_color":
				if bg, ok := pm.val("color").(string); ok {
					if c, ok := uicatalog.ParseColor(bg); ok {
						u.contrast(at, lit, u.pkey(pp, "color"), normalColor(c), "badge text")
					}
				}
			}
		default:
			u.value(at, p, v, sc)
		}
	}
	u.constraints(pp, nt, info, present, pm)
	switch nt.Type {
	case "field", "select", "switch":
		u.writes(pp, nt, pm)
	}
	return repeat, child
}

func nodePropNames(nt *uicatalog.NodeType) string {
	names := make([]string, len(nt.Props))
	for i, p := range nt.Props {
		names[i] = p.Name
	}
	if len(names) == 0 {
		return "only the common props"
	}
	return strings.Join(names, ", ") + " and the common props"
}

var (
	rangedOnce sync.Once
	ranged     map[string]*uicatalog.Prop
)

// rangedProps maps the names of numeric props with a range of the catalog to
// their description, when every node that has the prop gives it the same
// range. A prop set on a node type that does not have it still gets its range
// checked, so that a value out of the specification's range never passes
// silently.
func rangedProps() map[string]*uicatalog.Prop {
	rangedOnce.Do(func() {
		c := uicatalog.Catalog()
		ranged = map[string]*uicatalog.Prop{}
		conflict := map[string]bool{}
		add := func(p *uicatalog.Prop) {
			if p.Type != uicatalog.Number && p.Type != uicatalog.Integer || p.Bindable {
				return
			}
			if prev, ok := ranged[p.Name]; ok && (prev.Range != p.Range || prev.Type != p.Type) {
				conflict[p.Name] = true
			}
			ranged[p.Name] = p
		}
		for i := range c.CommonProps {
			add(&c.CommonProps[i])
		}
		for i := range c.Nodes {
			for j := range c.Nodes[i].Props {
				add(&c.Nodes[i].Props[j])
			}
		}
		for name := range conflict {
			delete(ranged, name)
		}
	})
	return ranged
}

// constraints checks the rules that relate props of one node.
func (u *ui) constraints(pp string, nt *uicatalog.NodeType, info *nodeInfo, present []bool, pm *object) {
	for ci, k := range nt.Constraints {
		idx := info.constraints[ci]
		n, first, second := 0, -1, -1
		for _, i := range idx {
			if present[i] {
				n++
				if first < 0 {
					first = i
				} else if second < 0 {
					second = i
				}
			}
		}
		names := func() string { return strings.Join(k.Props, ", ") }
		both := func() string { return info.props[first].Name + " and " + info.props[second].Name }
		switch k.Kind {
		case uicatalog.AtLeastOneOf:
			if n == 0 {
				u.errorf(pp, k.Code, "%s needs at least one of %s", article(nt.Type), names())
			}
		case uicatalog.AtMostOneOf:
			if n > 1 {
				u.errorf(u.pkey(pp, info.props[second].Name), k.Code, "%s takes at most one of %s; it has %s", article(nt.Type), names(), both())
			}
		case uicatalog.ExactlyOneOf:
			if n == 0 {
				u.errorf(pp, k.Code, "%s needs exactly one of %s; it has none", article(nt.Type), names())
			} else if n > 1 {
				u.errorf(u.pkey(pp, info.props[second].Name), k.Code, "%s takes exactly one of %s; it has %s", article(nt.Type), names(), both())
			}
		case uicatalog.Requires:
			if present[idx[0]] && !present[idx[1]] {
				u.errorf(u.pkey(pp, k.Props[1]), k.Code, "%s with %s needs %s too", article(nt.Type), k.Props[0], k.Props[1])
			}
		case uicatalog.Ordered:
			if !present[idx[0]] || !present[idx[1]] {
				continue
			}
			lo, ok1 := numberOf(pm.val(k.Props[0]))
			hi, ok2 := numberOf(pm.val(k.Props[1]))
			if ok1 && ok2 && lo > hi {
				u.errorf(u.pkey(pp, k.Props[0]), k.Code, "%s %s is above %s %s", k.Props[0], jsonschema.FormatNumber(lo), k.Props[1], jsonschema.FormatNumber(hi))
			}
		}
	}
}

// writes checks that what an input writes to its state key fits the key's
// initial value.
func (u *ui) writes(pp string, nt *uicatalog.NodeType, pm *object) {
	key, ok := pm.val("state_key").(string)
	if !ok {
		return
	}
	at := u.pkey(pp, "state_key")
	switch nt.Type {
	case "switch":
		u.stateType(at, key, jsonschema.Boolean, "this switch")
	case "field":
		w := jsonschema.String
		if k, _ := pm.val("keyboard").(string); k == "number" {
			w = jsonschema.Number | jsonschema.Integer
		}
		u.stateType(at, key, w, "this field")
	case "select":
		opts, ok := pm.val("options").([]any)
		if !ok {
			return
		}
		var w jsonschema.Types
		for _, o := range opts {
			if om, ok := o.(*object); ok {
				w |= jsonschema.TypeOf(om.val("value"))
			}
		}
		if w != jsonschema.Any {
			u.stateType(at, key, w, "this select")
		}
	}
}

// contrast compares a foreground colour with the background it is drawn on.
func (u *ui) contrast(fgPath, fg, bgPath, bg, what string) {
	if bg == "" {
		return
	}
	if fg == bg {
		u.errorf(fgPath, CodeContrast, "the %s %s is identical to its background at %s: the text cannot be read", what, displayColor(fg), bgPath)
		return
	}
	fc, _ := uicatalog.ParseColor(fg)
	bc, _ := uicatalog.ParseColor(bg)
	if r, ok := uicatalog.ContrastRatio(fc, bc); ok && r < uicatalog.MinContrast {
		u.warnf(fgPath, CodeLowContrast, "the %s %s on %s (at %s) has a contrast of %s:1; at least %s:1 is needed for text (WCAG 2)", what, displayColor(fg), displayColor(bg), bgPath, ratioText(r), jsonschema.FormatNumber(uicatalog.MinContrast))
	}
}

// displayColor writes a normalized colour as #rrggbb when it is opaque.
func displayColor(c string) string { return strings.TrimSuffix(c, "ff") }

func ratioText(r float64) string { return fmt.Sprintf("%.2f", r) }
