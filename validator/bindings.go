package validator

import (
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"pluginhost/binding"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// vtype is what a binding is known to read: a set of JSON types (tAny when
// unknown) and, for reads into a capability result, the schema there.
type vtype struct {
	mask   typeMask
	schema *Schema
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
		u.errorf(path, e.Code, "%s (in %s at character %d)", e.Message, jsonText(s), runeCount(s[:e.Offset])+1)
		return nil, anyType
	}
	var vt vtype
	for _, part := range t.Parts {
		if part.Path != nil {
			vt = u.path(path, part.Path, sc)
		}
	}
	if !t.Whole() {
		vt = vtype{mask: tString}
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

func maskOf(t string) typeMask {
	switch t {
	case binding.TypeBoolean:
		return tBoolean
	case binding.TypeNumber:
		return tNumber | tInteger
	case binding.TypeString:
		return tString
	}
	return tAny
}

// resolve follows p[from:] through schema s and reports the first segment
// that cannot exist.
func (u *ui) resolve(at string, p binding.Path, from int, s *Schema, what string) vtype {
	cur := s
	for i := from; i < len(p); i++ {
		if cur == nil {
			return anyType
		}
		seg := p[i]
		here := p[:i]
		if seg.IsIndex {
			if cur.Types != tAny && cur.Types&tArray == 0 {
				u.errorf(at, CodeSchemaPath, "%s does not exist: %s is %s in %s, so it has no index %s", p, here, cur.Types, what, segString(seg))
				return anyType
			}
			cur = cur.Items
			continue
		}
		if cur.Types != tAny && cur.Types&tObject == 0 {
			u.errorf(at, CodeSchemaPath, "%s does not exist: %s is %s in %s, so it has no member %q", p, here, cur.Types, what, seg.Name)
			return anyType
		}
		if sub, ok := cur.Props[seg.Name]; ok {
			cur = sub
			continue
		}
		if cur.closed() {
			members := "none"
			if len(cur.Props) > 0 {
				members = strings.Join(cur.propNames(), ", ")
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
func (u *ui) against(at string, v any, s *Schema, sc scope, what string) {
	if str, ok := v.(string); ok && binding.MayBind(str) {
		t, vt := u.template(at, str, sc)
		if t == nil || s == nil {
			return
		}
		if !s.Types.accepts(vt.mask) {
			form := "reads " + vt.mask.String()
			if !t.Whole() {
				form = "is a text template (a string)"
			}
			u.errorf(at, CodeSchemaType, "%s must be %s by %s; %s %s", subject(at), s.Types, what, jsonText(str), form)
		}
		return
	}
	if s == nil {
		switch x := v.(type) {
		case *object:
			for _, mb := range x.list() {
				u.against(u.pkey(at, mb.key), mb.val, nil, sc, what)
			}
		case []any:
			for i, e := range x {
				u.against(u.pidx(at, i), e, nil, sc, what)
			}
		}
		return
	}
	vt := typeOfValue(v)
	if !s.Types.accepts(vt) {
		u.errorf(at, CodeSchemaType, "%s must be %s by %s, not %s", subject(at), s.Types, what, vt)
		return
	}
	if s.Enum != nil && !anyEqual(s.Enum, v) {
		u.errorf(at, CodeSchemaEnum, "%s is %s; %s allows only %s", subject(at), jsonText(v), what, enumText(s.Enum))
	}
	if s.HasConst && !equalJSON(s.Const, v) {
		u.errorf(at, CodeSchemaEnum, "%s is %s; %s allows only %s", subject(at), jsonText(v), what, jsonText(s.Const))
	}
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		u.numberBounds(at, f, s, what)
	case string:
		n := int64(runeCount(x))
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			u.errorf(at, CodeSchemaRange, "%s has %d characters; %s allows %s", subject(at), n, what, boundsText(s.MinLength, s.MaxLength, "characters"))
		}
		if s.Format != "" && !formatOK(s.Format, x) {
			u.errorf(at, CodeSchemaFormat, "%s is not a valid %s, as %s requires", jsonText(x), s.Format, what)
		}
	case []any:
		n := int64(len(x))
		if s.MinItems != nil && n < *s.MinItems || s.MaxItems != nil && n > *s.MaxItems {
			u.errorf(at, CodeSchemaRange, "%s has %d entries; %s allows %s", subject(at), n, what, boundsText(s.MinItems, s.MaxItems, "entries"))
		}
		if s.Unique {
			for i := range x {
				for j := 0; j < i; j++ {
					if equalJSON(x[i], x[j]) {
						u.errorf(u.pidx(at, i), CodeSchemaEnum, "repeats entry %d; %s requires unique entries", j, what)
					}
				}
			}
		}
		for i, e := range x {
			u.against(u.pidx(at, i), e, s.Items, sc, what)
		}
	case *object:
		for _, r := range s.Required {
			if !x.has(r) {
				u.errorf(u.pkey(at, r), CodeSchemaRequired, "%q is required by %s", r, what)
			}
		}
		n := int64(x.len())
		if s.MinProps != nil && n < *s.MinProps || s.MaxProps != nil && n > *s.MaxProps {
			u.errorf(at, CodeSchemaRange, "%s has %d members; %s allows %s", subject(at), n, what, boundsText(s.MinProps, s.MaxProps, "members"))
		}
		for _, mb := range x.list() {
			k, e := mb.key, mb.val
			sub, ok := s.Props[k]
			if !ok && s.Additional != nil && !*s.Additional {
				members := "none"
				if len(s.Props) > 0 {
					members = strings.Join(s.propNames(), ", ")
				}
				u.errorf(u.pkey(at, k), CodeSchemaUnknownField, "%q is not a member %s allows (members: %s)", k, what, members)
				u.against(u.pkey(at, k), e, nil, sc, what)
				continue
			}
			u.against(u.pkey(at, k), e, sub, sc, what)
		}
	}
}

func (u *ui) numberBounds(at string, f float64, s *Schema, what string) {
	switch {
	case s.Minimum != nil && f < *s.Minimum:
		u.errorf(at, CodeSchemaRange, "%s is %s; %s requires at least %s", subject(at), fmtNum(f), what, fmtNum(*s.Minimum))
	case s.Maximum != nil && f > *s.Maximum:
		u.errorf(at, CodeSchemaRange, "%s is %s; %s requires at most %s", subject(at), fmtNum(f), what, fmtNum(*s.Maximum))
	case s.ExclMin != nil && f <= *s.ExclMin:
		u.errorf(at, CodeSchemaRange, "%s is %s; %s requires more than %s", subject(at), fmtNum(f), what, fmtNum(*s.ExclMin))
	case s.ExclMax != nil && f >= *s.ExclMax:
		u.errorf(at, CodeSchemaRange, "%s is %s; %s requires less than %s", subject(at), fmtNum(f), what, fmtNum(*s.ExclMax))
	}
}

func boundsText(lo, hi *int64, unit string) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %d %s", *lo, *hi, unit)
	case lo != nil:
		return fmt.Sprintf("at least %d %s", *lo, unit)
	case hi != nil:
		return fmt.Sprintf("at most %d %s", *hi, unit)
	}
	return "any number of " + unit
}

func anyEqual(list []any, v any) bool {
	for _, e := range list {
		if equalJSON(e, v) {
			return true
		}
	}
	return false
}

func enumText(list []any) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = jsonText(e)
	}
	return strings.Join(parts, ", ")
}

// formatOK checks a literal against a format of the subset.
func formatOK(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	case "date":
		_, err := time.Parse("2006-01-02", s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05.999999999Z07:00", s)
		return err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s && a.Name == ""
	case "uri":
		p, err := url.Parse(s)
		return err == nil && p.Scheme != "" && (p.Host != "" || p.Opaque != "" || p.Path != "")
	case "hostname":
		return isHostname(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	case "uuid":
		if len(s) != 36 {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return false
				}
			} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	return true
}

// isHostname checks a host name of RFC 1123: dot-separated labels of 1 to 63
// letters, digits and hyphens, not starting or ending with a hyphen, 253
// characters in all.
func isHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
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

// equalJSON compares decoded values as binding.Equal does.
func equalJSON(a, b any) bool {
	_, ao := a.(*object)
	_, bo := b.(*object)
	_, aa := a.([]any)
	_, ba := b.([]any)
	if ao || bo || aa || ba {
		return binding.Equal(plain(a), plain(b))
	}
	return binding.Equal(a, b)
}
