package validator

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"pluginhost/binding"
	"pluginhost/jsonschema"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// vtype is what a binding is known to read: a set of JSON types (jsonschema.Any when
// unknown) and, for reads into a capability result, the schema there.
type vtype struct {
	mask   jsonschema.Types
	schema *jsonschema.Schema
}

var anyType = vtype{}

// template parses s when it may hold bindings and checks each path. It
// returns nil when s cannot hold a binding or breaks the grammar (reported),
// and what the template reads: a text template reads a string.
func (u *ui) template(path, s string, sc scope) (*binding.Template, vtype) {
	if !binding.MayBind(s) {
		return nil, anyType
	}
	t, err := binding.Parse(s)
	if err != nil {
		e := err.(*binding.Error)
		u.errorf(path, e.Code, "%s (in %s at character %d)", e.Message, jsonschema.Text(s), runeCount(s[:e.Offset])+1)
		return nil, anyType
	}
	var vt vtype
	for _, part := range t.Parts {
		if part.Path != nil {
			vt = u.path(path, part.Path, sc)
		}
	}
	if !t.Whole() {
		vt = vtype{mask: jsonschema.String}
	}
	return t, vt
}

// path checks what a binding path reads against the declarations of the
// config and the schemas of the manifest, and returns what it reads.
func (u *ui) path(at string, p binding.Path, sc scope) vtype {
	base := vtype{mask: maskOf(binding.TypeOf(p))}
	switch p.Root() {
	case "data":
		id := p[1].Name
		src, ok := u.sources[id]
		if !ok {
			u.errorf(at, CodeUnknownSource, "%s reads data source %q, which data_sources does not declare (%s)", p, id, u.declaredSources())
			return base
		}
		src.used = true
		if u.curSource != "" {
			u.deps[u.curSource] = append(u.deps[u.curSource], id)
		}
		if p[2].Name == "data" {
			what := "the output_schema of " + src.cap
			return u.resolve(at, p, 3, src.output, what)
		}
		return base
	case "item":
		if !sc.inItem {
			u.errorf(at, CodeItemScope, "%s reads item, which exists only inside the template of a repeated node (a list, grid or timeline with items_source) or an item-scoped action", p)
			return base
		}
		return u.resolve(at, p, 1, sc.item, "the items it repeats over")
	case "state":
		if _, ok := u.state[p[1].Name]; !ok {
			u.errorf(at, CodeUndeclaredStateKey, "%s reads state key %q, which initial_state does not declare (%s)", p, p[1].Name, u.declaredKeys())
		}
		return base
	case "context":
		switch p[1].Name {
		case "loading", "errors":
			if src, ok := u.sources[p[2].Name]; ok {
				src.used = true
			} else {
				u.errorf(at, CodeUnknownSource, "%s names data source %q, which data_sources does not declare (%s)", p, p[2].Name, u.declaredSources())
			}
		case "permissions":
			if name := p[2].Name; name != models.PermissionStorage && name != models.PermissionAIStorage && name != models.PermissionNetwork {
				u.errorf(at, CodeUnknownPermission, "%s names permission %q; permissions are storage, ai_storage, network", p, name)
			}
		case "connections":
			u.connection(at, p)
		case "route":
			u.use(uicatalog.FeatureRouteData, at)
			name := p[2].Name
			switch {
			case !u.routeKnown:
				u.warnf(at, CodeRouteUnchecked, "%s reads route parameter %q; whether a navigate action passes it is checked only when the whole plugin is validated", p, name)
			case !u.routeParams[name]:
				u.errorf(at, CodeUndeclaredRoute, "%s reads route parameter %q, but no navigate action of the plugin passes it to this extension (%s)", p, name, u.routeList())
			}
		}
	}
	return base
}

