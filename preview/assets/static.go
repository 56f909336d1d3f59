package assets

//go:generate go run ./iconsubset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"pluginhost/compression"
	"pluginhost/uicatalog"
)

// Static is a file the web host serves under its assets path, named by its
// content's hash, so that it can be cached for good.
type Static struct {
	Name        string // the hashed name, such as "shell.3f2a9c1b7d4e.js"
	ContentType string
	Body        []byte
	// Compressed holds Body as brotli and gzip; empty for a file that is
	// compressed already (a font).
	Compressed compression.Precompressed
	ETag       string
}

// The icon font's files: Material Symbols Outlined (fonts/README.md), whole,
// and the subset of the names in fonts/icons.txt that the web host's pages
// load first.
const (
	IconFont       = "material-symbols-outlined.woff2"
	IconFontSubset = "material-symbols-subset.woff2"
)

// The web host's stylesheet, app.css, is preview.css (the runtime's nodes)
// and webhost.css (the shell), after the host's themes as custom properties.
// A url(NAME) in it that names a static file becomes the file's hashed name.
var cssParts = []string{"preview.css", "webhost.css"}

// linkedEntries are the entry modules of pages that link their scripts,
// each served as one script: the runtime's data, then the entry's bundle.
var linkedEntries = []string{"shell.js"}

var staticURL = regexp.MustCompile(`url\("?([a-z0-9.-]+)"?\)`)

var statics = sync.OnceValue(func() struct {
	byHashed map[string]*Static
	hashed   map[string]string
} {
	out := struct {
		byHashed map[string]*Static
		hashed   map[string]string
	}{map[string]*Static{}, map[string]string{}}
	add := func(name string, body []byte) {
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:6])
		ext := path.Ext(name)
		hashed := strings.TrimSuffix(name, ext) + "." + hash + ext
		st := &Static{Name: hashed, Body: body, ETag: `"` + hash + `"`}
		switch ext {
		case ".woff2":
			st.ContentType = "font/woff2" // compressed already
		case ".css":
			st.ContentType = "text/css; charset=utf-8"
		default:
			st.ContentType = "text/javascript; charset=utf-8"
		}
		if ext != ".woff2" {
			st.Compressed = compression.Precompress(body)
		}
		out.byHashed[hashed] = st
		out.hashed[name] = hashed
	}
	for _, font := range []string{IconFont, IconFontSubset} {
		b, err := files.ReadFile("fonts/" + font)
		if err != nil {
			panic("assets: no icon font: " + err.Error())
		}
		add(font, b)
	}
	css := themeCSS()
	for _, name := range cssParts {
		css += Text(name)
	}
	css = staticURL.ReplaceAllStringFunc(css, func(m string) string {
		if h, ok := out.hashed[staticURL.FindStringSubmatch(m)[1]]; ok {
			return `url("` + h + `")`
		}
		return m
	})
	add("app.css", []byte(css))
	// A linked entry's script starts with the data the runtime reads: the
	// node catalog, the host's themes, the icons of the font subset (as
	// JSON.parse of a string, which a browser reads faster than a literal).
	var c bytes.Buffer
	if err := json.Compact(&c, uicatalog.JSON()); err != nil {
		panic("assets: the UI catalog is not JSON: " + err.Error())
	}
	themes, _ := json.Marshal(Themes())
	icons, _ := json.Marshal(SubsetIcons())
	data := "// The node catalog of UI Runtime v2 (package uicatalog), the host's themes and the icons of the font subset.\n" +
		"window.pluginhostCatalog = JSON.parse(" + strconv.Quote(c.String()) + ");\n" +
		"window.pluginhostThemes = JSON.parse(" + strconv.Quote(string(themes)) + ");\n" +
		"window.pluginhostIcons = JSON.parse(" + strconv.Quote(string(icons)) + ");\n"
	for _, entry := range linkedEntries {
		add(entry, []byte(data+Bundle(entry)))
	}
	return out
})

// themeCSS sets the host's colours as custom properties of the page
// (--ph-primary, ...): light, dark when the page asks for it (data-theme
// on the html element), and the device's choice when it asks for neither.
func themeCSS() string {
	vars := func(mode string) string {
		var b strings.Builder
		roles := make([]string, 0, len(themes[mode]))
		for r := range themes[mode] {
			roles = append(roles, r)
		}
		sort.Strings(roles)
		for _, r := range roles {
			b.WriteString("--ph-" + strings.ReplaceAll(r, "_", "-") + ":" + themes[mode][r] + ";")
		}
		return b.String()
	}
	return "/* The host's Material 3 themes (package preview/assets, themes.go). */\n" +
		":root{color-scheme:light;" + vars("light") + "}\n" +
		":root[data-theme=dark]{color-scheme:dark;" + vars("dark") + "}\n" +
		"@media (prefers-color-scheme: dark){:root:not([data-theme=light]){color-scheme:dark;" + vars("dark") + "}}\n"
}

// SubsetIcons returns the icon names the font subset draws (fonts/icons.txt).
func SubsetIcons() []string {
	var out []string
	for _, l := range strings.Split(Text("fonts/icons.txt"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// StaticName returns the hashed name a static file (such as "shell.js"
// or "app.css") is served under. It panics on a name that is not one.
func StaticName(name string) string {
	h, ok := statics().hashed[name]
	if !ok {
		panic("assets: no static file " + name)
	}
	return h
}

// StaticFile returns the static file of a hashed name.
func StaticFile(hashed string) (*Static, bool) {
	s, ok := statics().byHashed[hashed]
	return s, ok
}
