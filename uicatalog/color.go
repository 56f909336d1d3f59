package uicatalog

import (
	"math"
	"strings"
)

// RGBA is a colour with 8-bit channels.
type RGBA struct{ R, G, B, A uint8 }

// ParseColor parses a colour literal: #rgb, #rrggbb or #rrggbbaa.
func ParseColor(s string) (RGBA, bool) {
	if len(s) == 0 || s[0] != '#' {
		return RGBA{}, false
	}
	h := s[1:]
	var v [8]uint8
	for i := 0; i < len(h); i++ {
		d, ok := hexValue(h[i])
		if !ok {
			return RGBA{}, false
		}
		if i < 8 {
			v[i] = d
		}
	}
	switch len(h) {
	case 3:
		return RGBA{v[0] * 17, v[1] * 17, v[2] * 17, 255}, true
	case 6:
		return RGBA{v[0]<<4 | v[1], v[2]<<4 | v[3], v[4]<<4 | v[5], 255}, true
	case 8:
		return RGBA{v[0]<<4 | v[1], v[2]<<4 | v[3], v[4]<<4 | v[5], v[6]<<4 | v[7]}, true
	}
	return RGBA{}, false
}

func hexValue(c byte) (uint8, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// IsColorLiteral reports whether s is written as a colour literal (starts with
// #), valid or not.
func IsColorLiteral(s string) bool { return strings.HasPrefix(s, "#") }

// IsColorRole reports whether s is a colour role of the catalog.
func IsColorRole(s string) bool {
	for _, r := range colorRoles {
		if r == s {
			return true
		}
	}
	return false
}

// luminance is the WCAG 2.x relative luminance of an opaque colour.
func luminance(c RGBA) float64 {
	ch := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(c.R) + 0.7152*ch(c.G) + 0.0722*ch(c.B)
}

// ContrastRatio returns the WCAG 2.x contrast ratio (1 to 21) of two opaque
// colours. It reports false when either is translucent: its contrast depends
// on what lies beneath and cannot be decided statically.
func ContrastRatio(fg, bg RGBA) (float64, bool) {
	if fg.A != 255 || bg.A != 255 {
		return 0, false
	}
	l1, l2 := luminance(fg), luminance(bg)
	if l1 < l2 {
		l1, l2 = l2, l1
	}
	return (l1 + 0.05) / (l2 + 0.05), true
}

// MinContrast is the contrast below which text is hard to read. Spec, theme:
// "A computable contrast below 4.5:1 is a warning."
const MinContrast = 4.5
