package uicatalog

import (
	"encoding/json"
	"fmt"
	"sync"

	"pluginhost/binding"
)

// MinHostVersion is the host version that the newer UI features need. Spec,
// Versioning: "A package that uses new UI fields sets min_host_version to
// 1.7.12."
const MinHostVersion = "1.7.12"

// Features that need MinHostVersion. Spec, Versioning: "The new features are
// compound conditions, action flows, input validation, asynchronous options,
// route data and capability schemas."
const (
	FeatureCompoundConditions = "compound conditions"
	FeatureFlows              = "action flows"
	FeatureInputValidation    = "input validation"
	FeatureAsyncOptions       = "asynchronous options"
	FeatureRouteData          = "route data"
	FeatureCapabilitySchemas  = "capability schemas"
)

// Names of the value ranges (see Ranges).
const (
	RangeSize           = "size"
	RangeOffset         = "offset"
	RangeSpacing        = "spacing"
	RangeBorderRadius   = "border_radius"
	RangeOpacity        = "opacity"
	RangeFlex           = "flex"
	RangeBorderWidth    = "border_width"
	RangeElevation      = "elevation"
	RangeAspectRatio    = "aspect_ratio"
	RangeRailBreakpoint = "rail_breakpoint"
	RangeRefresh        = "refresh_seconds"
	RangeColumns        = "grid_columns"
	RangeLines          = "max_lines"
	RangeTextLength     = "text_length"
	RangeFraction       = "fraction"
	RangeTypeScale      = "type_scale"
	RangeAny            = "any_number"
)

// MaxStaticItems bounds static suggestions and options. It matches the
// specification's bound on JSON values: "arrays/objects up to 64 entries".
const MaxStaticItems = 64

var ranges = []Range{
	{Name: RangeSize, Min: 0, Max: 4096, Source: "spec, Prop value ranges: sizes 0 to 4096"},
	{Name: RangeOffset, Min: -4096, Max: 4096, Source: "spec, Prop value ranges: position offsets -4096 to 4096"},
	{Name: RangeSpacing, Min: 0, Max: 128, Source: "spec, Prop value ranges: spacing and inset 0 to 128"},
	{Name: RangeBorderRadius, Min: 0, Max: 64, Source: "spec, Prop value ranges: border_radius 0 to 64"},
	{Name: RangeOpacity, Min: 0, Max: 1, Source: "spec, Prop value ranges: opacity 0 to 1"},
	{Name: RangeFlex, Min: 1, Max: 24, Integer: true, Source: "spec, Prop value ranges: flex 1 to 24"},
	{Name: RangeBorderWidth, Min: 0, Max: 16, Source: "spec: lower bound 0; upper bound 16 chosen here (thicker borders are blocks, use a surface)"},
	{Name: RangeElevation, Min: 0, Max: 24, Source: "spec: lower bound 0; upper bound 24 chosen here (the highest Material elevation in use)"},
	{Name: RangeAspectRatio, Min: 0.1, Max: 10, Source: "spec: lower bound 0.1; upper bound 10 chosen here (the inverse of the lower bound)"},
	{Name: RangeRailBreakpoint, Min: 480, Max: 1600, Source: "spec, navigation: rail_breakpoint number 480 to 1600"},
	{Name: RangeRefresh, Min: 30, Max: 86400, Integer: true, Source: "spec, data_sources: refresh_seconds integer 30 to 86400"},
	{Name: RangeColumns, Min: 1, Max: 12, Integer: true, Source: "chosen here: a grid has 1 to 12 columns"},
	{Name: RangeLines, Min: 1, Max: 1000, Integer: true, Source: "chosen here"},
	{Name: RangeTextLength, Min: 0, Max: 10000, Integer: true, Source: "chosen here: input lengths in characters"},
	{Name: RangeFraction, Min: 0, Max: 1, Source: "chosen here: a fraction of the whole"},
	{Name: RangeTypeScale, Min: 0.5, Max: 2, Source: "chosen here: a factor on every font size"},
	{Name: RangeAny, Min: -1e15, Max: 1e15, Source: "chosen here: any finite number of at most 15 digits before the point"},
}

// Props shared by several node types.
var (
	padding     = Prop{Name: "padding", Type: Inset, Doc: "space inside the node, around its children"}
	spacing     = Prop{Name: "spacing", Type: Number, Range: RangeSpacing, Doc: "space between children", Default: 0.0}
	runSpacing  = Prop{Name: "run_spacing", Type: Number, Range: RangeSpacing, Doc: "space between runs (lines)", Default: 0.0}
	mainAxis    = Prop{Name: "main_axis_alignment", Type: Enum, Values: []string{"start", "center", "end", "space_between", "space_around", "space_evenly"}, Default: "start", Doc: "placement of children along the main axis"}
	crossAxis   = Prop{Name: "cross_axis_alignment", Type: Enum, Values: []string{"start", "center", "end", "stretch"}, Default: "start", Doc: "placement of children across the main axis"}
	radius      = Prop{Name: "border_radius", Type: Number, Range: RangeBorderRadius, Doc: "corner radius"}
	borderWidth = Prop{Name: "border_width", Type: Number, Range: RangeBorderWidth, Doc: "width of the outline", Default: 0.0}
	borderColor = Prop{Name: "border_color", Type: Color, Default: "outline_variant", Doc: "colour of the outline"}
	elevation   = Prop{Name: "elevation", Type: Number, Range: RangeElevation, Doc: "shadow depth"}
	action      = Prop{Name: "action", Type: Action, Doc: "what a tap does"}
	disabled    = Prop{Name: "disabled_when", Type: Condition, Doc: "the node is shown disabled while this condition holds"}
	itemsSource = Prop{Name: "items_source", Type: Binding, Expect: "array", Doc: "a whole binding to an array (such as {{data.notes.data.items}}); the only child is the template drawn for each entry, where item reads the entry"}
	emptyText   = Prop{Name: "empty_text", Type: String, Bindable: true, Doc: "shown instead when the items source is an empty array"}
	label       = Prop{Name: "label", Type: String, Bindable: true, Doc: "visible text"}
	title       = Prop{Name: "title", Type: String, Bindable: true, Doc: "heading"}
	subtitle    = Prop{Name: "subtitle", Type: String, Bindable: true, Doc: "secondary line under the title"}
	iconProp    = Prop{Name: "icon", Type: Icon, Bindable: true, Doc: "leading icon"}
	stateKey    = Prop{Name: "state_key", Type: StateKey, Required: true, Doc: "the initial_state key this input reads and writes"}
	placeholder = Prop{Name: "placeholder", Type: String, Bindable: true, Doc: "hint shown while empty"}
	helperText  = Prop{Name: "helper_text", Type: String, Bindable: true, Doc: "help under the input"}
	dismissible = Prop{Name: "dismissible", Type: Boolean, Default: true, Doc: "a tap outside or the back gesture closes it"}
	onDismiss   = Prop{Name: "on_dismiss", Type: Action, Doc: "runs when the user closes it (typically set_state that hides it)"}
)

