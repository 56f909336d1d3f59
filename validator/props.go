package validator

import (
	"encoding/json"
	"math"
	"strings"

	"pluginhost/binding"
	"pluginhost/jsonschema"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// scope is what a place in the config may read.
type scope struct {
	// inItem: inside the template of a repeated node (or an item-scoped
	// action), where item is readable; item is its schema when known.
	inItem bool
	item   *jsonschema.Schema
	// bg is the nearest enclosing background colour literal (normalized) and
	// bgPath where it is set; empty when unknown.
	bg, bgPath string
}

// fields checks the members of m that props describe: required members are
// present and each value has its prop's type. Members named in skip are the
// caller's to check.
func (u *ui) fields(path string, m *object, props []uicatalog.Prop, sc scope, skip ...string) {
	for i := range props {
		p := &props[i]
		if contains(skip, p.Name) {
			continue
		}
		v, ok := m.get(p.Name)
		if !ok {
			if p.Required {
				u.errorf(u.pkey(path, p.Name), CodeRequired, "%s is required: %s", p.Name, p.Doc)
			}
			continue
		}
		u.value(u.pkey(path, p.Name), p, v, sc)
	}
}

// value checks one prop or field value against its catalog description.
func (u *ui) value(path string, p *uicatalog.Prop, v any, sc scope) {
	if p.Feature != "" {
		u.use(p.Feature, path)
	}
	if v == nil && p.Nullable {
		return
	}
	switch p.Type {
	case uicatalog.String:
		s, ok := u.str(path, v)
		if !ok {
			return
		}
		if p.MaxLength > 0 && runeCount(s) > p.MaxLength {
			u.errorf(path, CodeRange, "%s has %d characters; at most %d are allowed", jsonschema.Subject(path), runeCount(s), p.MaxLength)
		}
		u.text(path, s, p.Bindable, sc)
	case uicatalog.Number, uicatalog.Integer:
		if s, ok := v.(string); ok && p.Bindable {
			u.boundValue(path, s, jsonschema.Number|jsonschema.Integer, "a number", sc)
			return
		}
		if p.Type == uicatalog.Integer {
			u.integer(path, v, int64(*p.Min), int64(*p.Max))
		} else {
			u.number(path, v, *p.Min, *p.Max)
		}
	case uicatalog.Boolean:
		if s, ok := v.(string); ok && p.Bindable {
			u.boundValue(path, s, jsonschema.Boolean, "true or false", sc)
			return
		}
		u.boolean(path, v)
	case uicatalog.Enum:
		if s, ok := v.(string); ok && p.Bindable && binding.MayBind(s) {
			u.boundValue(path, s, jsonschema.String, "one of "+strings.Join(p.Values, ", "), sc)
			return
		}
		u.enum(path, v, p.Values...)
	case uicatalog.Color:
		u.color(path, v)
	case uicatalog.Icon:
		s, ok := u.str(path, v)
		if !ok {
			return
		}
		if p.Bindable && binding.MayBind(s) {
			u.boundValue(path, s, jsonschema.String, "an icon name", sc)
			return
		}
		if !isIconName(s) {
			u.errorf(path, CodeFormat, "icon %q is not an icon name: Material Symbols names in snake_case (lower-case letters, digits, _; at most 64 characters), such as home or arrow_back", s)
		}
	case uicatalog.Inset:
		u.inset(path, v)
	case uicatalog.FontWeight:
		u.fontWeight(path, v)
	case uicatalog.Action:
		if p.ItemScope {
			sc.inItem, sc.item = true, nil
		}
		u.action(path, v, sc, 0)
	case uicatalog.Condition:
		u.condition(path, v, sc)
	case uicatalog.StateKey:
		u.stateRef(path, v)
	case uicatalog.Strings:
		a, ok := u.array(path, v)
		if !ok {
			return
		}
		if len(a) > p.MaxItems {
			u.errorf(path, CodeCount, "%s has %d entries; at most %d are allowed", jsonschema.Subject(path), len(a), p.MaxItems)
		}
		for i, e := range a {
			if s, ok := u.str(u.pidx(path, i), e); ok {
				u.text(u.pidx(path, i), s, false, sc)
			}
		}
	case uicatalog.Options:
		u.options(path, p, v, sc)
	case uicatalog.Field:
		if s, ok := u.str(path, v); ok && !isFieldName(s) {
			u.errorf(path, CodeFormat, "%q is not a member name a path can read: a letter or _, then letters, digits, _ or -", s)
		}
	case uicatalog.Value:
		switch x := v.(type) {
		case *object, []any:
			u.errorf(path, CodeType, "%s must be a string, number, boolean or null, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
		case string:
			u.text(path, x, p.Bindable, sc)
		}
	case uicatalog.JSONValue, uicatalog.Object:
		if _, ok := v.(*object); !ok && p.Type == uicatalog.Object {
			u.errorf(path, CodeType, "%s must be an object, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
			return
		}
		u.jsonLimits(path, v, 0)
		u.against(path, v, nil, sc, "")
	case uicatalog.ID:
		if s, ok := u.str(path, v); ok && !isIdentifier(s) {
			u.errorf(path, CodeFormat, "id %q: an id starts with a letter or _, then letters, digits, _ or -, at most 64 characters (it is read in paths such as data.<id>)", s)
		}
	case uicatalog.Version:
		switch x := v.(type) {
		case string:
			if strings.TrimSpace(x) == "" {
				u.errorf(path, CodeRequired, "the version is empty")
			}
		case json.Number:
		default:
			u.errorf(path, CodeType, "%s must be a version string or number, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
		}
	case uicatalog.Schema:
		u.checkSchema(path, v, jsonschema.AnyRoot)
	case uicatalog.Binding:
		u.bindingProp(path, p, v, sc)
	}
}

// text checks a string that may hold bindings where bindable is true; in any
// other place `{{` is a mistake.
func (u *ui) text(path, s string, bindable bool, sc scope) {
	if !binding.MayBind(s) {
		return
	}
	if !bindable {
		u.errorf(path, CodeNotBindable, "this value is not bindable but contains {{: write literal text here")
		return
	}
	u.template(path, s, sc)
}

// boundValue checks a string given where a non-string value is expected: it
// must be a whole binding of a compatible type.
func (u *ui) boundValue(path, s string, want jsonschema.Types, what string, sc scope) {
	t, vt := u.template(path, s, sc)
	if t == nil {
		if !binding.MayBind(s) {
			u.errorf(path, CodeType, "%s must be %s or a whole binding such as {{state.key}}, not the string %q", jsonschema.Subject(path), what, s)
		}
		return
	}
	if !t.Whole() {
		u.errorf(path, CodeWholeBinding, "%s must be %s or exactly one binding with nothing around it; %q is a text template", jsonschema.Subject(path), what, s)
		return
	}
	if !want.Accepts(vt.mask) {
		u.errorf(path, CodeBindingType, "%s must be %s; %s reads %s", jsonschema.Subject(path), what, t.Parts[0].Path, vt.mask)
	}
}

// bindingProp checks a prop that must be a whole binding (items_source, url,
// suggestions_source, options_source) and returns what it reads.
func (u *ui) bindingProp(path string, p *uicatalog.Prop, v any, sc scope) (vtype, bool) {
	s, ok := u.str(path, v)
	if !ok {
		return vtype{}, false
	}
	isURL := p.Name == "url"
	t, vt := u.template(path, s, sc)
	if t == nil && binding.MayBind(s) {
		return vtype{}, false // a syntax error, reported
	}
	if t == nil || !t.Whole() {
		if isURL {
			u.errorf(path, CodeImageURLLiteral, "url must be a whole binding such as {{data.<source>.data.image_url}} or {{item.image_url}}, never a literal URL or a text template; the host fetches it through its image proxy")
		} else {
			u.errorf(path, CodeWholeBinding, "%s must be exactly one binding, such as {{data.<source>.data.items}}, with nothing around it", p.Name)
		}
		return vtype{}, false
	}
	bp := t.Parts[0].Path
	if len(p.Roots) > 0 && !contains(p.Roots, bp.Root()) {
		if isURL {
			u.errorf(path, CodeImageURLLiteral, "url reads %s; it must read a capability result, {{data.<source>...}} or {{item...}}, so that no literal URL can reach the image proxy", bp)
		} else {
			u.errorf(path, CodeBindingSource, "%s reads %s; it must read from %s", p.Name, bp, strings.Join(p.Roots, " or "))
		}
	}
	want := jsonschema.String
	if p.Expect == "array" {
		want = jsonschema.Array
	}
	if !want.Accepts(vt.mask) {
		u.errorf(path, CodeBindingType, "%s must read %s; %s is %s", p.Name, p.Expect, bp, vt.mask)
	}
	if isURL {
		u.network(path)
	}
	return vt, true
}

// network checks that the manifest requests the network permission an image
// needs to be displayed.
func (u *ui) network(path string) {
	if u.m == nil {
		u.needsManifest("network", path, "the network permission images need")
		return
	}
	if !u.m.HasPermission(models.PermissionNetwork) {
		u.errorf(path, CodeNetworkPermission, "image and avatar urls are displayed only when the manifest requests the network permission; add \"network\" to permissions")
	}
}

func isIconName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' && i > 0) {
			return false
		}
	}
	return true
}

// color checks a colour: a role or a literal. It returns the normalized
// literal (#rrggbbaa) when it is one.
func (u *ui) color(path string, v any) string {
	s, ok := u.str(path, v)
	if !ok {
		return ""
	}
	if uicatalog.IsColorLiteral(s) {
		c, ok := uicatalog.ParseColor(s)
		if !ok {
			u.errorf(path, CodeFormat, "colour %q is not a literal colour: #rgb, #rrggbb or #rrggbbaa with hex digits", s)
			return ""
		}
		return normalColor(c)
	}
	if !uicatalog.IsColorRole(s) {
		u.errorf(path, CodeEnum, "colour %q is neither a colour role nor a literal; roles: %s; literals: #rgb, #rrggbb, #rrggbbaa", s, strings.Join(u.cat.ColorRoles, ", "))
	}
	return ""
}

func normalColor(c uicatalog.RGBA) string {
	const hex = "0123456789abcdef"
	b := []byte{'#', 0, 0, 0, 0, 0, 0, 0, 0}
	for i, x := range []uint8{c.R, c.G, c.B, c.A} {
		b[1+2*i], b[2+2*i] = hex[x>>4], hex[x&15]
	}
	return string(b)
}

// inset checks padding or margin: a number for all sides, or an object with
// {top, right, bottom, left} or {horizontal, vertical}.
func (u *ui) inset(path string, v any) {
	r := u.cat.Ranges
	lo, hi := 0.0, 0.0
	for _, x := range r {
		if x.Name == uicatalog.RangeSpacing {
			lo, hi = x.Min, x.Max
		}
	}
	switch x := v.(type) {
	case json.Number:
		u.number(path, v, lo, hi)
	case *object:
		sides, axes := 0, 0
		for _, mb := range x.list() {
			k, e := mb.key, mb.val
			switch k {
			case "top", "right", "bottom", "left":
				sides++
			case "horizontal", "vertical":
				axes++
			default:
				u.errorf(u.pkey(path, k), CodeUnknownField, "unknown member %q; an inset object has top, right, bottom, left or horizontal, vertical", k)
				continue
			}
			u.number(u.pkey(path, k), e, lo, hi)
		}
		if sides > 0 && axes > 0 {
			u.errorf(path, CodeInsetForm, "an inset object uses either sides {top, right, bottom, left} or axes {horizontal, vertical}, not both")
		}
	default:
		u.errorf(path, CodeType, "an inset is a number (all sides) or an object {top, right, bottom, left} or {horizontal, vertical}, not %s", jsonschema.TypeName(v))
	}
}

// fontWeight checks a weight: 100 to 900 in steps of 100, or a name.
func (u *ui) fontWeight(path string, v any) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil || f < 100 || f > 900 || math.Mod(f, 100) != 0 {
			u.errorf(path, CodeRange, "font weight is %s; allowed: 100 to 900 in steps of 100", x)
		}
	case string:
		for _, w := range u.cat.FontWeights {
			if w.Name == x {
				return
			}
		}
		var names []string
		for _, w := range u.cat.FontWeights {
			names = append(names, w.Name)
		}
		u.errorf(path, CodeEnum, "font weight %q is not a weight name; allowed: %s, or 100 to 900", x, strings.Join(names, ", "))
	default:
		u.errorf(path, CodeType, "a font weight is a number (100 to 900) or a name, not %s", jsonschema.TypeName(v))
	}
}

