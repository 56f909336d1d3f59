package assets

import (
	"bytes"
	"encoding/json"
	"html"
	"sync"

	"pluginhost/uicatalog"
)

// Page is one page of the UI Runtime: the same shell on both pages (head,
// preview.css, the catalog and bundle blocks, then core.js, the host script
// and runtime.js), with what differs between them.
type Page struct {
	Title     string // the title element's text
	CSP       string // when not empty, a Content-Security-Policy meta element; written as is
	Generator string // when not empty, a generator meta element
	CSS       string // rules after preview.css
	BodyClass string // when not empty, the body element's class
	Nav       string // HTML before the app element
	NoScript  string // what the page says without JavaScript
	Host      string // the host script: "fixtures.js" or "live.js"
	Chrome    string // when not empty, a script of the host's own chrome ("bell.js"), before the host script
	// Shell, when not empty, is the script that starts the page's surfaces
	// ("shell.js": the web host's home and screens, in one page), after
	// runtime.js; the page then has the home's element too. Linked pages
	// only.
	Shell  string
	Bundle []byte // the bundle's JSON, for the ph-bundle block
	// Assets, when not empty, is the path the static files are served
	// under (such as "/app/assets/"): the page then links its scripts, the
	// catalog and preview.css by their hashed names instead of holding
	// them, and has no inline script. Empty: a standalone page that holds
	// everything.
	Assets string
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
	for _, name := range []string{"core.js", "hostcache.js", "runtime.js", "fixtures.js", "live.js", "bell.js", "preview.css"} {
		s.text[name] = Text(name)
	}
	return s
})

// Bytes returns the page's HTML. It panics on a Host that is not embedded.
func (p *Page) Bytes() []byte {
	if p.Assets != "" {
		return p.linked()
	}
	s := static()
	host, ok := s.text[p.Host]
	if !ok {
		panic("assets: no host script " + p.Host)
	}
	var out bytes.Buffer
	out.Grow(len(s.catalog) + len(s.text["core.js"]) + len(host) + len(s.text["runtime.js"]) +
		len(s.text["preview.css"]) + len(p.CSS) + len(p.Bundle) + len(p.CSP) + 1024)
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
	out.WriteString(p.CSS)
	out.WriteString("</style>\n</head>\n")
	if p.BodyClass != "" {
		out.WriteString(`<body class="` + html.EscapeString(p.BodyClass) + "\">\n")
	} else {
		out.WriteString("<body>\n")
	}
	out.WriteString("<script>window.pluginhostStart = performance.now();</script>\n")
	out.WriteString(p.Nav)
	out.WriteString("<div id=\"ph-app\" class=\"ph-app\"><noscript>" + html.EscapeString(p.NoScript) + "</noscript></div>\n")
	out.WriteString(s.catalog)
	out.WriteString(`<script type="application/json" id="ph-bundle">`)
	ScriptSafe.WriteString(&out, string(p.Bundle))
	out.WriteString("</script>\n")
	scripts := []string{"core.js", p.Host, "hostcache.js", "runtime.js"}
	if p.Chrome != "" {
		if _, ok := s.text[p.Chrome]; !ok {
			panic("assets: no chrome script " + p.Chrome)
		}
		scripts = []string{"core.js", p.Chrome, p.Host, "hostcache.js", "runtime.js"}
	}
	for _, name := range scripts {
		out.WriteString("<script>\n")
		out.WriteString(s.text[name])
		out.WriteString("</script>\n")
	}
	out.WriteString("</body>\n</html>\n")
	return out.Bytes()
}

// linked is the page of Bytes with its static files linked.
func (p *Page) linked() []byte {
	var out bytes.Buffer
	out.Grow(len(p.Bundle) + len(p.CSS) + 2048)
	out.WriteString("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	out.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	out.WriteString("<title>" + html.EscapeString(p.Title) + "</title>\n")
	out.WriteString(`<link rel="stylesheet" href="` + p.Assets + StaticName("preview.css") + "\">\n")
	if p.CSS != "" {
		out.WriteString("<style>\n" + p.CSS + "</style>\n")
	}
	out.WriteString("</head>\n")
	if p.BodyClass != "" {
		out.WriteString(`<body class="` + html.EscapeString(p.BodyClass) + "\">\n")
	} else {
		out.WriteString("<body>\n")
	}
	out.WriteString(p.Nav)
	if p.Shell != "" {
		out.WriteString("<div id=\"ph-shell\" class=\"ph-shell\"><div id=\"ph-home\" class=\"ph-home\" hidden></div>\n")
	}
	out.WriteString("<div id=\"ph-app\" class=\"ph-app\"><noscript>" + html.EscapeString(p.NoScript) + "</noscript></div>\n")
	if p.Shell != "" {
		out.WriteString("</div>\n")
	}
	out.WriteString(`<script type="application/json" id="ph-bundle">`)
	ScriptSafe.WriteString(&out, string(p.Bundle))
	out.WriteString("</script>\n")
	scripts := []string{"catalog.js", "core.js"}
	if p.Chrome != "" {
		scripts = append(scripts, p.Chrome)
	}
	scripts = append(scripts, p.Host, "hostcache.js", "runtime.js")
	if p.Shell != "" {
		scripts = append(scripts, p.Shell)
	}
	for _, name := range scripts {
		out.WriteString(`<script src="` + p.Assets + StaticName(name) + "\"></script>\n")
	}
	out.WriteString("</body>\n</html>\n")
	return out.Bytes()
}
