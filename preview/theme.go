package preview

import "pluginhost/preview/assets"

// baseline are the host's Material 3 themes (assets.Themes), which a
// plugin's theme overrides.
var baseline = assets.Themes()

// Screen sizes the page can switch between: logical pixels of the frame the
// screen is drawn in. Their size classes follow the catalog: compact below
// 600, medium 600 to 839, expanded from 840.
var screenSizes = map[string][2]int{
	"compact":  {412, 892},
	"medium":   {700, 960},
	"expanded": {1180, 820},
}

// ScreenSizes returns the screen sizes the runtime's pages offer (compact,
// medium, expanded) as logical width and height. Callers must not change the
// map.
func ScreenSizes() map[string][2]int { return screenSizes }
