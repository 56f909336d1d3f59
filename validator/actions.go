package validator

import (
	"strconv"
	"strings"

	"pluginhost/binding"
	"pluginhost/jsonschema"
	"pluginhost/uicatalog"
)

// action checks one action. flows is the number of flows it is inside of.
func (u *ui) action(path string, v any, sc scope, flows int) {
	m, ok := v.(*object)
	if !ok {
		u.errorf(path, CodeType, "an action is an object {type, ...}, not %s", jsonschema.TypeName(v))
		return
	}
	tv, ok := m.get("type")
	if !ok {
		u.errorf(u.pkey(path, "type"), CodeRequired, "an action needs a type: %s", u.actionTypes())
		return
	}
	typ, ok := u.str(u.pkey(path, "type"), tv)
	if !ok {
		return
	}
	at, ok := u.cat.Action(typ)
	if !ok {
		u.errorf(u.pkey(path, "type"), CodeEnum, "action type %q is unknown; action types: %s", typ, u.actionTypes())
		return
	}
	for _, mb := range m.list() {
		k := mb.key
		if k == "type" {
			continue
		}
		if _, ok := uicatalog.Lookup(at.Fields, k); !ok {
			allowed := propNames(at.Fields)
			if allowed == "" {
				allowed = "none"
			}
			u.errorf(u.pkey(path, k), CodeUnknownField, "%s action has no field %q; its fields: %s", article(typ), k, allowed)
		}
	}
	if at.Feature != "" {
		u.use(at.Feature, path)
	}
	switch typ {
	case "invoke":
		u.fields(path, m, at.Fields, sc, "capability", "arguments", "store")
		capID := ""
		if cv, ok := m.get("capability"); ok {
			capID, _ = u.capability(u.pkey(path, "capability"), cv)
		} else {
			u.errorf(u.pkey(path, "capability"), CodeRequired, "invoke needs a capability: a capability of the manifest or host.storage.list|get|create|update|delete")
		}
		u.arguments(path, m, capID, sc)
		if sv, ok := m.get("store"); ok {
			if id, ok := u.sourceRef(u.pkey(path, "store"), sv); ok && capID != "" {
				if src := u.sources[id]; src.cap != "" && src.cap != capID {
					u.warnf(u.pkey(path, "store"), CodeStoreCapability, "the result of %s replaces data source %q, which holds results of %s; bindings to it may no longer match", capID, id, src.cap)
				}
			}
		}
	case "flow":
		u.flow(path, m, at, sc, flows)
	case "set_state":
		u.fields(path, m, at.Fields, sc, "values")
		vv, ok := m.get("values")
		if !ok {
			u.errorf(u.pkey(path, "values"), CodeRequired, "set_state needs values: an object of declared state keys to their new values")
			break
		}
		vals := u.object(u.pkey(path, "values"), vv)
		if vals == nil {
			break
		}
		u.jsonLimits(u.pkey(path, "values"), vv, 0)
		for _, mb := range vals.list() {
			k, val := mb.key, mb.val
			kp := u.ptr(path, "values", k)
			if _, ok := u.state[k]; !ok {
				u.errorf(kp, CodeUndeclaredStateKey, "state key %q is not declared in initial_state; only declared keys may be written (%s)", k, u.declaredKeys())
			}
			u.against(kp, val, nil, sc, "")
		}
	case "refresh":
		u.fields(path, m, at.Fields, sc, "source")
		if sv, ok := m.get("source"); ok {
			u.sourceRef(u.pkey(path, "source"), sv)
		} else {
			u.errorf(u.pkey(path, "source"), CodeRequired, "refresh needs a source: the id of a declared data source")
		}
	case "navigate":
		u.fields(path, m, at.Fields, sc, "target", "parameters")
		if tv, ok := m.get("target"); ok {
			u.target(u.pkey(path, "target"), tv)
		} else {
			u.errorf(u.pkey(path, "target"), CodeRequired, "navigate needs a target: the id of a UI extension of the same manifest")
		}
		if pv, ok := m.get("parameters"); ok {
			pp := u.pkey(path, "parameters")
			u.use(uicatalog.FeatureRouteData, pp)
			if params := u.object(pp, pv); params != nil {
				u.jsonLimits(pp, pv, 0)
				for _, mb := range params.list() {
					k, val := mb.key, mb.val
					if !isFieldName(k) {
						u.errorf(u.pkey(pp, k), CodeFormat, "route parameter %q is read as context.route.%s: a letter or _, then letters, digits, _ or -", k, k)
					}
					u.against(u.pkey(pp, k), val, nil, sc, "")
				}
			}
		}
	case "back":
		u.fields(path, m, at.Fields, sc)
	}
}

func (u *ui) actionTypes() string {
	names := make([]string, len(u.cat.Actions))
	for i, a := range u.cat.Actions {
		names[i] = a.Type
	}
	return strings.Join(names, ", ")
}

