package uicatalog

// Limits of a UI config. Spec, "Limits/UI config". The validator enforces
// them; the preview and the documentation read them from here.
const (
	// MaxNodes: "Nodes per tree: 160". A repeated template counts once.
	MaxNodes = 160
	// MaxTreeDepth: "Tree depth: 12 (root is depth 0)".
	MaxTreeDepth = 12
	// MaxChildren: "Children per node: 32".
	MaxChildren = 32
	// MaxDataSources: "Data sources: 8".
	MaxDataSources = 8
	// MaxStateKeys, MaxStateKeyLength: "State keys: 32; key length 64".
	MaxStateKeys      = 32
	MaxStateKeyLength = 64
	// MaxConfigBytes: "Config JSON size: 32 KiB".
	MaxConfigBytes = 32 * 1024
	// MaxAppBarActions: "App bar actions per extension: 6".
	MaxAppBarActions = 6
	// MinNavigationItems, MaxNavigationItems: "Navigation items: 2 to 8".
	MinNavigationItems = 2
	MaxNavigationItems = 8
	// MaxValueDepth, MaxValueEntries: "JSON binding value depth: 8;
	// arrays/objects up to 64 entries". A scalar has depth 0, [] and {} depth 1.
	MaxValueDepth   = 8
	MaxValueEntries = 64
	// MaxFlowDepth: "Flow nesting depth: 4". A flow that is no flow's action
	// has depth 1.
	MaxFlowDepth = 4
	// MaxFlowActions, MaxActionsPerFlow: "Actions in all flows: 16 total; 8
	// per flow". The total counts every entry of every flow's actions in the
	// config (a nested flow counts, and so do its actions).
	MaxFlowActions    = 16
	MaxActionsPerFlow = 8
)

// Limit is one limit, for the documentation.
type Limit struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Rule  string `json:"rule"`
}
