package validator

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"pluginhost/binding"
	"pluginhost/jsonschema"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// Problem codes of UI configs. Each is listed with its rule in
// docs/validator.md.
const (
	CodeUnknownProp        = "unknown_prop"
	CodeUnknownNodeType    = "unknown_node_type"
	CodeAppBarInTree       = "app_bar_in_tree"
	CodeTooManyNodes       = "too_many_nodes"
	CodeTooManyChildren    = "too_many_children"
	CodeSingleChild        = "single_child"
	CodeMissingChild       = "missing_child"
	CodeChildrenNotAllowed = "children_not_allowed"
	CodeTemplateChild      = "template_child"
	CodeNotBindable        = "not_bindable"
	CodeWholeBinding       = "whole_binding"
	CodeBindingType        = "binding_type"
	CodeBindingSource      = "binding_source"
	CodeItemScope          = "item_scope"
	CodeUnknownSource      = "unknown_source"
	CodeUnknownCapability  = "unknown_capability"
	CodeUnknownPermission  = "unknown_permission"
	CodeUnknownConnection  = "unknown_connection"
	CodeConditionType      = "condition_type"
	CodeUndeclaredStateKey = "undeclared_state_key"
	CodeUndeclaredRoute    = "undeclared_route_parameter"
	CodeRouteUnchecked     = "route_unchecked"
	CodeSchemaPath         = "schema_path"
	CodeSchemaRequired     = jsonschema.CodeRequired
	CodeSchemaType         = jsonschema.CodeType
	CodeSchemaEnum         = jsonschema.CodeEnum
	CodeSchemaRange        = jsonschema.CodeRange
	CodeSchemaFormat       = jsonschema.CodeFormat
	CodeSchemaUnknownField = jsonschema.CodeUnknownField
	CodeConditionDepth     = binding.CodeConditionDepth
	CodeTooManyConditions  = "too_many_conditions"
	CodeFlowDepth          = "flow_depth"
	CodeTooManyActions     = "too_many_actions"
	CodeImageURLLiteral    = "image_url_literal"
	CodeNetworkPermission  = "network_permission"
	CodeContrast           = "contrast"
	CodeLowContrast        = "low_contrast"
	CodeA2UINotAllowed     = "a2ui_not_allowed"
	CodeThemeNesting       = "theme_nesting"
	CodeValueDepth         = "value_depth"
	CodeValueEntries       = "value_entries"
	CodeUnknownTarget      = "unknown_target"
	CodeTargetPoint        = "target_point"
	CodeSourceCycle        = "source_cycle"
	CodeStoreCapability    = "store_capability"
	CodeStateType          = "state_type"
	CodeCredentialState    = "credential_state_key"
	CodeNeedsManifest      = "needs_manifest"
	CodeUnknownExtension   = "unknown_extension"
	CodeRangeOrder         = "range_order"
	CodeRequiredOneOf      = "required_one_of"
	CodeExclusive          = "exclusive"
	CodePositionedOffset   = "positioned_offset"
	CodeOptionsSource      = "options_source"
	CodeInsetForm          = "inset_form"
	CodeMutatingSource     = "mutating_source"
	CodeStoragePermission  = "storage_permission"
	CodeUnusedSource       = "unused_source"
	CodeBindingSyntax      = binding.CodeSyntax
	CodeBindingDepth       = binding.CodeDepth
	CodeBindingRoot        = binding.CodeRoot
	CodeBindingPath        = binding.CodePath
	CodeConditionOperator  = binding.CodeConditionOperator
	CodeConditionForm      = binding.CodeConditionForm
	codeParentSuffix       = "_parent" // positioned_parent, expanded_parent
	CodePositionedParent   = "positioned" + codeParentSuffix
	CodeExpandedParent     = "expanded" + codeParentSuffix
)

// maxCheckedBytes bounds the configs that are checked at all: a larger one is
// reported too large and not decoded, so that no input costs unbounded time.
const maxCheckedBytes = 4 * uicatalog.MaxConfigBytes