// options checks a static options list of {value, label}.
func (u *ui) options(path string, p *uicatalog.Prop, v any, sc scope) {
	a, ok := u.array(path, v)
	if !ok {
		return
	}
	if len(a) > p.MaxItems {
		u.errorf(path, CodeCount, "%s has %d options; at most %d are allowed", jsonschema.Subject(path), len(a), p.MaxItems)
	}
	seen := map[string]int{}
	for i, e := range a {
		op := u.pidx(path, i)
		m := u.object(op, e, "value", "label")
		if m == nil {
			continue
		}
		val, ok := m.get("value")
		switch {
		case !ok:
			u.errorf(u.pkey(op, "value"), CodeRequired, "an option needs a value: a string, number or boolean")
		case jsonschema.TypeOf(val)&(jsonschema.String|jsonschema.Number|jsonschema.Integer|jsonschema.Boolean) == 0:
			u.errorf(u.pkey(op, "value"), CodeType, "an option value is a string, number or boolean, not %s", jsonschema.TypeName(val))
		default:
			k := scalarKey(val)
			if j, dup := seen[k]; dup {
				u.errorf(u.pkey(op, "value"), CodeDuplicate, "value %s is already the value of option %d", jsonschema.Text(val), j)
			}
			seen[k] = i
			if s, ok := val.(string); ok {
				u.text(u.pkey(op, "value"), s, false, sc)
			}
		}
		if lv, ok := m.get("label"); !ok {
			u.errorf(u.pkey(op, "label"), CodeRequired, "an option needs a label")
		} else if s, ok := u.str(u.pkey(op, "label"), lv); ok {
			u.text(u.pkey(op, "label"), s, true, sc)
		}
	}
}

