// Package webhost is the host's own app in the browser: GET /app is the
// home (the responses the viewer's assistant chose, and the viewer's
// Instances with their home extensions drawn live), GET
// /app/{instance_id}/{extension} opens one screen or home extension live
// against this server with the preview's runtime (package preview/assets)
// and its live host (live.js), GET /app/{instance_id}/-/settings is an
// Instance's settings, and GET /dashboard the live storage dashboard. All
// are one page, the app shell (shell.js): a view opened from another opens
// in the same page, so that every surface shares the host cache, and every
// view is an address. The server serves files and the data the page starts
// from; the page draws itself.
//
// The pages carry no credential. The browser authenticated the page request
// (HTTP Basic with the token as the password, or a bearer header); every
// request the page makes is same-origin and carries the same credentials, to
// the endpoints that httpapi mounts under /app: GraphQL (HTTP and websocket)
// and the image proxy. They lie below the page's own folder
// (/app/{instance_id}/-/...), where a browser sends the page's HTTP Basic
// credentials at once, without a new challenge.
package webhost

import (
	"encoding/json"
	"net/http"
	"net/url"

	"pluginhost/preview/assets"
)

// Patterns of the endpoints the pages use, for http.ServeMux. GraphQL takes
// HTTP POST and, with a websocket upgrade, graphql-transport-ws, for the
// page's user; the instance id in its path only keeps it in the page's
// folder. "-" is never an instance id.
const (
	ListGraphQLPattern = "/app/-/graphql"
	GraphQLPattern     = "/app/{instance_id}/-/graphql"
	ImageProxyPattern  = "/app/{instance_id}/-/ui-images:fetch"
	// ResetPattern takes DELETE: the settings' reset of an Instance's
	// data.
	ResetPattern = "/app/{instance_id}/-/storage"
)

// endpoint returns the path of an endpoint (graphql, ui-images:fetch) of
// the page of an Instance.
func endpoint(instanceID, name string) string {
	return "/app/" + url.PathEscape(instanceID) + "/-/" + name
}

// CSP is the pages' Content-Security-Policy: scripts and styles only from
// this origin's static files (no inline script, no style element or
// attribute in the markup: the runtime sets styles through the CSSOM),
// requests only to this origin, images only as data or from blobs the page
// made of the image proxy's answers.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src data: blob:; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// AssetsPath is where the pages' static files are served, each named by
// its content's hash.
const AssetsPath = "/app/assets/"

// Viewer is the signed-in user a page is for.
type Viewer struct {
	Name  string
	Admin bool
}

// Inspector reports whether a page request shows the Runtime Inspector and
// the host event panel: only to an admin who asks for it with ?debug=1.
func Inspector(r *http.Request, v Viewer) bool {
	return v.Admin && r.URL.Query().Get("debug") == "1"
}

// StartQuery is the GraphQL query the page's first load runs (variables i:
// the instance id, e: the extension): the Instance (with the storage
// revision its first reads see), its package's extensions with their
// configs, and the opening extension's config, generation and persisted
// state. The web host names an extension and a connection by the plugin's
// own id, so the queries read manifestId as id.
const StartQuery = `query($i: ID!, $e: String!) { instance(id: $i) { id name enabled grants storageRevision connections { id: manifestId label kind connected account refusedStatus refusedAt } installation { id pluginId name version generation permissions aiStorageConsent extensions { id: manifestId point placement config } } } start: uiConfig(instanceId: $i, extension: $e) { extension point generation config persistedState } }`

// instancesFields are what the shell knows of the viewer and every
// Instance: who is signed in, names, plugins, the extensions it offers.
const instancesFields = `viewer { name admin } installations { id pluginId name description version instances { id name enabled } extensions { id: manifestId point placement description icon } }`

// InstancesQuery is the GraphQL query of the shell's navigation and
// Instance switcher, which every page runs.
const InstancesQuery = `{ ` + instancesFields + ` }`

// HomeQuery is the GraphQL query of the home: the viewer's Installations,
// their Instances and extensions, and the newest responses the assistant
// chose.
const HomeQuery = `{ ` + instancesFields + ` renderedResponses(first: 5) { nodes { ` + ResponseFields + ` } } }`

// ResponseFields are the fields of a RenderedResponse the home shows.
const ResponseFields = `messageId instanceId extension capability generation createdAt data`

// SettingsQuery is the GraphQL query of an Instance's settings (variable i:
// the instance id), with its extensions' configs, which name the screens
// in the navigation.
const SettingsQuery = `query($i: ID!) { instance(id: $i) { id name enabled grants notificationsMuted storageRevision ` +
	`usage { namespace keys bytes maxBytes } connections { id: manifestId label kind connected account expiresAt refusedStatus refusedAt } ` +
	`installation { id pluginId name version permissions aiStorageConsent dataPolicy extensions { id: manifestId point placement config } } } }`