// connection checks that context.connections.<id> names a connection the
// manifest declares (when there is a manifest to say).
func (u *ui) connection(at string, p binding.Path) {
	if u.m == nil {
		return
	}
	var ids []string
	for _, c := range u.m.Connections {
		if c.ID == p[2].Name {
			return
		}
		ids = append(ids, c.ID)
	}
	declared := "it declares none"
	if len(ids) > 0 {
		declared = "it declares " + strings.Join(ids, ", ")
	}
	u.errorf(at, CodeUnknownConnection, "%s names connection %q, which the manifest does not declare (%s)", p, p[2].Name, declared)
}

func (u *ui) routeList() string {
	if len(u.routeParams) == 0 {
		return "none is passed"
	}
	names := make([]string, 0, len(u.routeParams))
	for k := range u.routeParams {
		names = append(names, k)
	}
	sortStrings(names)
	return "passed: " + strings.Join(names, ", ")
}

func maskOf(t string) jsonschema.Types {
	switch t {
	case binding.TypeBoolean:
		return jsonschema.Boolean
	case binding.TypeNumber:
		return jsonschema.Number | jsonschema.Integer
	case binding.TypeString:
		return jsonschema.String
	case binding.TypeObject:
		return jsonschema.Object
	}
	return jsonschema.Any
}

// resolve follows p[from:] through schema s and reports the first segment
// that cannot exist.
func (u *ui) resolve(at string, p binding.Path, from int, s *jsonschema.Schema, what string) vtype {
	cur := s
	for i := from; i < len(p); i++ {
		if cur == nil {
			return anyType
		}
		seg := p[i]
		here := p[:i]
		if seg.IsIndex {
			if cur.Types != jsonschema.Any && cur.Types&jsonschema.Array == 0 {
				u.errorf(at, CodeSchemaPath, "%s does not exist: %s is %s in %s, so it has no index %s", p, here, cur.Types, what, segString(seg))
				return anyType
			}
			cur = cur.Items
			continue
		}
		if cur.Types != jsonschema.Any && cur.Types&jsonschema.Object == 0 {
			u.errorf(at, CodeSchemaPath, "%s does not exist: %s is %s in %s, so it has no member %q", p, here, cur.Types, what, seg.Name)
			return anyType
		}
		if sub, ok := cur.Props[seg.Name]; ok {
			cur = sub
			continue
		}
		if cur.Closed() {
			members := "none"
			if len(cur.Props) > 0 {
				members = strings.Join(cur.PropNames(), ", ")
			}
			u.errorf(at, CodeSchemaPath, "%s does not exist: %s has no member %q in %s (members: %s)", p, here, seg.Name, what, members)
			return anyType
		}
		cur = nil
	}
	if cur == nil {
		return anyType
	}
	return vtype{mask: cur.Types, schema: cur}
}

func segString(s binding.Segment) string {
	if s.IsIndex {
		return fmt.Sprintf("[%d]", s.Index)
	}
	return s.Name
}

// against checks a JSON value of the config (arguments, parameters,
// set_state values) whose strings may be templates, against schema s when it
// is known. what names the schema for messages.
func (u *ui) against(at string, v any, s *jsonschema.Schema, sc scope, what string) {
	c := jsonschema.Checker{What: what, Quiet: u.quiet, Report: u.problem,
		Visit: func(at string, v any, s *jsonschema.Schema) bool {
			str, ok := v.(string)
			if !ok || !binding.MayBind(str) {
				return false
			}
			t, vt := u.template(at, str, sc)
			if t == nil || s == nil {
				return true
			}
			if !s.Types.Accepts(vt.mask) {
				form := "reads " + vt.mask.String()
				if !t.Whole() {
					form = "is a text template (a string)"
				}
				u.errorf(at, CodeSchemaType, "%s must be %s by %s; %s %s", jsonschema.Subject(at), s.Types, what, jsonschema.Text(str), form)
			}
			return true
		}}
	c.Check(at, v, s)
}

// numberOf reads a literal number.
func numberOf(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && !math.IsInf(f, 0)
}
