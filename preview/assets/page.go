package assets

import (
	"bytes"
	"encoding/json"
	"html"
	"sync"

	"pluginhost/uicatalog"
)

// Page is one page of the UI Runtime: the same shell on both pages (head,
// preview.css, the catalog and bundle blocks, then the bundle of the page's
// entry module), with what differs between them.
type Page struct {
	Title     string // the title element's text
	CSP       string // when not empty, a Content-Security-Policy meta element; written as is
	Generator string // when not empty, a generator meta element
	BodyClass string // when not empty, the body element's class
	NoScript  string // what the page says without JavaScript
	// Entry is the module the page starts from: "preview-main.js" (the
	// preview) or "shell.js" (the web host's home and screens, in one page;
	// the page then has the home's element too).
	Entry  string
	Bundle []byte // the bundle's JSON, for the ph-bundle block
	// Assets, when not empty, is the path the static files are served
	// under (such as "/app/assets/"): the page then links its script (the
	// catalog and its entry's bundle) and app.css by their hashed names
	// instead of holding them, and has no inline script or style. Empty: a
	// standalone page that holds everything.
	Assets string
	// Theme, when not empty, is the theme the person picked ("light",
	// "dark"): the html element's data-theme, so that the page is drawn in
	// it from the first paint. Empty: the device's.
	Theme string
}

// static holds the parts that are the same on every page: the catalog block
// and the embedded files.
var static = sync.OnceValue(func() struct {
	catalog string
	text    map[string]string
} {
	var c bytes.Buffer
	if err := json.Compact(&c, uicatalog.JSON()); err != nil {
		panic("assets: the UI catalog is not JSON: " + err.Error())
	}
	s := struct {
		catalog string
		text    map[string]string
	}{
		catalog: `<script type="application/json" id="ph-catalog">` + ScriptSafe.Replace(c.String()) + "</script>\n",
		text:    map[string]string{},
	}
	s.text["preview.css"] = Text("preview.css")
	return s
})

// Bytes returns the page's HTML. It panics on a Host that is not embedded.
func (p *Page) Bytes() []byte {
	if p.Assets != "" {
		return p.linked()
	}
	s := static()
	script := Bundle(p.Entry)
	var out bytes.Buffer
	out.Grow(len(s.catalog) + len(script) + len(s.text["preview.css"]) + len(p.Bundle) + len(p.CSP) + 1024)
	out.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	if p.CSP != "" {
		out.WriteString(`<meta http-equiv="Content-Security-Policy" content="` + p.CSP + "\">\n")
	}
	out.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	if p.Generator != "" {
		out.WriteString(`<meta name="generator" content="` + html.EscapeString(p.Generator) + "\">\n")
	}
	out.WriteString("<title>" + html.EscapeString(p.Title) + "</title>\n")
	out.WriteString("<style>\n")
	out.WriteString(s.text["preview.css"])
	out.WriteString("</style>\n</head>\n")
	if p.BodyClass != "" {
		out.WriteString(`<body class="` + html.EscapeString(p.BodyClass) + "\">\n")
	} else {
		out.WriteString("<body>\n")
	}
	out.WriteString("<script>window.pluginhostStart = performance.now();</script>\n")
	out.WriteString("<div id=\"ph-app\" class=\"ph-app\"><noscript>" + html.EscapeString(p.NoScript) + "</noscript></div>\n")
	out.WriteString(s.catalog)
	out.WriteString(`<script type="application/json" id="ph-bundle">`)
	ScriptSafe.WriteString(&out, string(p.Bundle))
	out.WriteString("</script>\n")
	out.WriteString("<script>\n")
	out.WriteString(script)
	out.WriteString("</script>\n")
	out.WriteString("</body>\n</html>\n")
	return out.Bytes()
}

// linked is the page of Bytes with its static files linked.
func (p *Page) linked() []byte {
	var out bytes.Buffer
	out.Grow(len(p.Bundle) + 2048)
	out.WriteString("<!doctype html>\n<html lang=\"en\"")
	if p.Theme == "light" || p.Theme == "dark" {
		out.WriteString(` data-theme="` + p.Theme + `"`)
	}
	out.WriteString(">\n<head>\n<meta charset=\"utf-8\">\n")
	out.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	out.WriteString("<title>" + html.EscapeString(p.Title) + "</title>\n")
	out.WriteString(`<link rel="stylesheet" href="` + p.Assets + StaticName("app.css") + "\">\n")
	out.WriteString(`<link rel="preload" href="` + p.Assets + StaticName(IconFontSubset) + "\" as=\"font\" type=\"font/woff2\" crossorigin>\n")
	out.WriteString("</head>\n")
	if p.BodyClass != "" {
		out.WriteString(`<body class="` + html.EscapeString(p.BodyClass) + "\">\n")
	} else {
		out.WriteString("<body>\n")
	}
	if p.Entry == "shell.js" {
		// The shell draws itself; until its script runs, the page shows
		// where the shell's parts will be (app.css styles them).
		out.WriteString("<div id=\"ph-shell\" class=\"ph-shell\" aria-busy=\"true\"><div class=\"ph-skel-top\"></div><div class=\"ph-skel-nav\"></div>" +
			"<div class=\"ph-skel-main\"><noscript><p>" + html.EscapeString(p.NoScript) + "</p></noscript></div></div>\n")
	} else {
		out.WriteString("<div id=\"ph-app\" class=\"ph-app\"><noscript>" + html.EscapeString(p.NoScript) + "</noscript></div>\n")
	}
	out.WriteString(`<script type="application/json" id="ph-bundle">`)
	ScriptSafe.WriteString(&out, string(p.Bundle))
	out.WriteString("</script>\n")
	out.WriteString(`<script src="` + p.Assets + StaticName(p.Entry) + "\"></script>\n")
	out.WriteString("</body>\n</html>\n")
	return out.Bytes()
}