// validation are the input validation props. Spec, Inputs and validation:
// "required, min_length, max_length, minimum, maximum, error_text apply to
// field, select and switch."
var validation = []Prop{
	{Name: "required", Type: Boolean, Feature: FeatureInputValidation, Doc: "the value must be set (a switch: on)"},
	{Name: "min_length", Type: Integer, Range: RangeTextLength, Feature: FeatureInputValidation, Doc: "fewest characters of the value"},
	{Name: "max_length", Type: Integer, Range: RangeTextLength, Feature: FeatureInputValidation, Doc: "most characters of the value"},
	{Name: "minimum", Type: Number, Range: RangeAny, Feature: FeatureInputValidation, Doc: "smallest numeric value"},
	{Name: "maximum", Type: Number, Range: RangeAny, Feature: FeatureInputValidation, Doc: "largest numeric value"},
	{Name: "error_text", Type: String, Bindable: true, Feature: FeatureInputValidation, Doc: "message shown while the value breaks a rule above"},
}

var validationOrder = []Constraint{
	{Kind: Ordered, Props: []string{"min_length", "max_length"}, Code: "range_order"},
	{Kind: Ordered, Props: []string{"minimum", "maximum"}, Code: "range_order"},
}

func props(groups ...[]Prop) []Prop {
	var out []Prop
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var commonProps = []Prop{
	{Name: "visible_when", Type: Condition, Doc: "the node and its children are shown only while this condition holds"},
	{Name: "width", Type: Number, Range: RangeSize, Doc: "fixed width"},
	{Name: "height", Type: Number, Range: RangeSize, Doc: "fixed height"},
	{Name: "min_width", Type: Number, Range: RangeSize, Doc: "smallest width"},
	{Name: "max_width", Type: Number, Range: RangeSize, Doc: "largest width"},
	{Name: "min_height", Type: Number, Range: RangeSize, Doc: "smallest height"},
	{Name: "max_height", Type: Number, Range: RangeSize, Doc: "largest height"},
	{Name: "margin", Type: Inset, Doc: "space outside the node"},
	{Name: "opacity", Type: Number, Range: RangeOpacity, Default: 1.0, Doc: "1 is opaque, 0 invisible (still laid out)"},
	{Name: "semantics_label", Type: String, Bindable: true, Doc: "what a screen reader says for the node"},
}

var commonConstraints = []Constraint{
	{Kind: Ordered, Props: []string{"min_width", "max_width"}, Code: "range_order"},
	{Kind: Ordered, Props: []string{"min_height", "max_height"}, Code: "range_order"},
}

var typography = []string{
	"display_large", "display_medium", "display_small",
	"headline_large", "headline_medium", "headline_small",
	"title_large", "title_medium", "title_small",
	"body_large", "body_medium", "body_small",
	"label_large", "label_medium", "label_small",
}

var nodes = []NodeType{
	// Layout.
	{Type: "column", Group: "layout", Doc: "children one above the other", Children: ChildrenMany,
		Props: []Prop{spacing, padding, mainAxis, crossAxis}},
	{Type: "row", Group: "layout", Doc: "children side by side", Children: ChildrenMany,
		Props: []Prop{spacing, padding, mainAxis, crossAxis}},
	{Type: "wrap", Group: "layout", Doc: "children side by side, wrapping into more runs when the width is used up", Children: ChildrenMany,
		Props: []Prop{spacing, runSpacing, padding,
			{Name: "alignment", Type: Enum, Values: mainAxis.Values, Default: "start", Doc: "placement of children within a run"}}},
	{Type: "grid", Group: "layout", Doc: "children in equal cells, row by row", Children: ChildrenMany, Repeats: true,
		Props: []Prop{itemsSource,
			{Name: "columns", Type: Integer, Range: RangeColumns, Default: 2.0, Doc: "number of columns"},
			{Name: "min_column_width", Type: Number, Range: RangeSize, Doc: "instead of columns: as many columns as fit with at least this width"},
			spacing, padding,
			{Name: "child_aspect_ratio", Type: Number, Range: RangeAspectRatio, Default: 1.0, Doc: "width / height of each cell"},
			emptyText},
		Constraints: []Constraint{{Kind: AtMostOneOf, Props: []string{"columns", "min_column_width"}, Code: "exclusive"}}},
	{Type: "stack", Group: "layout", Doc: "children on top of each other; positioned children are placed by offsets", Children: ChildrenMany,
		Props: []Prop{
			{Name: "alignment", Type: Enum, Values: []string{"top_start", "top_center", "top_end", "center_start", "center", "center_end", "bottom_start", "bottom_center", "bottom_end"}, Default: "top_start", Doc: "placement of children that are not positioned"},
			{Name: "fit", Type: Enum, Values: []string{"loose", "expand"}, Default: "loose", Doc: "expand: children that are not positioned fill the stack"},
			{Name: "clip", Type: Boolean, Default: true, Doc: "cut children at the stack's edge"}}},
	{Type: "positioned", Group: "layout", Doc: "places its child in a stack by offsets from the stack's edges", Children: ChildrenOne, Parents: []string{"stack"},
		Props: []Prop{
			{Name: "left", Type: Number, Range: RangeOffset, Doc: "offset from the left edge"},
			{Name: "top", Type: Number, Range: RangeOffset, Doc: "offset from the top edge"},
			{Name: "right", Type: Number, Range: RangeOffset, Doc: "offset from the right edge"},
			{Name: "bottom", Type: Number, Range: RangeOffset, Doc: "offset from the bottom edge"}},
		Constraints: []Constraint{{Kind: AtLeastOneOf, Props: []string{"left", "top", "right", "bottom"}, Code: "positioned_offset"}}},
	{Type: "scroll", Group: "layout", Doc: "lets its child scroll when it is larger than the space", Children: ChildrenOne,
		Props: []Prop{{Name: "direction", Type: Enum, Values: []string{"vertical", "horizontal"}, Default: "vertical", Doc: "scroll axis"}, padding}},
	{Type: "padding", Group: "layout", Doc: "space around its child", Children: ChildrenOne,
		Props: []Prop{{Name: "padding", Type: Inset, Required: true, Doc: "the space, in the inset form"}}},
	{Type: "center", Group: "layout", Doc: "centres its child", Children: ChildrenOne},
	{Type: "expanded", Group: "layout", Doc: "makes its child fill the free space of a row or column, shared by flex", Children: ChildrenOne, Parents: []string{"row", "column"},
		Props: []Prop{{Name: "flex", Type: Integer, Range: RangeFlex, Default: 1.0, Doc: "share of the free space"}}},
	// Containers.
	{Type: "surface", Group: "container", Doc: "a coloured, optionally rounded and raised area", Children: ChildrenAtLeastOne,
		Props: []Prop{{Name: "color", Type: Color, Default: "surface", Doc: "background: colour role or literal"}, radius, borderWidth, borderColor, elevation, padding}},
	{Type: "card", Group: "container", Doc: "a Material card grouping related content; tappable with action", Children: ChildrenMany,
		Props: []Prop{
			{Name: "variant", Type: Enum, Values: []string{"elevated", "filled", "outlined"}, Default: "elevated", Doc: "Material card style"},
			{Name: "color", Type: Color, Doc: "background: colour role or literal (default by variant)"},
			radius, elevation, padding, action}},
	{Type: "section", Group: "container", Doc: "a titled group of content", Children: ChildrenMany,
		Props: []Prop{title, subtitle,
			{Name: "collapsible", Type: Boolean, Default: false, Doc: "the user may fold it"},
			{Name: "initially_collapsed", Type: Boolean, Default: false, Doc: "starts folded (with collapsible)"},
			spacing, padding}},
	// Content.
	{Type: "text", Group: "content", Doc: "a run of text", Children: ChildrenNone,
		Props: []Prop{
			{Name: "text", Type: String, Bindable: true, Required: true, Doc: "the text"},
			{Name: "style", Type: Enum, Values: typography, Default: "body_medium", Doc: "typography scale entry"},
			{Name: "color", Type: Color, Default: "on_surface", Doc: "colour role or literal"},
			{Name: "weight", Type: FontWeight, Doc: "font weight (default from the style)"},
			{Name: "align", Type: Enum, Values: []string{"start", "center", "end", "justify"}, Default: "start", Doc: "horizontal alignment"},
			{Name: "max_lines", Type: Integer, Range: RangeLines, Doc: "lines shown at most"},
			{Name: "overflow", Type: Enum, Values: []string{"clip", "ellipsis", "fade", "visible"}, Default: "ellipsis", Doc: "what shows when the text is cut by max_lines"},
			{Name: "selectable", Type: Boolean, Default: false, Doc: "the user can select and copy it"}}},
	{Type: "icon", Group: "content", Doc: "a Material Symbols icon", Children: ChildrenNone,
		Props: []Prop{
			{Name: "name", Type: Icon, Bindable: true, Required: true, Doc: "icon name"},
			{Name: "size", Type: Number, Range: RangeSize, Default: 24.0, Doc: "icon size"},
			{Name: "color", Type: Color, Default: "on_surface_variant", Doc: "colour role or literal"}}},
	{Type: "image", Group: "content", Doc: "an image fetched through the host's image proxy (needs the network permission)", Children: ChildrenNone,
		Props: []Prop{
			{Name: "url", Type: Binding, Expect: "string", Roots: []string{"data", "item"}, Required: true, Doc: "a whole binding to an HTTPS URL ({{data.<source>...}} or {{item...}}), never a literal URL"},
			{Name: "alt", Type: String, Bindable: true, Doc: "text alternative for screen readers"},
			{Name: "fit", Type: Enum, Values: []string{"cover", "contain", "fill", "fit_width", "fit_height", "none", "scale_down"}, Default: "cover", Doc: "how the image fills its box"},
			{Name: "aspect_ratio", Type: Number, Range: RangeAspectRatio, Doc: "width / height of the box"},
			radius,
			{Name: "fallback_icon", Type: Icon, Default: "broken_image", Doc: "shown while loading fails or the URL is rejected"}}},
	{Type: "avatar", Group: "content", Doc: "a round picture, initials or icon standing for a person or thing", Children: ChildrenNone,
		Props: []Prop{
			{Name: "url", Type: Binding, Expect: "string", Roots: []string{"data", "item"}, Doc: "a whole binding to an HTTPS URL, never a literal URL (needs the network permission)"},
			{Name: "label", Type: String, Bindable: true, Doc: "name the initials are taken from; also read by screen readers"},
			iconProp,
			{Name: "size", Type: Number, Range: RangeSize, Default: 40.0, Doc: "diameter"},
			{Name: "color", Type: Color, Default: "primary_container", Doc: "background behind initials or icon"}}},
	{Type: "badge", Group: "content", Doc: "a small count or dot on its child", Children: ChildrenOne,
		Props: []Prop{
			{Name: "label", Type: String, Bindable: true, Doc: "short text or count; without it the badge is a dot"},
			{Name: "color", Type: Color, Default: "error", Doc: "badge background"},
			{Name: "text_color", Type: Color, Default: "on_error", Doc: "badge text"}}},
	{Type: "divider", Group: "content", Doc: "a thin line between content", Children: ChildrenNone,
		Props: []Prop{
			{Name: "axis", Type: Enum, Values: []string{"horizontal", "vertical"}, Default: "horizontal", Doc: "line direction"},
			{Name: "thickness", Type: Number, Range: RangeBorderWidth, Default: 1.0, Doc: "line thickness"},
			{Name: "indent", Type: Number, Range: RangeSpacing, Default: 0.0, Doc: "empty space before the line"},
			{Name: "end_indent", Type: Number, Range: RangeSpacing, Default: 0.0, Doc: "empty space after the line"},
			{Name: "color", Type: Color, Default: "outline_variant", Doc: "line colour"}}},
	{Type: "spacer", Group: "content", Doc: "empty space of a fixed size, or a share of the free space in a row or column", Children: ChildrenNone,
		Props: []Prop{
			{Name: "size", Type: Number, Range: RangeSize, Doc: "fixed length along the parent's axis"},
			{Name: "flex", Type: Integer, Range: RangeFlex, Doc: "share of the free space instead of a fixed size"}},
		Constraints: []Constraint{{Kind: AtMostOneOf, Props: []string{"size", "flex"}, Code: "exclusive"}}},
	{Type: "button", Group: "content", Doc: "runs an action when pressed", Children: ChildrenNone,
		Props: []Prop{label, iconProp,
			{Name: "variant", Type: Enum, Values: []string{"filled", "tonal", "outlined", "text", "elevated"}, Default: "filled", Doc: "Material button style"},
			{Name: "action", Type: Action, Required: true, Doc: "what pressing does"},
			disabled},
		Constraints: []Constraint{{Kind: AtLeastOneOf, Props: []string{"label", "icon"}, Code: "required_one_of"}}},
	{Type: "chip", Group: "content", Doc: "a compact choice, filter or action", Children: ChildrenNone,
		Props: []Prop{
			{Name: "label", Type: String, Bindable: true, Required: true, Doc: "visible text"},
			iconProp,
			{Name: "variant", Type: Enum, Values: []string{"assist", "filter", "input", "suggestion"}, Default: "assist", Doc: "Material chip style"},
			{Name: "selected", Type: Boolean, Bindable: true, Default: false, Doc: "shown selected (a filter chip); bind it to state"},
			action, disabled}},
	{Type: "metric", Group: "content", Doc: "a key figure with its label", Children: ChildrenNone,
		Props: []Prop{
			{Name: "label", Type: String, Bindable: true, Required: true, Doc: "what the figure is"},
			{Name: "value", Type: Value, Bindable: true, Required: true, Doc: "the figure"},
			{Name: "unit", Type: String, Bindable: true, Doc: "unit after the figure"},
			{Name: "caption", Type: String, Bindable: true, Doc: "a line under the figure, such as a change"},
			{Name: "trend", Type: Enum, Bindable: true, Values: []string{"up", "down", "flat"}, Doc: "arrow next to the caption"},
			iconProp}},
	{Type: "progress", Group: "content", Doc: "progress of a task", Children: ChildrenNone,
		Props: []Prop{
			{Name: "value", Type: Number, Range: RangeFraction, Bindable: true, Doc: "done fraction 0 to 1; without it the indicator is indeterminate"},
			{Name: "variant", Type: Enum, Values: []string{"linear", "circular"}, Default: "linear", Doc: "indicator shape"},
			label,
			{Name: "color", Type: Color, Default: "primary", Doc: "indicator colour"}}},
	// Collections.
	{Type: "list", Group: "collection", Doc: "a vertical list; repeated over items_source or of static children", Children: ChildrenMany, Repeats: true,
		Props: []Prop{itemsSource, spacing, padding,
			{Name: "dividers", Type: Boolean, Default: false, Doc: "a divider between entries"},
			emptyText}},
	{Type: "timeline", Group: "collection", Doc: "entries on a vertical time line; repeated over items_source or of static children", Children: ChildrenMany, Repeats: true,
		Props: []Prop{itemsSource, spacing, padding, emptyText}},
	{Type: "calendar", Group: "collection", Doc: "a month, week or agenda of dated entries", Children: ChildrenNone,
		Props: []Prop{
			{Name: "items_source", Type: Binding, Expect: "array", Doc: "a whole binding to an array of entries"},
			{Name: "date_field", Type: Field, Default: "date", Doc: "member of an entry holding its date (ISO 8601)"},
			{Name: "title_field", Type: Field, Default: "title", Doc: "member of an entry holding its title"},
			{Name: "view", Type: Enum, Values: []string{"month", "week", "agenda"}, Default: "month", Doc: "layout"},
			{Name: "first_day_of_week", Type: Enum, Values: []string{"locale", "monday", "sunday", "saturday"}, Default: "locale", Doc: "first column"},
			{Name: "action", Type: Action, ItemScope: true, Doc: "runs when an entry is tapped; item reads that entry"}}},
	{Type: "chart", Group: "collection", Doc: "a simple chart of an array of points", Children: ChildrenNone,
		Props: []Prop{
			{Name: "variant", Type: Enum, Values: []string{"line", "bar", "area", "pie", "donut"}, Default: "line", Doc: "chart type"},
			{Name: "items_source", Type: Binding, Expect: "array", Required: true, Doc: "a whole binding to an array of points"},
			{Name: "x_field", Type: Field, Required: true, Doc: "member of a point giving its x value or category"},
			{Name: "y_field", Type: Field, Required: true, Doc: "member of a point giving its y value"},
			{Name: "series_field", Type: Field, Doc: "member of a point naming its series (one line or bar group per series)"},
			title,
			{Name: "color", Type: Color, Default: "primary", Doc: "colour of the first series"},
			{Name: "y_min", Type: Number, Range: RangeAny, Doc: "lower end of the y axis (default from the data)"},
			{Name: "y_max", Type: Number, Range: RangeAny, Doc: "upper end of the y axis (default from the data)"},
			{Name: "show_legend", Type: Boolean, Default: false, Doc: "show the series legend"},
			{Name: "show_grid", Type: Boolean, Default: true, Doc: "show grid lines"}},
		Constraints: []Constraint{{Kind: Ordered, Props: []string{"y_min", "y_max"}, Code: "range_order"}}},
	// Inputs and overlays.
	{Type: "form", Group: "input", Doc: "groups inputs: a flow with validate: true inside a form checks the form's inputs", Children: ChildrenMany,
		Props: []Prop{spacing, padding}},
	{Type: "dialog", Group: "overlay", Doc: "a modal dialog, open while it is visible (use visible_when on a state key)", Children: ChildrenMany,
		Props: []Prop{title, dismissible, onDismiss}},
	{Type: "sheet", Group: "overlay", Doc: "a bottom sheet, open while it is visible (use visible_when on a state key)", Children: ChildrenMany,
		Props: []Prop{title, dismissible, onDismiss}},
	{Type: "field", Group: "input", Doc: "a text input that writes its state key", Children: ChildrenNone,
		Props: props([]Prop{stateKey, label, placeholder, helperText,
			{Name: "keyboard", Type: Enum, Values: []string{"text", "multiline", "number", "email", "url", "phone", "search"}, Default: "text", Doc: "kind of text and keyboard (there is no password kind: state never holds secrets)"},
			{Name: "max_lines", Type: Integer, Range: RangeLines, Doc: "lines shown at most (multiline)"},
			{Name: "leading_icon", Type: Icon, Doc: "icon before the text"},
			{Name: "suggestions", Type: Strings, MaxItems: MaxStaticItems, Doc: "static autocomplete strings"},
			{Name: "suggestions_source", Type: Binding, Expect: "array", Roots: []string{"data"}, Doc: "a whole binding to a data.<source>... array of autocomplete strings"}},
			validation, []Prop{disabled, {Name: "on_submit", Type: Action, Doc: "runs when the user submits from the keyboard"}}),
		Constraints: append([]Constraint{{Kind: AtMostOneOf, Props: []string{"suggestions", "suggestions_source"}, Code: "exclusive"}}, validationOrder...)},
	{Type: "select", Group: "input", Doc: "a choice among options that writes the chosen value to its state key", Children: ChildrenNone,
		Props: props([]Prop{stateKey, label, placeholder, helperText,
			{Name: "options", Type: Options, MaxItems: MaxStaticItems, Doc: "static list of {value, label}"},
			{Name: "options_source", Type: Binding, Expect: "array", Roots: []string{"data"}, Feature: FeatureAsyncOptions, Doc: "a whole binding to a data.<source>... array returned by a capability"},
			{Name: "option_value_field", Type: Field, Default: "value", Doc: "member of an options_source entry giving its value"},
			{Name: "option_label_field", Type: Field, Default: "label", Doc: "member of an options_source entry giving its label"},
			{Name: "searchable", Type: Boolean, Default: false, Doc: "use the searchable select"}},
			validation, []Prop{disabled}),
		Constraints: append([]Constraint{{Kind: ExactlyOneOf, Props: []string{"options", "options_source"}, Code: "options_source"}}, validationOrder...)},
	{Type: "switch", Group: "input", Doc: "an on/off toggle that writes true or false to its state key", Children: ChildrenNone,
		Props:       props([]Prop{stateKey, label}, validation, []Prop{disabled}),
		Constraints: validationOrder},
	{Type: "empty", Group: "content", Doc: "an empty state: icon, title, message and an optional action", Children: ChildrenNone,
		Props: []Prop{
			{Name: "icon", Type: Icon, Bindable: true, Default: "inbox", Doc: "illustrating icon"},
			title,
			{Name: "message", Type: String, Bindable: true, Doc: "explanation"},
			{Name: "action", Type: Action, Doc: "what the button does"},
			{Name: "action_label", Type: String, Bindable: true, Doc: "the button's label"}},
		Constraints: []Constraint{
			{Kind: AtLeastOneOf, Props: []string{"title", "message"}, Code: "required_one_of"},
			{Kind: Requires, Props: []string{"action", "action_label"}, Code: "required_one_of"}}},
}

// colorRoles are the Material 3 colour scheme roles, in snake_case.
var colorRoles = []string{
	"primary", "on_primary", "primary_container", "on_primary_container",
	"primary_fixed", "primary_fixed_dim", "on_primary_fixed", "on_primary_fixed_variant",
	"secondary", "on_secondary", "secondary_container", "on_secondary_container",
	"secondary_fixed", "secondary_fixed_dim", "on_secondary_fixed", "on_secondary_fixed_variant",
	"tertiary", "on_tertiary", "tertiary_container", "on_tertiary_container",
	"tertiary_fixed", "tertiary_fixed_dim", "on_tertiary_fixed", "on_tertiary_fixed_variant",
	"error", "on_error", "error_container", "on_error_container",
	"surface", "on_surface", "surface_variant", "on_surface_variant",
	"surface_dim", "surface_bright", "surface_container_lowest", "surface_container_low",
	"surface_container", "surface_container_high", "surface_container_highest", "surface_tint",
	"background", "on_background",
	"inverse_surface", "on_inverse_surface", "inverse_primary",
	"outline", "outline_variant", "shadow", "scrim",
}

// contrastPairs are the roles meant to be read one on the other.
var contrastPairs = []ContrastPair{
	{"on_primary", "primary"}, {"on_primary_container", "primary_container"},
	{"on_primary_fixed", "primary_fixed"}, {"on_primary_fixed_variant", "primary_fixed"},
	{"on_secondary", "secondary"}, {"on_secondary_container", "secondary_container"},
	{"on_secondary_fixed", "secondary_fixed"}, {"on_secondary_fixed_variant", "secondary_fixed"},
	{"on_tertiary", "tertiary"}, {"on_tertiary_container", "tertiary_container"},
	{"on_tertiary_fixed", "tertiary_fixed"}, {"on_tertiary_fixed_variant", "tertiary_fixed"},
	{"on_error", "error"}, {"on_error_container", "error_container"},
	{"on_surface", "surface"}, {"on_surface", "surface_dim"}, {"on_surface", "surface_bright"},
	{"on_surface", "surface_container_lowest"}, {"on_surface", "surface_container_low"},
	{"on_surface", "surface_container"}, {"on_surface", "surface_container_high"},
	{"on_surface", "surface_container_highest"},
	{"on_surface_variant", "surface_variant"}, {"on_surface_variant", "surface"},
	{"on_background", "background"},
	{"on_inverse_surface", "inverse_surface"}, {"inverse_primary", "inverse_surface"},
}

var fontWeights = []NamedWeight{
	{"thin", 100}, {"extra_light", 200}, {"light", 300}, {"regular", 400}, {"medium", 500},
	{"semi_bold", 600}, {"bold", 700}, {"extra_bold", 800}, {"black", 900},
}

var actions = []ActionType{
	{Type: "invoke", Doc: "calls a capability (or a host.storage.* tool); with store, a successful result replaces that data source",
		Fields: []Prop{
			{Name: "capability", Type: Capability, Required: true, Doc: "a capability of the manifest or host.storage.list|get|create|update|delete"},
			{Name: "query", Type: String, Bindable: true, Nullable: true, Doc: "free text passed with the call, or null"},
			{Name: "arguments", Type: Object, Doc: "arguments; checked against the capability's input_schema"},
			{Name: "store", Type: Source, Doc: "id of a declared data source the result replaces"}}},
	{Type: "flow", Feature: FeatureFlows, Doc: "runs actions one after another (sequential: later actions read earlier store results) or together (parallel)",
		Fields: []Prop{
			{Name: "mode", Type: Enum, Values: []string{"sequential", "parallel"}, Default: "sequential", Doc: "order of the actions"},
			{Name: "validate", Type: Boolean, Default: false, Doc: "do not run while the enclosing form (or, outside a form, the screen) has an invalid input"},
			{Name: "continue_on_error", Type: Boolean, Default: false, Doc: "keep going after an action fails"},
			{Name: "actions", Type: Actions, Required: true, MinItems: 1, MaxItems: MaxActionsPerFlow, Doc: "the actions (flows may nest)"}}},
	{Type: "set_state", Doc: "writes declared state keys",
		Fields: []Prop{
			{Name: "values", Type: StateValues, Required: true, Doc: "object of initial_state keys to their new values (bindable)"},
			{Name: "persist", Type: Boolean, Default: false, Doc: "also keep the values in the extension's settings namespace"}}},
	{Type: "refresh", Doc: "reloads a data source",
		Fields: []Prop{{Name: "source", Type: Source, Required: true, Doc: "id of a declared data source"}}},
	{Type: "navigate", Doc: "opens another UI extension of the same plugin",
		Fields: []Prop{
			{Name: "target", Type: Target, Required: true, Doc: "id of a UI extension of the same manifest"},
			{Name: "parameters", Type: Parameters, Feature: FeatureRouteData, Doc: "object delivered to the target as context.route.<parameter>"},
			{Name: "result_state", Type: StateKey, Feature: FeatureRouteData, Doc: "initial_state key that receives the result the target returns with back"},
			{Name: "transition", Type: Enum, Values: []string{"platform", "fade", "slide", "none"}, Default: "platform", Doc: "animation"},
			{Name: "replace", Type: Boolean, Default: false, Doc: "replace the current route in the back stack"}}},
	{Type: "back", Doc: "closes the current route",
		Fields: []Prop{{Name: "result", Type: Object, Feature: FeatureRouteData, Doc: "object returned to the opener's result_state (back.result)"}}},
}

var appBarAction = []Prop{
	{Name: "id", Type: ID, Required: true, Doc: "unique among the app bar actions"},
	{Name: "label", Type: String, Required: true, Doc: "name of the action (shown in the overflow menu, read by screen readers)"},
	{Name: "icon", Type: Icon, Doc: "icon shown in the bar"},
	{Name: "show_as", Type: Enum, Values: []string{"auto", "always", "overflow"}, Default: "auto", Doc: "in the bar, or in the overflow menu; rare actions belong in overflow"},
	{Name: "action", Type: Action, Required: true, Doc: "what it does"},
}

var navigationItem = []Prop{
	{Name: "id", Type: ID, Required: true, Doc: "unique among the items"},
	{Name: "label", Type: String, Required: true, Doc: "item label"},
	{Name: "icon", Type: Icon, Doc: "item icon"},
	{Name: "selected_icon", Type: Icon, Doc: "icon while selected"},
	{Name: "value", Type: Value, Doc: "written to selected_state_key when the item is chosen; required when selected_state_key is set"},
	{Name: "action", Type: Action, Required: true, Doc: "runs when the item is chosen"},
}

var themeMembers = []Prop{
	{Name: "color_scheme", Type: ColorScheme, Doc: "colour roles to colours: a literal, or another role's name (a semantic token)"},
	{Name: "typography", Type: Group, Doc: "text settings", Members: []Prop{
		{Name: "scale", Type: Number, Range: RangeTypeScale, Default: 1.0, Doc: "factor on every font size"},
		{Name: "body_weight", Type: FontWeight, Doc: "weight of body and label styles"},
		{Name: "title_weight", Type: FontWeight, Doc: "weight of display, headline and title styles"}}},
	{Name: "surface", Type: Group, Doc: "surface settings", Members: []Prop{
		{Name: "elevation", Type: Number, Range: RangeElevation, Doc: "default elevation of surfaces and cards"}}},
	{Name: "border", Type: Group, Doc: "border settings", Members: []Prop{
		{Name: "width", Type: Number, Range: RangeBorderWidth, Doc: "default border width"},
		{Name: "radius", Type: Number, Range: RangeBorderRadius, Doc: "default border radius"}}},
	{Name: "icon", Type: Group, Doc: "icon settings", Members: []Prop{
		{Name: "size", Type: Number, Range: RangeSize, Doc: "default icon size"}}},
	{Name: "states", Type: Group, Doc: "interaction states", Members: []Prop{
		{Name: "disabled_opacity", Type: Number, Range: RangeOpacity, Doc: "opacity of disabled nodes"},
		{Name: "selected_color", Type: Color, Doc: "colour of selected items"}}},
	{Name: "radius", Type: Number, Range: RangeBorderRadius, Doc: "default corner radius"},
	{Name: "spacing", Type: Number, Range: RangeSpacing, Doc: "base spacing unit"},
	{Name: "density", Type: Enum, Values: []string{"compact", "comfortable", "standard"}, Doc: "visual density"},
}

var themeVariants = []string{"light", "dark"}

func theme() []Prop {
	out := append([]Prop{}, themeMembers...)
	for _, v := range themeVariants {
		out = append(out, Prop{Name: v, Type: Group, Members: themeMembers,
			Doc: "overrides for the " + v + " mode, with the groups above; light and dark cannot be nested inside a variant"})
	}
	return out
}

var config = ConfigShape{
	TopLevel: []Prop{
		{Name: "ui_schema", Type: Integer, Required: true, Doc: "the UI Runtime version: 2"},
		{Name: "icon", Type: Icon, Doc: "icon of the extension in the host"},
		{Name: "description", Type: String, MaxLength: 500, Doc: "what the extension shows, for the host and the AI"},
		{Name: "placement", Type: Enum, Values: []string{"auto", "navigation", "menu", "hidden"}, Default: "auto", Doc: "where the host offers the extension: its choice, the main navigation, the plugin menu, or nowhere (reached only by navigate)"},
		{Name: "app_bar", Type: Group, Doc: "the top app bar"},
		{Name: "navigation", Type: Group, Doc: "tabs, bar, rail or drawer"},
		{Name: "theme", Type: Group, Doc: "overrides of the host's Material 3 theme"},
		{Name: "initial_state", Type: Object, Doc: "state keys and their initial values"},
		{Name: "data_sources", Type: Items, MaxItems: MaxDataSources, Doc: "capability results the config reads"},
		{Name: "a2ui", Type: Group, Doc: "response UI declaration (only for extension point response)"},
		{Name: "view", Type: Node, Required: true, Doc: "the root node of the tree"},
	},
	AppBar: []Prop{
		{Name: "title", Type: String, Bindable: true, Doc: "title"},
		{Name: "subtitle", Type: String, Bindable: true, Doc: "subtitle"},
		{Name: "pinned", Type: Boolean, Default: false, Doc: "stays visible while the body scrolls"},
		{Name: "actions", Type: Items, MaxItems: MaxAppBarActions, Members: appBarAction, Doc: "actions of the bar"},
	},
	Navigation: []Prop{
		{Name: "type", Type: Enum, Values: []string{"tabs", "bar", "rail", "drawer", "adaptive"}, Default: "adaptive", Doc: "navigation style; adaptive picks bar or rail by width"},
		{Name: "selected_state_key", Type: StateKey, Doc: "initial_state key holding the selected item's value"},
		{Name: "persist", Type: Boolean, Default: false, Doc: "keep the selection across visits"},
		{Name: "label_behavior", Type: Enum, Values: []string{"auto", "always", "selected", "never"}, Default: "auto", Doc: "when item labels show"},
		{Name: "rail_breakpoint", Type: Number, Range: RangeRailBreakpoint, Default: 600.0, Doc: "width from which adaptive shows a rail"},
		{Name: "items", Type: Items, Required: true, MinItems: MinNavigationItems, MaxItems: MaxNavigationItems, Members: navigationItem, Doc: "the destinations"},
	},
	DataSource: []Prop{
		{Name: "id", Type: ID, Required: true, Doc: "unique id, read as data.<id>"},
		{Name: "capability", Type: Capability, Required: true, Doc: "a capability of the manifest or a host.storage.* tool"},
		{Name: "trigger", Type: Enum, Values: []string{"load", "manual"}, Default: "load", Doc: "load: when the screen opens; manual: on refresh or invoke store"},
		{Name: "query", Type: String, Bindable: true, Nullable: true, Doc: "free text passed with the call, or null"},
		{Name: "arguments", Type: Object, Doc: "arguments (bindable values), checked against the capability's input_schema"},
		{Name: "refresh_seconds", Type: Integer, Range: RangeRefresh, Doc: "reload period while the screen is in the foreground"},
	},
	A2UI: []Prop{
		{Name: "version", Type: Version, Required: true, Doc: "version of the A2UI contract the declaration follows"},
		{Name: "description", Type: String, Required: true, MaxLength: 2000, Doc: "states when this response UI applies"},
		{Name: "schema", Type: Schema, Required: true, Doc: "JSON Schema (safe subset) that the actual tool result must satisfy"},
	},
	NodeMembers: []Prop{
		{Name: "type", Type: Enum, Required: true, Doc: "node type"},
		{Name: "props", Type: Group, Doc: "props of the node type"},
		{Name: "children", Type: Node, Doc: "array of child nodes"},
	},
	ThemeVariants: themeVariants,
}

func limits() []Limit {
	n := func(v int) string { return fmt.Sprint(v) }
	return []Limit{
		{"nodes per tree", n(MaxNodes), "a repeated template counts once"},
		{"tree depth", n(MaxTreeDepth), "the root (view) is depth 0"},
		{"children per node", n(MaxChildren), ""},
		{"data sources", n(MaxDataSources), "ids unique"},
		{"state keys", n(MaxStateKeys), "a letter, then letters, digits, _; at most " + n(MaxStateKeyLength) + " characters"},
		{"config JSON size", "32 KiB", "bytes of the file"},
		{"automatic refresh", "30 to 86400 seconds", "refresh_seconds"},
		{"app bar actions", n(MaxAppBarActions), ""},
		{"navigation items", n(MinNavigationItems) + " to " + n(MaxNavigationItems), ""},
		{"rail_breakpoint", "480 to 1600", ""},
		{"binding depth", n(binding.MaxDepth) + " segments", "the root, each name and each index count"},
		{"JSON value depth", n(MaxValueDepth), "state values, arguments, parameters, set_state values, condition operands, back results; a scalar is depth 0"},
		{"JSON value entries", n(MaxValueEntries), "per array or object"},
		{"flow nesting depth", n(MaxFlowDepth), "a flow that is no flow's action is depth 1"},
		{"actions in all flows", n(MaxFlowActions), "every entry of every flow's actions in the config"},
		{"actions per flow", n(MaxActionsPerFlow), "at least 1"},
		{"condition depth", n(binding.MaxConditionDepth), "the outermost condition is depth 1"},
		{"conditions", n(binding.MaxConditions), "single conditions in the whole config"},
	}
}

var (
	once    sync.Once
	catalog *Data
	encoded []byte
)

// Catalog returns the catalog. It is built once; callers must not modify it.
func Catalog() *Data {
	once.Do(build)
	return catalog
}

// JSON returns the catalog as indented JSON, for a JavaScript runtime.
func JSON() []byte {
	once.Do(build)
	return encoded
}

func build() {
	byName := map[string]Range{}
	for _, r := range ranges {
		byName[r.Name] = r
	}
	fill := func(ps []Prop) {
		var walk func(ps []Prop)
		walk = func(ps []Prop) {
			for i := range ps {
				p := &ps[i]
				if p.Range != "" {
					r, ok := byName[p.Range]
					if !ok {
						panic(fmt.Sprintf("uicatalog: prop %s names unknown range %s", p.Name, p.Range))
					}
					lo, hi := r.Min, r.Max
					p.Min, p.Max = &lo, &hi
					if r.Integer {
						p.Type = Integer
					}
				}
				if len(p.Members) > 0 {
					p.Members = append([]Prop(nil), p.Members...)
					walk(p.Members)
				}
			}
		}
		walk(ps)
	}
	c := &Data{
		MinHostVersion: MinHostVersion,
		Features:       []string{FeatureCompoundConditions, FeatureFlows, FeatureInputValidation, FeatureAsyncOptions, FeatureRouteData, FeatureCapabilitySchemas},
		Ranges:         ranges,
		CommonProps:    append([]Prop(nil), commonProps...),
		Inset: Form{
			Doc:      "padding and margin: a number for all four sides, or an object with sides {top, right, bottom, left} or axes {horizontal, vertical} (one family per object; missing members are 0). Every value is 0 to 128 (spec: spacing and inset).",
			Examples: []string{`16`, `{"horizontal": 16, "vertical": 8}`, `{"top": 8, "left": 16}`},
		},
		ColorLiteral: Form{
			Doc:      "a literal colour is #rgb, #rrggbb or #rrggbbaa (hex digits, either case; aa is alpha, ff opaque); anything else in a colour place must be a colour role",
			Examples: []string{`"#1a73e8"`, `"#fff"`, `"#00000080"`, `"primary"`},
		},
		ColorRoles:    colorRoles,
		ContrastPairs: contrastPairs,
		Typography:    typography,
		FontWeights:   fontWeights,
		IconPolicy: Form{
			Doc:      "icons are Material Symbols names in snake_case (lower-case letters, digits and _, 1 to 64 characters, as in the Material Symbols catalogue); the host draws a fallback for a name it does not know, so only the form is validated",
			Examples: []string{`"home"`, `"arrow_back"`, `"3d_rotation"`},
		},
		Actions: actions,
		Conditions: ConditionShape{
			Doc:         "a single condition {path, and exactly one of equals, not_equals, exists}; or {all: [conditions]}, {any: [conditions]}, {not: condition}. path is a bare binding path (no braces). equals compares JSON values (numbers by value, no type coercion; a missing value is null); exists is true when the value is present and not null.",
			Operators:   []string{binding.OpEquals, binding.OpNotEquals, binding.OpExists},
			Combinators: []string{binding.OpAll, binding.OpAny, binding.OpNot},
			MaxDepth:    binding.MaxConditionDepth,
			MaxCount:    binding.MaxConditions,
		},
		Bindings: BindingShape{
			Doc:      "{{path}} in a bindable string. A string that is exactly one binding keeps the JSON type of the value; any other is a text template. \\{{ is a literal {{.",
			MaxDepth: binding.MaxDepth,
		},
		Config: config,
		Limits: limits(),
	}
	for _, r := range binding.Roots() {
		c.Bindings.Roots = append(c.Bindings.Roots, RootEntry(r))
	}
	c.Config.Theme = theme()
	fill(c.CommonProps)
	fill(c.Config.TopLevel)
	fill(c.Config.AppBar)
	fill(c.Config.Navigation)
	fill(c.Config.DataSource)
	fill(c.Config.A2UI)
	fill(c.Config.Theme)
	c.Actions = append([]ActionType(nil), actions...)
	for i := range c.Actions {
		c.Actions[i].Fields = append([]Prop(nil), c.Actions[i].Fields...)
		fill(c.Actions[i].Fields)
	}
	c.Nodes = make([]NodeType, len(nodes))
	c.nodeIndex = map[string]*NodeType{}
	for i, n := range nodes {
		n.Props = append([]Prop(nil), n.Props...)
		fill(n.Props)
		n.Constraints = append(append([]Constraint(nil), n.Constraints...), commonConstraints...)
		n.index = map[string]*Prop{}
		c.Nodes[i] = n
		nt := &c.Nodes[i]
		for j := range c.CommonProps {
			nt.index[c.CommonProps[j].Name] = &c.CommonProps[j]
		}
		for j := range nt.Props {
			nt.index[nt.Props[j].Name] = &nt.Props[j]
		}
		c.nodeIndex[n.Type] = nt
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		panic("uicatalog: " + err.Error())
	}
	catalog, encoded = c, append(b, '\n')
}
