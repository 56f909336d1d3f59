// Package assets embeds the UI Runtime that runs in the browser, for the two
// pages that use it: the preview (package preview, against fixtures) and the
// web host (package webhost, live against the server).
//
// The runtime's sources are ES modules, each with one job: core.js holds
// the rules shared with the Go side, hostcache.js the host cache and its
// refresh rules, vdom.js and theme.js what the runtime draws with, words.js
// what the web host says to a person (errors in words, names), runtime.js
// the runtime itself (one surface), and each host implements the runtime's
// host interface: fixtures.js for the preview, live.js for the web host.
// The web host's app shell is shell.js (its entry), with router.js (its
// addresses), prefs.js (the theme a person picks), ui.js (its widgets), and
// its views home.js, settings.js, dashboard.js and bell.js.
// preview-main.js and shell.js are the pages' entries; a page runs the
// bundle of its entry (Bundle). preview.css styles the runtime's nodes on
// both pages, webhost.css the web host's shell (static.go serves both as
// app.css).
package assets

import (
	"embed"
	"strings"
)

//go:embed core.js hostcache.js vdom.js theme.js words.js router.js ui.js prefs.js runtime.js fixtures.js live.js bell.js home.js settings.js dashboard.js shell.js preview-main.js preview.css webhost.css fonts/icons.txt fonts/material-symbols-outlined.woff2 fonts/material-symbols-subset.woff2
var files embed.FS

// Text returns the embedded file name (such as "runtime.js"). It panics on
// a name that is not embedded: the set is fixed at build time.
func Text(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("assets: no embedded file " + name)
	}
	return string(b)
}

// ScriptSafe escapes what could end a script element or a JavaScript string
// early in JSON embedded in a page. These characters can only occur inside
// JSON strings, where the escapes mean the same.
var ScriptSafe = strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "\u2028", `\u2028`, "\u2029", `\u2029`)