// Extension points (those of package models).
const (
	PointScreen   = models.PointScreen
	PointHome     = models.PointHome
	PointResponse = models.PointResponse
)

// CheckUIConfig validates one UI config (ui/<extension>.json).
//
// m is the plugin's manifest; it may be nil, and then the checks that need it
// (declared capabilities and their schemas, navigate targets, the network
// permission, min_host_version for the newer features, storage namespaces)
// are skipped, each kind with one needs_manifest warning at its first use.
// extensionID selects the extension: with a manifest, its point decides
// whether a2ui is allowed. When it is empty, or the manifest is nil or does
// not declare it, the point is response if the config has a2ui and screen
// otherwise.
//
// Reads of context.route.* are checked against the parameters that navigate
// actions pass to this extension only by CheckPlugin, which sees every config;
// here they draw a route_unchecked warning.
func CheckUIConfig(config []byte, m *models.Manifest, extensionID string) *Report {
	return checkUIConfig(config, m, extensionID, false, nil)
}

// checkUIConfig runs a quiet check first and the full one only when the quiet
// one found a problem. routeKnown and routeParams give the route parameters
// that navigate actions pass to the extension, when they are known.
func checkUIConfig(config []byte, m *models.Manifest, extensionID string, routeKnown bool, routeParams map[string]bool) *Report {
	u := newUI(m, extensionID)
	u.routeKnown, u.routeParams = routeKnown, routeParams
	u.quiet = true
	if r := u.check(config); !u.found {
		return r
	}
	u = newUI(m, extensionID)
	u.routeKnown, u.routeParams = routeKnown, routeParams
	return u.check(config)
}

// ui checks one UI config.
type ui struct {
	checker
	cat   *uicatalog.Data
	m     *models.Manifest
	extID string
	point string
	// caps holds the manifest's capabilities and the storage tools.
	caps map[string]*capInfo
	// state holds the declared keys and their initial values.
	state map[string]any
	// sources holds the declared data sources.
	sources map[string]*sourceInfo
	// routeParams are the parameters navigate actions pass to this extension;
	// routeKnown is false when they cannot be known (CheckUIConfig alone).
	routeParams map[string]bool
	routeKnown  bool
	// features records where each feature that needs min_host_version is used;
	// hostOK: the manifest's min_host_version has them all.
	features []featureUse
	hostOK   bool
	// counters of the config-wide limits
	nodes       int
	extraNode   string
	flowActions int
	conditions  int
	// warned: kinds of needs_manifest warnings already given
	warned map[string]bool
	// curSource is the data source whose query and arguments are being
	// checked; deps records which sources each source reads.
	curSource string
	deps      map[string][]string
	doc       *document
}

type sourceInfo struct {
	index int
	cap   string
	// output is the capability's output schema (nil when unknown).
	output *jsonschema.Schema
	used   bool
}

type featureUse struct {
	feature, path string
}

func newUI(m *models.Manifest, extensionID string) *ui {
	u := &ui{cat: uicatalog.Catalog(), m: m, extID: extensionID, warned: map[string]bool{}, deps: map[string][]string{}}
	u.caps = make(map[string]*capInfo, len(storageTools)+4)
	for id, t := range storageTools {
		u.caps[id] = t
	}
	if m != nil {
		u.hostOK = versionAtLeast(m.MinHostVersion, uicatalog.MinHostVersion)
		for _, c := range m.Capabilities {
			if _, isTool := storageTools[c.ID]; isTool {
				continue
			}
			u.caps[c.ID] = &capInfo{id: c.ID, input: parseSchema(c.InputSchema), output: parseSchema(c.OutputSchema)}
		}
	}
	return u
}

func (u *ui) check(config []byte) *Report {
	if len(config) > uicatalog.MaxConfigBytes {
		u.errorf("", CodeTooLarge, "the config has %d bytes; a UI config is at most %d bytes (32 KiB)", len(config), uicatalog.MaxConfigBytes)
		if len(config) > maxCheckedBytes {
			return u.report(nil)
		}
	}
	doc, _ := decode(config, &u.checker)
	if doc == nil {
		return u.report(nil)
	}
	u.doc = doc
	u.config(doc.root)
	return u.finish(doc)
}

