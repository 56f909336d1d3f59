// Package uicatalog is the node catalog of UI Runtime v2 as data: the node
// types and their props, the child rules, the prop ranges, the theme colour
// roles and groups, the typography scale, the padding/margin input form, the
// action types and the shape of conditions and bindings.
//
// The validator, the preview renderer and docs/ui-catalog.md all read this one
// catalog: Catalog returns it typed, JSON returns it for a JavaScript runtime,
// and Markdown renders the documentation (`go generate ./uicatalog` writes
// docs/ui-catalog.md and uicatalog/catalog.json; a test fails when they are
// stale).
//
// The specification leaves props, the inset form and the colour role names
// open ("not shown"); this package is where the project fixes them.
package uicatalog

//go:generate go run gen.go

// Type is the kind of value a prop takes.
type Type string

// Prop types.
const (
	// String is text. A bindable string may be a template with any number of
	// bindings (a mixed template is text).
	String Type = "string"
	// Number is a finite number within Min..Max; Integer is an integral one. A
	// bindable number may be a whole binding instead.
	Number  Type = "number"
	Integer Type = "integer"
	// Boolean is true or false; a bindable one may be a whole binding.
	Boolean Type = "boolean"
	// Enum is one of Values; a bindable one may be a whole binding.
	Enum Type = "enum"
	// Color is a colour role of the theme (ColorRoles) or a literal #rgb,
	// #rrggbb or #rrggbbaa.
	Color Type = "color"
	// Icon is an icon name (see IconPolicy); a bindable one may be a whole
	// binding.
	Icon Type = "icon"
	// Inset is padding or margin in the input form of InsetForm.
	Inset Type = "inset"
	// FontWeight is 100 to 900 in steps of 100, or a name of FontWeights.
	FontWeight Type = "font_weight"
	// Action is one action object (see Actions).
	Action Type = "action"
	// Actions is an array of action objects.
	Actions Type = "actions"
	// Condition is a condition object (see Conditions).
	Condition Type = "condition"
	// Binding is a string that is exactly one binding; Expect says what it
	// must read (array, string).
	Binding Type = "binding"
	// StateKey names a key of initial_state; the node or action writes it.
	StateKey Type = "state_key"
	// Strings is a static array of strings, at most MaxItems.
	Strings Type = "strings"
	// Options is a static array of {value, label}, at most MaxItems.
	Options Type = "options"
	// Field names a member of each entry of an items source.
	Field Type = "field"
	// Value is a JSON scalar (string, number, boolean, null); strings may be
	// templates when bindable.
	Value Type = "value"
	// JSONValue is any JSON value within the value limits; strings inside may be
	// templates.
	JSONValue Type = "json"
	// Object is a JSON object within the value limits; strings inside may be
	// templates.
	Object Type = "object"
	// ID is an identifier, unique among its siblings.
	ID Type = "id"
	// Capability names a capability of the manifest or a host.storage.* tool.
	Capability Type = "capability"
	// Source names a data source of the config.
	Source Type = "source"
	// Target names a UI extension of the same manifest.
	Target Type = "target"
	// StateValues is an object whose members are declared state keys.
	StateValues Type = "state_values"
	// Parameters is an object of route parameters.
	Parameters Type = "parameters"
	// Schema is a JSON Schema in the safe subset of docs/validator.md.
	Schema Type = "schema"
	// Group is an object of the Members listed.
	Group Type = "group"
	// ColorScheme is an object of colour roles to colours (literal or role).
	ColorScheme Type = "color_scheme"
	// Node is a node of the tree.
	Node Type = "node"
	// Items is an array of objects of the Members listed, at most MaxItems.
	Items Type = "items"
	// Version is a string or number naming a version.
	Version Type = "version"
)

// Prop describes one prop of a node, or one field of a config object.
type Prop struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
	Doc  string `json:"doc"`
	// Required: the prop must be present.
	Required bool `json:"required,omitempty"`
	// Nullable: null is allowed too (and means absent).
	Nullable bool `json:"nullable,omitempty"`
	// Bindable: the value may be a binding (see Type for which form).
	Bindable bool `json:"bindable,omitempty"`
	// Range names the entry of Ranges that gives Min and Max.
	Range string   `json:"range,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	// MaxLength bounds a string, in characters.
	MaxLength int `json:"max_length,omitempty"`
	// MaxItems bounds Strings, Options and Items.
	MaxItems int `json:"max_items,omitempty"`
	// MinItems bounds Items and Actions from below.
	MinItems int      `json:"min_items,omitempty"`
	Values   []string `json:"values,omitempty"`
	Default  any      `json:"default,omitempty"`
	// Expect is the JSON type a Binding must read: array or string.
	Expect string `json:"expect,omitempty"`
	// Roots, when set, are the only roots a Binding may read from.
	Roots []string `json:"roots,omitempty"`
	// Feature names a feature that needs min_host_version 1.7.12 (Features).
	Feature string `json:"feature,omitempty"`
	// ItemScope: `item` may be read inside this prop (an action that runs for
	// one entry of an items source).
	ItemScope bool `json:"item_scope,omitempty"`
	// Members are the fields of a Group or of each entry of Items.
	Members []Prop `json:"members,omitempty"`
}

// Children says how many children a node takes.
type Children string

// Child rules.
const (
	ChildrenNone       Children = "none"
	ChildrenOne        Children = "one"
	ChildrenAtLeastOne Children = "at_least_one"
	ChildrenMany       Children = "many"
)

// Constraint kinds: rules that relate props of one node.
const (
	// AtLeastOneOf: at least one of Props is set.
	AtLeastOneOf = "at_least_one_of"
	// AtMostOneOf: at most one of Props is set.
	AtMostOneOf = "at_most_one_of"
	// ExactlyOneOf: exactly one of Props is set.
	ExactlyOneOf = "exactly_one_of"
	// Requires: when Props[0] is set, Props[1] must be set too.
	Requires = "requires"
	// Ordered: when both are literal numbers, Props[0] <= Props[1].
	Ordered = "ordered"
)

// Constraint is a rule over several props of one node; Code is the problem
// code the validator reports when it is broken.
type Constraint struct {
	Kind  string   `json:"kind"`
	Props []string `json:"props"`
	Code  string   `json:"code"`
}

// NodeType describes one node type.
type NodeType struct {
	Type     string   `json:"type"`
	Group    string   `json:"group"`
	Doc      string   `json:"doc"`
	Props    []Prop   `json:"props"`
	Children Children `json:"children"`
	// Parents, when set, are the only node types this node may be a direct
	// child of.
	Parents []string `json:"parents,omitempty"`
	// Repeats: with the prop items_source, the node has exactly one child, the
	// template, drawn once per entry; `item` reads the entry inside it.
	// Without items_source the children are static.
	Repeats     bool         `json:"repeats,omitempty"`
	Constraints []Constraint `json:"constraints,omitempty"`

	// index holds Props and the catalog's CommonProps by name.
	index map[string]*Prop
}

// Range is a named value range of the specification ("Prop value ranges") or
// one this catalog chose where the specification gives only a lower bound.
type Range struct {
	Name    string  `json:"name"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Integer bool    `json:"integer,omitempty"`
	// Source quotes the specification, or says the bound was chosen here.
	Source string `json:"source"`
}

