// Package webhost is the host's own renderer in the browser: GET /app is the
// home (the viewer's Instances, their screens, and their home extensions
// drawn live), and GET /app/{instance_id}/{extension} opens one screen or home
// extension live against this server, with the preview's runtime (package
// preview/assets) and its live host (live.js). Both are one page, the shell
// (shell.js): a screen opened from the home opens in the same page, so that
// every surface shares the host cache.
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
	"html"
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
// the instance id, e: the extension): the Instance, its package's extensions
// with their configs, and the opening extension's config, generation and
// persisted state. The web host names an extension and a connection by the
// plugin's own id, so the queries read manifestId as id.
const StartQuery = `query($i: ID!, $e: String!) { instance(id: $i) { id name enabled grants connections { id: manifestId label kind connected account } installation { id pluginId name version generation permissions aiStorageConsent extensions { id: manifestId point placement config } } } start: uiConfig(instanceId: $i, extension: $e) { extension point generation config persistedState } }`

// HomeQuery is the GraphQL query of the home: the viewer's Installations,
// their Instances and extensions.
const HomeQuery = `{ installations { id name description version instances { id name enabled } extensions { id: manifestId point placement description icon } } ` +
	`renderedResponses(first: 5) { nodes { ` + ResponseFields + ` } } }`

// ResponseFields are the fields of a RenderedResponse the home shows.
const ResponseFields = `messageId instanceId extension capability generation createdAt data`

// Preload is the answer to StartQuery that the server ran for the page, so
// that the page starts without a request of its own.
type Preload struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// ServeScreen writes the page of one extension of one Instance; preload,
// when not nil, is the answer to StartQuery for the page's user.
func ServeScreen(w http.ResponseWriter, r *http.Request, v Viewer, instanceID, extension string, preload *Preload) {
	serveShell(w, v, extension+" · pluginhost", Inspector(r, v), shellConfig(nil, nil), map[string]any{
		"instance_id": instanceID,
		"extension":   extension,
		"graphql":     endpoint(instanceID, "graphql"),
		"images":      endpoint(instanceID, "ui-images:fetch"),
		"route":       routeParams(r),
		"start_query": StartQuery,
		"preload":     preload,
	})
}

// serveShell writes a page of the shell: the home, or with live (the
// extension the page opens) a screen.
func serveShell(w http.ResponseWriter, v Viewer, title string, inspector bool, shell, live map[string]any) {
	bundle := map[string]any{
		"icon_font": true,
		"inspector": inspector,
		// The page API that reads state, data, context and events is an
		// admin's (runtime.js).
		"debug_api": v.Admin,
		"shell":     shell,
	}
	if live != nil {
		bundle["live"] = live
	}
	raw, err := json.Marshal(bundle)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page := assets.Page{
		Title:     title,
		BodyClass: "ph-webhost",
		Nav:       nav(v),
		NoScript:  "The web host needs JavaScript.",
		Entry:     "shell.js",
		Assets:    AssetsPath,
		Bundle:    raw,
	}
	write(w, page.Bytes())
}

// Card is a home extension of an Instance the home draws, with the answer to
// StartQuery for it when the server ran it.
type Card struct {
	InstanceID string   `json:"instance_id"`
	Extension  string   `json:"extension"`
	Preload    *Preload `json:"preload"`
}

// shellConfig is what the shell needs to open the home and screens in the
// page: the page's GraphQL endpoint, the queries, and, on the home, the
// answer to HomeQuery and the cards' starts.
func shellConfig(home json.RawMessage, cards []Card) map[string]any {
	c := map[string]any{"graphql": ListGraphQLPattern, "start_query": StartQuery, "home_query": HomeQuery, "response_fields": ResponseFields}
	if home != nil {
		c["home"] = home
		c["cards"] = cards
	}
	return c
}

// ServeHome writes the home: home, when not nil, is the data of the answer
// to HomeQuery, and cards the home extensions it lists with their starts.
func ServeHome(w http.ResponseWriter, r *http.Request, v Viewer, home json.RawMessage, cards []Card) {
	serveShell(w, v, "pluginhost", false, shellConfig(home, cards), nil)
}

// nav is the web host's navigation bar: back to the list, the bell, who is
// signed in, and signing out.
func nav(v Viewer) string {
	return "<nav class=\"ph-app-nav\"><a href=\"/app\" data-ph-home-link=\"1\">Home</a><span class=\"ph-nav-end\">" +
		"<span id=\"ph-bell\" class=\"ph-bell-slot\"></span>" + signOutForm(v) + "</span></nav>\n"
}

// signOutForm says who is signed in, with the sign-out button.
func signOutForm(v Viewer) string {
	return "<form class=\"ph-signout\" method=\"post\" action=\"/app/logout\"><span class=\"ph-who\">" + html.EscapeString(v.Name) +
		"</span> <button type=\"submit\">Sign out</button></form>"
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
