package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"strings"
	"sync"

	"pluginhost/uicatalog"
)

// Static is a file the web host serves under its assets path, named by its
// content's hash, so that it can be cached for good.
type Static struct {
	Name        string // the hashed name, such as "shell.3f2a9c1b7d4e.js"
	ContentType string
	Body        []byte
	Gzip        []byte // Body gzip-compressed; nil for a file compressed already
	ETag        string
}

// IconFont is the static file of the icon font: Material Symbols Outlined
// (fonts/README.md).
const IconFont = "material-symbols-outlined.woff2"

// staticFiles are the embedded files served as static assets; catalog.js
// (the node catalog, as a script) is made from package uicatalog, and
// linkedEntries are served as their bundles, under their own names.
var staticFiles = []string{"preview.css"}

// linkedEntries are the entry modules of pages that link their scripts.
var linkedEntries = []string{"shell.js"}

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
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			w.Write(body)
			w.Close()
			st.Gzip = z.Bytes()
		}
		out.byHashed[hashed] = st
		out.hashed[name] = hashed
	}
	for _, name := range staticFiles {
		add(name, []byte(Text(name)))
	}
	for _, entry := range linkedEntries {
		add(entry, []byte(Bundle(entry)))
	}
	font, err := files.ReadFile("fonts/" + IconFont)
	if err != nil {
		panic("assets: no icon font: " + err.Error())
	}
	add(IconFont, font)
	var c bytes.Buffer
	if err := json.Compact(&c, uicatalog.JSON()); err != nil {
		panic("assets: the UI catalog is not JSON: " + err.Error())
	}
	add("catalog.js", []byte("// The node catalog of UI Runtime v2 (package uicatalog).\nwindow.pluginhostCatalog = "+ScriptSafe.Replace(c.String())+";\n"))
	return out
})

// StaticName returns the hashed name a static file (such as "shell.js"
// or "catalog.js") is served under. It panics on a name that is not one.
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