// ActionType describes one action type; Fields are its members besides type.
type ActionType struct {
	Type    string `json:"type"`
	Doc     string `json:"doc"`
	Fields  []Prop `json:"fields"`
	Feature string `json:"feature,omitempty"`
}

// ContrastPair is a foreground colour role meant to be read on a background
// role.
type ContrastPair struct {
	Foreground string `json:"foreground"`
	Background string `json:"background"`
}

// NamedWeight is a font weight name and its numeric weight.
type NamedWeight struct {
	Name   string `json:"name"`
	Weight int    `json:"weight"`
}

// Form documents an input form in words and examples.
type Form struct {
	Doc      string   `json:"doc"`
	Examples []string `json:"examples"`
}

// ConditionShape documents conditions.
type ConditionShape struct {
	Doc         string   `json:"doc"`
	Operators   []string `json:"operators"`
	Combinators []string `json:"combinators"`
	MaxDepth    int      `json:"max_depth"`
	MaxCount    int      `json:"max_count"`
}

// BindingShape documents bindings.
type BindingShape struct {
	Doc      string      `json:"doc"`
	MaxDepth int         `json:"max_depth"`
	Roots    []RootEntry `json:"roots"`
}

// RootEntry is a readable path pattern (see binding.Roots).
type RootEntry struct {
	Pattern string `json:"pattern"`
	Type    string `json:"type"`
	Doc     string `json:"doc"`
}

// ConfigShape lists the fields of the objects of a UI config.
type ConfigShape struct {
	TopLevel      []Prop   `json:"top_level"`
	AppBar        []Prop   `json:"app_bar"`
	Navigation    []Prop   `json:"navigation"`
	DataSource    []Prop   `json:"data_source"`
	A2UI          []Prop   `json:"a2ui"`
	Theme         []Prop   `json:"theme"`
	NodeMembers   []Prop   `json:"node"`
	ThemeVariants []string `json:"theme_variants"`
}

// Data is the whole catalog.
type Data struct {
	// MinHostVersion is the host version the Features need.
	MinHostVersion string   `json:"min_host_version"`
	Features       []string `json:"features"`
	Ranges         []Range  `json:"ranges"`
	// CommonProps apply to every node type.
	CommonProps   []Prop         `json:"common_props"`
	Nodes         []NodeType     `json:"nodes"`
	Inset         Form           `json:"inset"`
	ColorLiteral  Form           `json:"color_literal"`
	ColorRoles    []string       `json:"color_roles"`
	ContrastPairs []ContrastPair `json:"contrast_pairs"`
	Typography    []string       `json:"typography"`
	FontWeights   []NamedWeight  `json:"font_weights"`
	IconPolicy    Form           `json:"icon_policy"`
	Actions       []ActionType   `json:"actions"`
	Conditions    ConditionShape `json:"conditions"`
	Bindings      BindingShape   `json:"bindings"`
	Config        ConfigShape    `json:"config"`
	Limits        []Limit        `json:"limits"`

	nodeIndex map[string]*NodeType
}

// Node returns the node type named t.
func (c *Data) Node(t string) (*NodeType, bool) {
	n, ok := c.nodeIndex[t]
	return n, ok
}

// Action returns the action type named t.
func (c *Data) Action(t string) (*ActionType, bool) {
	for i := range c.Actions {
		if c.Actions[i].Type == t {
			return &c.Actions[i], true
		}
	}
	return nil, false
}

// Prop returns the prop of the node type named name, a common prop included.
func (n *NodeType) Prop(name string) (*Prop, bool) {
	p, ok := n.index[name]
	return p, ok
}

// Lookup returns the member of props named name.
func Lookup(props []Prop, name string) (*Prop, bool) {
	for i := range props {
		if props[i].Name == name {
			return &props[i], true
		}
	}
	return nil, false
}