// config checks a decoded config.
func (u *ui) config(root any) {
	top := u.cat.Config.TopLevel
	m := u.objectOf("", root, top)
	if m == nil {
		return
	}
	u.declare(m)
	u.resolvePoint(m)
	sc := scope{}
	for i := range top {
		p := &top[i]
		v, ok := m.get(p.Name)
		if !ok {
			if p.Required {
				u.errorf(u.pkey("", p.Name), CodeRequired, "%s is required: %s", p.Name, p.Doc)
			}
			continue
		}
		path := u.pkey("", p.Name)
		switch p.Name {
		case "ui_schema":
			if n, ok := v.(json.Number); !ok {
				u.errorf(path, CodeType, "ui_schema is the number 2, not %s", jsonschema.TypeName(v))
			} else if f, err := n.Float64(); err != nil || f != 2 {
				u.errorf(path, CodeEnum, "ui_schema is %s; UI Runtime v2 configs have ui_schema 2", n)
			}
		case "app_bar":
			u.appBar(path, v)
		case "navigation":
			u.navigation(path, v)
		case "theme":
			u.theme(path, v)
		case "initial_state":
			u.initialState(path, v)
		case "data_sources":
			u.dataSources(path, v)
		case "a2ui":
			u.a2ui(path, v)
		case "view":
			u.tree(path, v)
		default:
			u.value(path, p, v, sc)
		}
	}
	if u.point == PointResponse {
		if !m.has("a2ui") {
			u.errorf("/a2ui", CodeRequired, "a response UI (extension point response) requires a2ui {version, description, schema}")
		}
	}
	u.sourceCycles()
	u.unusedSources()
	u.minHostVersion()
}

// objectOf checks that v is an object whose members are among props.
func (u *ui) objectOf(path string, v any, props []uicatalog.Prop) *object {
	m, ok := v.(*object)
	if !ok {
		u.errorf(path, CodeType, "%s must be an object, not %s", jsonschema.Subject(path), jsonschema.TypeName(v))
		return nil
	}
	for _, mb := range m.list() {
		k := mb.key
		if _, ok := uicatalog.Lookup(props, k); !ok {
			u.errorf(u.pkey(path, k), CodeUnknownField, "unknown field %q; allowed fields: %s", k, propNames(props))
		}
	}
	return m
}

