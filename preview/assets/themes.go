package assets

// Baseline colours of the host's Material 3 themes, by colour role of the
// catalog (uicatalog.Catalog().ColorRoles). A plugin's theme overrides these;
// anything it leaves out is filled from here, as the host does. The values
// are the Material 3 baseline scheme (source colour #6750A4).
var themes = map[string]map[string]string{
	"light": {
		"primary": "#6750a4", "on_primary": "#ffffff", "primary_container": "#eaddff", "on_primary_container": "#21005d",
		"primary_fixed": "#eaddff", "primary_fixed_dim": "#d0bcff", "on_primary_fixed": "#21005d", "on_primary_fixed_variant": "#4f378b",
		"secondary": "#625b71", "on_secondary": "#ffffff", "secondary_container": "#e8def8", "on_secondary_container": "#1d192b",
		"secondary_fixed": "#e8def8", "secondary_fixed_dim": "#ccc2dc", "on_secondary_fixed": "#1d192b", "on_secondary_fixed_variant": "#4a4458",
		"tertiary": "#7d5260", "on_tertiary": "#ffffff", "tertiary_container": "#ffd8e4", "on_tertiary_container": "#31111d",
		"tertiary_fixed": "#ffd8e4", "tertiary_fixed_dim": "#efb8c8", "on_tertiary_fixed": "#31111d", "on_tertiary_fixed_variant": "#633b48",
		"error": "#b3261e", "on_error": "#ffffff", "error_container": "#f9dedc", "on_error_container": "#410e0b",
		"surface": "#fef7ff", "on_surface": "#1d1b20", "surface_variant": "#e7e0ec", "on_surface_variant": "#49454f",
		"surface_dim": "#ded8e1", "surface_bright": "#fef7ff", "surface_container_lowest": "#ffffff", "surface_container_low": "#f7f2fa",
		"surface_container": "#f3edf7", "surface_container_high": "#ece6f0", "surface_container_highest": "#e6e0e9", "surface_tint": "#6750a4",
		"background": "#fef7ff", "on_background": "#1d1b20", "inverse_surface": "#322f35", "on_inverse_surface": "#f5eff7",
		"inverse_primary": "#d0bcff", "outline": "#79747e", "outline_variant": "#cac4d0", "shadow": "#000000", "scrim": "#000000",
	},
	"dark": {
		"primary": "#d0bcff", "on_primary": "#381e72", "primary_container": "#4f378b", "on_primary_container": "#eaddff",
		"primary_fixed": "#eaddff", "primary_fixed_dim": "#d0bcff", "on_primary_fixed": "#21005d", "on_primary_fixed_variant": "#4f378b",
		"secondary": "#ccc2dc", "on_secondary": "#332d41", "secondary_container": "#4a4458", "on_secondary_container": "#e8def8",
		"secondary_fixed": "#e8def8", "secondary_fixed_dim": "#ccc2dc", "on_secondary_fixed": "#1d192b", "on_secondary_fixed_variant": "#4a4458",
		"tertiary": "#efb8c8", "on_tertiary": "#492532", "tertiary_container": "#633b48", "on_tertiary_container": "#ffd8e4",
		"tertiary_fixed": "#ffd8e4", "tertiary_fixed_dim": "#efb8c8", "on_tertiary_fixed": "#31111d", "on_tertiary_fixed_variant": "#633b48",
		"error": "#f2b8b5", "on_error": "#601410", "error_container": "#8c1d18", "on_error_container": "#f9dedc",
		"surface": "#141218", "on_surface": "#e6e0e9", "surface_variant": "#49454f", "on_surface_variant": "#cac4d0",
		"surface_dim": "#141218", "surface_bright": "#3b383e", "surface_container_lowest": "#0f0d13", "surface_container_low": "#1d1b20",
		"surface_container": "#211f26", "surface_container_high": "#2b2930", "surface_container_highest": "#36343b", "surface_tint": "#d0bcff",
		"background": "#141218", "on_background": "#e6e0e9", "inverse_surface": "#e6e0e9", "on_inverse_surface": "#322f35",
		"inverse_primary": "#6750a4", "outline": "#938f99", "outline_variant": "#49454f", "shadow": "#000000", "scrim": "#000000",
	},
}

// Themes returns the host's Material 3 colour schemes by mode ("light",
// "dark") and colour role: the web host's own colours, and what a plugin's
// theme is filled from. Callers must not change the maps.
func Themes() map[string]map[string]string { return themes }