// Preload is the answer to a page's first query that the server ran for
// it, so that the page starts without a request of its own.
type Preload struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// Views of the shell.
const (
	ViewHome      = "home"
	ViewScreen    = "screen"
	ViewSettings  = "settings"
	ViewDashboard = "dashboard"
)

// View is what a page of the shell opens, with the data it starts from.
type View struct {
	Kind       string
	InstanceID string // a screen's or settings' Instance
	Extension  string // a screen's
	// Preload is the answer to the view's query for the page's user
	// (StartQuery for a screen, SettingsQuery for settings), or nil.
	Preload *Preload
	// Sources are the first screen's storage reads the server ran, at the
	// package Generation (a screen).
	Sources    []Source
	Generation int
	// Home is the data of the answer to HomeQuery, and Cards the home
	// extensions it draws with their starts (the home).
	Home  json.RawMessage
	Cards []Card
	// Instances is the data of the answer to InstancesQuery (every view
	// but the home, whose HomeQuery holds it).
	Instances json.RawMessage
}

// Card is a home extension of an Instance the home draws, with the answer to
// StartQuery for it when the server ran it.
type Card struct {
	InstanceID string   `json:"instance_id"`
	Extension  string   `json:"extension"`
	Preload    *Preload `json:"preload"`
}

// ServePage writes the shell's page of a view.
func ServePage(w http.ResponseWriter, r *http.Request, v Viewer, view View) {
	debug := Inspector(r, v)
	bundle := map[string]any{
		"view":      view.Kind,
		"viewer":    map[string]any{"name": v.Name, "admin": v.Admin},
		"icon_font": true,
		// The admin's debug view: the inspector, the event log, the
		// preview's strip and the codes of errors.
		"inspector": debug,
		"debug":     debug,
		// The page API that reads state, data, context and events is an
		// admin's (runtime.js).
		"debug_api": v.Admin,
		"shell": map[string]any{"graphql": ListGraphQLPattern, "start_query": StartQuery, "home_query": HomeQuery, "instances_query": InstancesQuery,
			"settings_query": SettingsQuery, "response_fields": ResponseFields},
	}
	title := "pluginhost"
	switch view.Kind {
	case ViewHome:
		title = "Your plugins · pluginhost"
		if view.Home != nil {
			bundle["home"] = view.Home
			bundle["cards"] = view.Cards
		}
	case ViewScreen:
		bundle["live"] = map[string]any{
			"instance_id": view.InstanceID,
			"extension":   view.Extension,
			"graphql":     endpoint(view.InstanceID, "graphql"),
			"images":      endpoint(view.InstanceID, "ui-images:fetch"),
			"route":       routeParams(r),
			"start_query": StartQuery,
			"preload":     view.Preload,
			"sources":     view.Sources,
			"generation":  view.Generation,
		}
	case ViewSettings:
		title = "Settings · pluginhost"
		bundle["instance_id"] = view.InstanceID
		bundle["preload"] = view.Preload
	case ViewDashboard:
		title = "Storage dashboard · pluginhost"
	}
	if view.Instances != nil {
		bundle["instances"] = view.Instances
	}
	raw, err := json.Marshal(bundle)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page := assets.Page{
		Title:     title,
		BodyClass: "ph-webhost",
		NoScript:  "pluginhost needs JavaScript: turn it on for this site.",
		Entry:     "shell.js",
		Assets:    AssetsPath,
		Bundle:    raw,
		Theme:     themeOf(r),
	}
	write(w, page.Bytes())
}

// ThemeCookie keeps the theme a person picked in the account menu (light or
// dark; none: the device's), so that the page is drawn in it from the
// first paint. The page's script writes it (prefs.js).
const ThemeCookie = "pluginhost_theme"

// themeOf is the theme a request's browser picked: "light", "dark" or "".
func themeOf(r *http.Request) string {
	if c, err := r.Cookie(ThemeCookie); err == nil && (c.Value == "light" || c.Value == "dark") {
		return c.Value
	}
	return ""
}

// routeParams are the first screen's context.route values: the query
// parameters of the page's URL but debug.
func routeParams(r *http.Request) map[string]string {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		if k != "debug" && len(v) > 0 {
			p[k] = v[0]
		}
	}
	return p
}

func write(w http.ResponseWriter, page []byte) {
	pageHeaders(w.Header(), CSP)
	w.Write(page)
}

// pageHeaders are the headers of every page: never cached, framed or
// sniffed, sending no referrer, under the policy csp.
func pageHeaders(h http.Header, csp string) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", csp)
}