// jsonLimits checks a JSON value against the value limits: depth and entries
// per array or object. depth is the depth of v's container.
func (u *ui) jsonLimits(path string, v any, depth int) {
	switch x := v.(type) {
	case *object:
		d := depth + 1
		if d > uicatalog.MaxValueDepth {
			u.errorf(path, CodeValueDepth, "this value nests %d deep; JSON values nest at most %d deep", d, uicatalog.MaxValueDepth)
			return
		}
		if x.len() > uicatalog.MaxValueEntries {
			u.errorf(path, CodeValueEntries, "this object has %d members; JSON objects have at most %d", x.len(), uicatalog.MaxValueEntries)
		}
		for _, mb := range x.list() {
			switch mb.val.(type) {
			case *object, []any:
				u.jsonLimits(u.pkey(path, mb.key), mb.val, d)
			}
		}
	case []any:
		d := depth + 1
		if d > uicatalog.MaxValueDepth {
			u.errorf(path, CodeValueDepth, "this value nests %d deep; JSON values nest at most %d deep", d, uicatalog.MaxValueDepth)
			return
		}
		if len(x) > uicatalog.MaxValueEntries {
			u.errorf(path, CodeValueEntries, "this array has %d entries; JSON arrays have at most %d", len(x), uicatalog.MaxValueEntries)
		}
		for i, e := range x {
			switch e.(type) {
			case *object, []any:
				u.jsonLimits(u.pidx(path, i), e, d)
			}
		}
	}
}