// flow checks a flow and its actions.
func (u *ui) flow(path string, m *object, at *uicatalog.ActionType, sc scope, flows int) {
	depth := flows + 1
	if depth > uicatalog.MaxFlowDepth {
		u.errorf(path, CodeFlowDepth, "this flow is nested %d deep; flows nest at most %d deep (a flow that is no flow's action is depth 1)", depth, uicatalog.MaxFlowDepth)
		return
	}
	u.fields(path, m, at.Fields, sc, "actions")
	av, ok := m.get("actions")
	ap := u.pkey(path, "actions")
	if !ok {
		u.errorf(ap, CodeRequired, "a flow needs actions: 1 to %d actions", uicatalog.MaxActionsPerFlow)
		return
	}
	a, ok := u.array(ap, av)
	if !ok {
		return
	}
	switch {
	case len(a) == 0:
		u.errorf(ap, CodeCount, "a flow has 1 to %d actions; this one has none", uicatalog.MaxActionsPerFlow)
	case len(a) > uicatalog.MaxActionsPerFlow:
		u.errorf(ap, CodeTooManyActions, "this flow has %d actions; a flow has at most %d", len(a), uicatalog.MaxActionsPerFlow)
	}
	for i, e := range a {
		ep := u.pidx(ap, i)
		u.flowActions++
		if u.flowActions == uicatalog.MaxFlowActions+1 {
			u.errorf(ep, CodeTooManyActions, "the flows of this config hold more than %d actions in all; this is action %d", uicatalog.MaxFlowActions, u.flowActions)
		}
		u.action(ep, e, sc, depth)
	}
}

// sourceRef checks a reference to a declared data source.
func (u *ui) sourceRef(path string, v any) (string, bool) {
	id, ok := u.str(path, v)
	if !ok {
		return "", false
	}
	src, ok := u.sources[id]
	if !ok {
		u.errorf(path, CodeUnknownSource, "data source %q is not declared in data_sources (%s)", id, u.declaredSources())
		return id, false
	}
	src.used = true
	return id, true
}

// target checks a navigate target.
func (u *ui) target(path string, v any) {
	id, ok := u.str(path, v)
	if !ok {
		return
	}
	if u.m == nil {
		u.needsManifest("target", path, "whether navigate target "+id+" is an extension of the plugin")
		return
	}
	var ids []string
	for _, e := range u.m.Extensions {
		if e.ID == id {
			if e.Point != PointScreen {
				u.warnf(path, CodeTargetPoint, "navigate opens %q, a %s extension; routes are screen extensions", id, e.Point)
			}
			return
		}
		ids = append(ids, e.ID)
	}
	list := "the manifest declares none"
	if len(ids) > 0 {
		list = "extensions: " + strings.Join(ids, ", ")
	}
	u.errorf(path, CodeUnknownTarget, "navigate target %q is not a UI extension of this manifest (%s)", id, list)
}

// condition checks a condition in a condition place.
func (u *ui) condition(path string, v any, sc scope) {
	c, problems := binding.ParseCondition(jsonschema.Plain(v))
	for _, p := range problems {
		u.errorf(path+p.Pointer, p.Code, "%s", p.Message)
	}
	c.Walk(func(x *binding.Condition) {
		at := path + x.Pointer
		switch x.Op {
		case binding.OpAll, binding.OpAny, binding.OpNot:
			u.use(uicatalog.FeatureCompoundConditions, at)
			return
		}
		u.conditions++
		if u.conditions == binding.MaxConditions+1 {
			u.errorf(at, CodeTooManyConditions, "the config holds more than %d single conditions in all; this is condition %d", binding.MaxConditions, u.conditions)
		}
		var vt vtype
		if x.Path != nil {
			vt = u.path(at+"/path", x.Path, sc)
		}
		if x.Op == binding.OpEquals || x.Op == binding.OpNotEquals {
			if cond, ok := valueAt(v, x.Pointer).(*object); ok {
				u.jsonLimits(at+"/"+x.Op, cond.val(x.Op), 0)
			}
			u.comparable(at+"/"+x.Op, x, vt)
		}
	})
}

// comparable reports a condition that compares a context value with a
// literal of a type the value never has: it would never hold (or always,
// with not_equals).
func (u *ui) comparable(at string, x *binding.Condition, vt vtype) {
	if x.Path == nil || x.Path.Root() != "context" || vt.mask == jsonschema.Any {
		return
	}
	operand := jsonschema.TypeOf(x.Value)
	if vt.mask.Accepts(operand) || (vt.mask&jsonschema.Number != 0 && operand == jsonschema.Integer) {
		return
	}
	if vt.mask == jsonschema.Object && x.Path[1].Name == "connections" {
		u.errorf(at, CodeConditionType, "%s is an object {connected, label, account}, never %s: compare %s.connected", x.Path, operand, x.Path)
		return
	}
	u.errorf(at, CodeConditionType, "%s is %s, never %s: this condition never changes", x.Path, vt.mask, operand)
}

// valueAt follows a relative JSON Pointer made of member names and indexes
// without escapes (those of conditions) through a decoded value.
func valueAt(v any, pointer string) any {
	if pointer == "" {
		return v
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		switch x := v.(type) {
		case *object:
			v = x.val(tok)
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
