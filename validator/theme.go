package validator

import (
	"strings"

	"pluginhost/uicatalog"
)

// themeColors holds the literal colours one theme level sets, by role, with
// the JSON Pointer where each is set.
type themeColors map[string]themeColor

type themeColor struct {
	value string // normalized literal; "" for a role reference (a semantic token)
	path  string
	// variant is the mode variant that sets it, "" for the base theme.
	variant string
}

// theme checks theme and the contrast of its colour pairs.
func (u *ui) theme(path string, v any) {
	props := u.cat.Config.Theme
	m := u.objectOf(path, v, props)
	if m == nil {
		return
	}
	base := u.themeLevel(path, m, props, false)
	modes := map[string]themeColors{}
	for _, mode := range u.cat.Config.ThemeVariants {
		mv, ok := m.get(mode)
		if !ok {
			continue
		}
		p, _ := uicatalog.Lookup(props, mode)
		mm := u.objectOf(u.pkey(path, mode), mv, append(append([]uicatalog.Prop(nil), p.Members...), variantProps(u.cat)...))
		if mm == nil {
			continue
		}
		colors := u.themeLevel(u.pkey(path, mode), mm, p.Members, true)
		for k, c := range colors {
			c.variant = mode
			colors[k] = c
		}
		modes[mode] = colors
	}
	// Each mode sees the base overrides with its own on top; the host fills
	// the rest, which cannot be judged here.
	reported := map[string]bool{}
	for _, mode := range u.cat.Config.ThemeVariants {
		eff := themeColors{}
		for k, c := range base {
			eff[k] = c
		}
		for k, c := range modes[mode] {
			eff[k] = c
		}
		for _, pair := range u.cat.ContrastPairs {
			fg, ok1 := eff[pair.Foreground]
			bg, ok2 := eff[pair.Background]
			if !ok1 || !ok2 || fg.value == "" || bg.value == "" {
				continue
			}
			// A pair set in the base theme is the same in both modes:
			// judge it once.
			where, key := mode+" mode", pair.Foreground+"|"+pair.Background+"|"+mode
			if fg.variant == "" && bg.variant == "" {
				where, key = "light and dark modes", pair.Foreground+"|"+pair.Background
			}
			if reported[key] {
				continue
			}
			reported[key] = true
			u.contrast(fg.path, fg.value, bg.path, bg.value, pair.Foreground+" ("+where+", on "+pair.Background+")")
		}
	}
}

// variantProps are the members a variant must not hold: light and dark.
func variantProps(c *uicatalog.Data) []uicatalog.Prop {
	var out []uicatalog.Prop
	for _, name := range c.Config.ThemeVariants {
		out = append(out, uicatalog.Prop{Name: name})
	}
	return out
}

// themeLevel checks the groups of the theme or of a variant and returns the
// colours of its color_scheme.
func (u *ui) themeLevel(path string, m *object, props []uicatalog.Prop, inVariant bool) themeColors {
	colors := themeColors{}
	for i := range props {
		p := &props[i]
		v, ok := m.get(p.Name)
		if !ok {
			continue
		}
		at := u.pkey(path, p.Name)
		switch {
		case contains(u.cat.Config.ThemeVariants, p.Name):
			// checked by theme
		case p.Type == uicatalog.ColorScheme:
			cs := u.object(at, v)
			for _, mb := range cs.list() {
				role, cv := mb.key, mb.val
				rp := u.pkey(at, role)
				if !uicatalog.IsColorRole(role) {
					u.errorf(rp, CodeUnknownField, "%q is not a colour role; roles: %s", role, joinComma(u.cat.ColorRoles))
					continue
				}
				colors[role] = themeColor{value: u.color(rp, cv), path: rp}
			}
		case p.Type == uicatalog.Group:
			g := u.objectOf(at, v, p.Members)
			if g != nil {
				u.fields(at, g, p.Members, scope{})
			}
		default:
			u.value(at, p, v, scope{})
		}
	}
	if inVariant {
		for _, mode := range u.cat.Config.ThemeVariants {
			if m.has(mode) {
				u.errorf(u.pkey(path, mode), CodeThemeNesting, "%s cannot be nested inside a theme variant; light and dark sit at the top of theme", mode)
			}
		}
	}
	return colors
}

func joinComma(xs []string) string { return strings.Join(xs, ", ") }