func propNames(props []uicatalog.Prop) string {
	names := make([]string, len(props))
	for i, p := range props {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// declare records the state keys and data sources before anything that may
// read them is checked.
func (u *ui) declare(m *object) {
	u.state = map[string]any{}
	if s, ok := m.val("initial_state").(*object); ok {
		for _, mb := range s.list() {
			u.state[mb.key] = mb.val
		}
	}
	u.sources = map[string]*sourceInfo{}
	if a, ok := m.val("data_sources").([]any); ok {
		for i, e := range a {
			src, ok := e.(*object)
			if !ok {
				continue
			}
			id, ok := src.val("id").(string)
			if !ok || u.sources[id] != nil {
				continue
			}
			info := &sourceInfo{index: i}
			if c, ok := src.val("capability").(string); ok {
				info.cap = c
				if ci := u.caps[c]; ci != nil {
					info.output = ci.output
				}
			}
			u.sources[id] = info
		}
	}
}

// resolvePoint decides the extension point the config is checked for.
func (u *ui) resolvePoint(m *object) {
	if u.m != nil && u.extID != "" {
		for _, e := range u.m.Extensions {
			if e.ID == u.extID {
				u.point = e.Point
				return
			}
		}
		u.warnf("", CodeUnknownExtension, "the manifest declares no extension %q; the config is checked as a %s extension", u.extID, u.inferredPoint(m))
	}
	u.point = u.inferredPoint(m)
}

func (u *ui) inferredPoint(m *object) string {
	if m.has("a2ui") {
		return PointResponse
	}
	return PointScreen
}

// use records a feature that needs min_host_version, unless the manifest
// already asks for a host that has every feature.
func (u *ui) use(feature, path string) {
	if u.m != nil && u.hostOK {
		return
	}
	u.features = append(u.features, featureUse{feature, path})
}

// needsManifest warns once per kind that a check was skipped.
func (u *ui) needsManifest(kind, path, what string) {
	if u.warned[kind] {
		return
	}
	u.warned[kind] = true
	u.warnf(path, CodeNeedsManifest, "%s cannot be checked without the manifest (first use here; validate the plugin folder to check it)", what)
}

// minHostVersion reports, for each feature used, its first use when the
// manifest's min_host_version is below the version the feature needs.
func (u *ui) minHostVersion() {
	if len(u.features) == 0 {
		return
	}
	if u.m == nil {
		first := u.firstUses()
		for _, f := range first {
			u.needsManifest("min_host_version "+f.feature, f.path, "min_host_version for "+f.feature)
		}
		return
	}
	if u.hostOK {
		return
	}
	have := "none"
	if u.m.MinHostVersion != "" {
		have = u.m.MinHostVersion
	}
	for _, f := range u.firstUses() {
		u.errorf(f.path, CodeMinHostVersion, "this uses %s, a feature of host %s: set min_host_version to %s or later in manifest.json (it is %s)", f.feature, uicatalog.MinHostVersion, uicatalog.MinHostVersion, have)
	}
}

// firstUses returns the first use of each feature in document order.
func (u *ui) firstUses() []featureUse {
	order := u.doc.order()
	first := map[string]featureUse{}
	var names []string
	for _, f := range u.features {
		cur, ok := first[f.feature]
		if !ok {
			names = append(names, f.feature)
		}
		if !ok || position(f.path, order) < position(cur.path, order) {
			first[f.feature] = f
		}
	}
	out := make([]featureUse, len(names))
	for i, n := range names {
		out[i] = first[n]
	}
	return out
}

// initialState checks initial_state.
func (u *ui) initialState(path string, v any) {
	m, ok := v.(*object)
	if !ok {
		u.errorf(path, CodeType, "initial_state is an object of state keys to initial values, not %s", jsonschema.TypeName(v))
		return
	}
	if m.len() > uicatalog.MaxStateKeys {
		u.errorf(path, CodeCount, "initial_state has %d keys; at most %d are allowed", m.len(), uicatalog.MaxStateKeys)
	}
	for _, mb := range m.list() {
		k, val := mb.key, mb.val
		kp := u.pkey(path, k)
		switch {
		case !isStateKey(k):
			u.errorf(kp, CodeFormat, "state key %q: a state key starts with a letter, then letters, digits or _", k)
		case len(k) > uicatalog.MaxStateKeyLength:
			u.errorf(kp, CodeFormat, "state key %q has %d characters; at most %d are allowed", k, len(k), uicatalog.MaxStateKeyLength)
		}
		if f := models.CredentialFamily(k); f != "" {
			u.warnf(kp, CodeCredentialState, "state key %q names a credential (%s family); credentials and sensitive user data must not be kept in state", k, f)
		}
		u.jsonLimits(kp, val, 0)
	}
}

// article puts "a" or "an" before a node or action type.
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// isStateKey: a letter, then letters, digits, underscores (spec,
// initial_state). The length is checked separately.
func isStateKey(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isIdentifier: the ids of data sources, app bar actions and navigation items
// may be read in paths (data.<id>), so they have the form of a path name.
func isIdentifier(s string) bool { return isFieldName(s) }

// isFieldName: a member name a binding path can read.
func isFieldName(s string) bool {
	if s == "" || len(s) > 64 || !(isLetter(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// declaredKeys lists the declared state keys for messages.
func (u *ui) declaredKeys() string { return declared(u.state, "initial_state") }

// declaredSources lists the declared data sources for messages.
func (u *ui) declaredSources() string { return declared(u.sources, "data_sources") }

// declared lists the names of a declaration for messages, in order.
func declared[V any](m map[string]V, field string) string {
	if len(m) == 0 {
		return field + " declares none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return "declared: " + strings.Join(names, ", ")
}

// stateRef checks a reference to a state key that is written.
func (u *ui) stateRef(path string, v any) (string, bool) {
	k, ok := u.str(path, v)
	if !ok {
		return "", false
	}
	if _, ok := u.state[k]; !ok {
		u.errorf(path, CodeUndeclaredStateKey, "state key %q is not declared in initial_state; only declared keys may be written (%s)", k, u.declaredKeys())
		return k, false
	}
	return k, true
}

// stateType warns when a key is written with a type other than its initial
// value's.
func (u *ui) stateType(path, key string, writes jsonschema.Types, what string) {
	init, ok := u.state[key]
	if !ok || init == nil || writes == jsonschema.Any {
		return
	}
	if t := jsonschema.TypeOf(init); !writes.Accepts(t) {
		u.warnf(path, CodeStateType, "%s writes %s to state key %q, whose initial value is %s", what, writes, key, t)
	}
}

// appBar checks app_bar.
func (u *ui) appBar(path string, v any) {
	props := u.cat.Config.AppBar
	m := u.objectOf(path, v, props)
	if m == nil {
		return
	}
	u.fields(path, m, props, scope{}, "actions")
	if av, ok := m.get("actions"); ok {
		u.items(u.pkey(path, "actions"), av, 0, uicatalog.MaxAppBarActions, "app bar actions", appBarActionProps(u.cat))
	}
}

func appBarActionProps(c *uicatalog.Data) []uicatalog.Prop {
	p, _ := uicatalog.Lookup(c.Config.AppBar, "actions")
	return p.Members
}

// items checks an array of objects with unique ids.
func (u *ui) items(path string, v any, lo, hi int, what string, props []uicatalog.Prop) []*object {
	a, ok := u.array(path, v)
	if !ok {
		return nil
	}
	if len(a) < lo || len(a) > hi {
		if lo > 0 {
			u.errorf(path, CodeCount, "%s has %d %s; %d to %d are allowed", jsonschema.Subject(path), len(a), what, lo, hi)
		} else {
			u.errorf(path, CodeCount, "%s has %d %s; at most %d are allowed", jsonschema.Subject(path), len(a), what, hi)
		}
	}
	out := make([]*object, len(a))
	ids := map[string]int{}
	for i, e := range a {
		p := u.pidx(path, i)
		m := u.objectOf(p, e, props)
		if m == nil {
			continue
		}
		out[i] = m
		u.fields(p, m, props, scope{})
		if id, ok := m.val("id").(string); ok {
			if j, dup := ids[id]; dup {
				u.errorf(u.pkey(p, "id"), CodeDuplicate, "id %q is already used at %s; ids are unique", id, u.pidx(path, j))
			} else {
				ids[id] = i
			}
		}
	}
	return out
}

// navigation checks navigation.
func (u *ui) navigation(path string, v any) {
	props := u.cat.Config.Navigation
	m := u.objectOf(path, v, props)
	if m == nil {
		return
	}
	u.fields(path, m, props, scope{}, "items", "selected_state_key")
	key, keyOK := "", false
	if kv, ok := m.get("selected_state_key"); ok {
		key, keyOK = u.stateRef(u.pkey(path, "selected_state_key"), kv)
	}
	iv, ok := m.get("items")
	if !ok {
		u.errorf(u.pkey(path, "items"), CodeRequired, "navigation needs items: %d to %d destinations", uicatalog.MinNavigationItems, uicatalog.MaxNavigationItems)
		return
	}
	itemProps, _ := uicatalog.Lookup(props, "items")
	items := u.items(u.pkey(path, "items"), iv, uicatalog.MinNavigationItems, uicatalog.MaxNavigationItems, "navigation items", itemProps.Members)
	values := map[string]int{}
	for i, it := range items {
		if it == nil {
			continue
		}
		ip := u.ptr(path, "items", i)
		val, has := it.get("value")
		if !has {
			if keyOK {
				u.errorf(u.pkey(ip, "value"), CodeRequired, "value is required on every item because navigation sets selected_state_key %q", key)
			}
			continue
		}
		if !keyOK {
			continue
		}
		u.stateType(u.pkey(ip, "value"), key, jsonschema.TypeOf(val), "this navigation item")
		vt := scalarKey(val)
		if j, dup := values[vt]; dup {
			u.errorf(u.pkey(ip, "value"), CodeDuplicate, "value %s is already the value of item %d; each item selects a different value", jsonschema.Text(val), j)
		} else {
			values[vt] = i
		}
	}
}

// scalarKey is the canonical text of a JSON value, for duplicate detection.
func scalarKey(v any) string {
	return jsonschema.TypeOf(v).String() + ":" + binding.Text(jsonschema.Plain(v))
}

// dataSources checks data_sources.
func (u *ui) dataSources(path string, v any) {
	props := u.cat.Config.DataSource
	a, ok := u.array(path, v)
	if !ok {
		return
	}
	if len(a) > uicatalog.MaxDataSources {
		u.errorf(path, CodeCount, "data_sources has %d data sources; at most %d are allowed", len(a), uicatalog.MaxDataSources)
	}
	ids := map[string]int{}
	for i, e := range a {
		p := u.pidx(path, i)
		m := u.objectOf(p, e, props)
		if m == nil {
			continue
		}
		id, _ := m.val("id").(string)
		if id != "" {
			if j, dup := ids[id]; dup {
				u.errorf(u.pkey(p, "id"), CodeDuplicate, "data source id %q is already used at %s; ids are unique", id, u.pidx(path, j))
				id = ""
			} else {
				ids[id] = i
			}
		}
		u.curSource = id
		u.fields(p, m, props, scope{}, "capability", "arguments")
		capID := ""
		if cv, ok := m.get("capability"); ok {
			capID, _ = u.capability(u.pkey(p, "capability"), cv)
		} else {
			u.errorf(u.pkey(p, "capability"), CodeRequired, "capability is required: a capability of the manifest or host.storage.list|get|create|update|delete")
		}
		u.arguments(p, m, capID, scope{})
		if models.IsMutatingTool(capID) {
			if t, _ := m.val("trigger").(string); t != "manual" {
				u.warnf(u.pkey(p, "capability"), CodeMutatingSource, "%s changes storage; as a data source with trigger load it runs every time the screen opens (use an invoke action, or trigger manual)", capID)
			}
		}
		u.curSource = ""
	}
}

// capability checks a capability reference and returns its id and info.
func (u *ui) capability(path string, v any) (string, *capInfo) {
	id, ok := u.str(path, v)
	if !ok {
		return "", nil
	}
	if ci, ok := storageTools[id]; ok {
		if u.m != nil && u.m.EffectiveStorage() == nil {
			u.errorf(path, CodeStoragePermission, "%s is provided only to plugins that request the storage permission and declare storage", id)
		}
		return id, ci
	}
	if strings.HasPrefix(id, "host.") {
		u.errorf(path, CodeUnknownCapability, "%q is not a host capability; the host provides %s", id, strings.Join(models.StorageTools, ", "))
		return id, nil
	}
	if u.m == nil {
		u.needsManifest("capability", path, "whether capability "+id+" is declared")
		return id, nil
	}
	ci, ok := u.caps[id]
	if !ok {
		var ids []string
		for _, c := range u.m.Capabilities {
			ids = append(ids, c.ID)
		}
		list := "the manifest declares none"
		if len(ids) > 0 {
			list = "declared: " + strings.Join(ids, ", ")
		}
		u.errorf(path, CodeUnknownCapability, "capability %q is not declared in the manifest (%s; the host provides host.storage.*)", id, list)
		return id, nil
	}
	return id, ci
}

// arguments checks the query and arguments of a data source or invoke action
// against the capability's input schema.
func (u *ui) arguments(p string, m *object, capID string, sc scope) {
	ci := u.caps[capID]
	var in *jsonschema.Schema
	if ci != nil {
		in = ci.input
	}
	av, has := m.get("arguments")
	ap := u.pkey(p, "arguments")
	if !has {
		if in != nil {
			for _, r := range in.Required {
				u.errorf(u.pkey(ap, r), CodeSchemaRequired, "argument %q is required by the input_schema of %s", r, capID)
			}
		}
		return
	}
	if _, ok := av.(*object); !ok {
		u.errorf(ap, CodeType, "arguments is an object, not %s", jsonschema.TypeName(av))
		return
	}
	u.jsonLimits(ap, av, 0)
	u.against(ap, av, in, sc, "the input_schema of "+capID)
	if _, ok := storageTools[capID]; ok {
		u.storageArguments(ap, av.(*object))
	}
}

// storageArguments checks literal namespace and key arguments of a storage
// tool against the manifest.
func (u *ui) storageArguments(ap string, args *object) {
	if ns, ok := args.val("namespace").(string); ok && !binding.MayBind(ns) && u.m != nil {
		if st := u.m.EffectiveStorage(); st != nil {
			if _, ok := st.Namespace(ns); !ok {
				var ids []string
				for _, n := range st.Namespaces {
					ids = append(ids, n.ID)
				}
				u.errorf(u.pkey(ap, "namespace"), CodeUnknownNamespace, "namespace %q is not declared in the manifest's storage (declared: %s)", ns, strings.Join(ids, ", "))
			}
		}
	}
	if k, ok := args.val("key").(string); ok && !binding.MayBind(k) {
		if err := models.ValidateKey(k); err != nil {
			u.errorf(u.pkey(ap, "key"), CodeInvalidKey, "%s", models.ErrorMessage(err))
		}
	}
}

// sourceCycles reports data sources whose arguments read each other.
func (u *ui) sourceCycles() {
	ids := make([]string, 0, len(u.deps))
	for id := range u.deps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	const (
		unvisited = iota
		active
		done
	)
	state := map[string]int{}
	reported := map[string]bool{}
	var visit func(id string, trail []string)
	visit = func(id string, trail []string) {
		state[id] = active
		trail = append(trail, id)
		for _, d := range u.deps[id] {
			switch state[d] {
			case active:
				start := 0
				for i, t := range trail {
					if t == d {
						start = i
					}
				}
				cycle := append(append([]string{}, trail[start:]...), d)
				if !reported[d] {
					reported[d] = true
					src := u.sources[d]
					u.errorf(u.ptr("/data_sources", src.index), CodeSourceCycle, "data sources read each other in a cycle: %s; a source may read only sources that do not read it back", strings.Join(cycle, " → "))
				}
			case unvisited:
				visit(d, trail)
			}
		}
		state[id] = done
	}
	for _, id := range ids {
		if state[id] == unvisited {
			visit(id, nil)
		}
	}
}

// unusedSources warns about data sources that nothing reads: a load source
// still costs a capability call each time the screen opens.
func (u *ui) unusedSources() {
	for id, src := range u.sources {
		if !src.used {
			u.warnf(u.pkey(u.pidx("/data_sources", src.index), "id"), CodeUnusedSource, "data source %q is never read: no binding, condition, refresh or store names it", id)
		}
	}
}

// a2ui checks the response UI declaration.
func (u *ui) a2ui(path string, v any) {
	if u.point != PointResponse {
		u.errorf(path, CodeA2UINotAllowed, "a2ui is used only by extension point response; this config is for a %s extension", u.point)
		return
	}
	props := u.cat.Config.A2UI
	m := u.objectOf(path, v, props)
	if m == nil {
		return
	}
	u.fields(path, m, props, scope{})
	if d, ok := m.val("description").(string); ok && strings.TrimSpace(d) == "" {
		u.errorf(u.pkey(path, "description"), CodeRequired, "a2ui.description states when this response UI applies; it is empty")
	}
}

// runeCount counts characters.
func runeCount(s string) int { return utf8.RuneCountInString(s) }
