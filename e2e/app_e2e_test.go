package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
)

// The web host (GET /app): an installed Instance rendered live in headless
// Chromium against a real server on SQLite, with the preview's runtime and
// the live host. Every wait polls with a generous deadline; the speed of
// first paint and of live updates is measured by the benchmarks below.

// appNotes reads the test plugin e2e/testdata/appnotes, with changes.
func appNotes(t testing.TB, edit func(files map[string]string)) (map[string]any, map[string]string) {
	t.Helper()
	dir := filepath.Join("testdata", "appnotes")
	files := map[string]string{}
	for _, name := range []string{"manifest.json", "ui/main.json", "ui/home.json", "ui/detail.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(raw)
	}
	if edit != nil {
		edit(files)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(files["manifest.json"]), &m); err != nil {
		t.Fatal(err)
	}
	delete(files, "manifest.json")
	return m, files
}

// installApp installs the plugin (its manifest and other files) and creates
// n Instances; it returns the Installation id and the Instance ids.
func installApp(t testing.TB, h *host, c *Client, m any, files map[string]string, n int) (string, []string) {
	t.Helper()
	var out struct {
		InstallPlugin struct{ ID string } `json:"installPlugin"`
	}
	c.Must(t, installMutation, map[string]any{"p": h.pub.Sign(t, m, files)}, &out)
	var ids []string
	for i := 0; i < n; i++ {
		var inst struct {
			CreateInstance struct{ ID string } `json:"createInstance"`
		}
		c.Must(t, instanceMutation, map[string]any{"i": out.InstallPlugin.ID, "n": fmt.Sprintf("Instance %d", i+1)}, &inst)
		ids = append(ids, inst.CreateInstance.ID)
	}
	return out.InstallPlugin.ID, ids
}

// openApp opens a web host page as a browser that signed in with HTTP Basic
// (the token as the password), recording every request the page sends.
func openApp(t testing.TB, c *Client, path string) *browser.Page {
	t.Helper()
	return openAppWith(t, c, path, "")
}

func pageText(p *browser.Page) string {
	return p.EvalString(`document.body.innerText`)
}

// waitText waits up to 15 seconds for the page to show text; on failure it
// reports what the page shows and its last host events.
func waitText(p *browser.Page, text string) {
	p.T().Helper()
	waitTextWithin(p, text, 15*time.Second)
}

// waitTextWithin is waitText with another deadline.
func waitTextWithin(p *browser.Page, text string, within time.Duration) {
	p.T().Helper()
	waitUntil(p, fmt.Sprintf(`document.body.innerText.indexOf(%q) >= 0`, text), within)
}

// waitUntil polls a JavaScript condition until the deadline; on failure it
// reports what the page shows and its last host events.
func waitUntil(p *browser.Page, expr string, within time.Duration) {
	p.T().Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p.EvalBool(expr) {
			return
		}
	}
	events := p.EvalString(`JSON.stringify(window.pluginhostPreview && window.pluginhostPreview.events ? window.pluginhostPreview.events().slice(-15) : null)`)
	p.T().Fatalf("timed out waiting for %s; the page shows:\n%s\nlast events: %s", expr, pageText(p), events)
}

// clickUntil clicks the selector's element with the text until the
// condition holds: a click can miss an element that moves under it, as a
// card's button does while the card's sources reload. Up to five clicks,
// the last waited for as waitUntil waits.
func clickUntil(p *browser.Page, selector, text, cond string) {
	p.T().Helper()
	for range 4 {
		p.ClickText(selector, text)
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if p.EvalBool(cond) {
				return
			}
		}
	}
	p.ClickText(selector, text)
	waitUntil(p, cond, 10*time.Second)
}

func appEvents(t testing.TB, p *browser.Page, typ string) []map[string]any {
	t.Helper()
	var all []map[string]any
	p.Eval(`window.pluginhostPreview.events()`, &all)
	var out []map[string]any
	for _, e := range all {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// eventsWith returns the page's events of type typ that have every member
// of want.
func eventsWith(t testing.TB, p *browser.Page, typ string, want map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range appEvents(t, p, typ) {
		match := true
		for k, v := range want {
			match = match && e[k] == v
		}
		if match {
			out = append(out, e)
		}
	}
	return out
}

func screenshot(t testing.TB, p *browser.Page, name string) {
	dir := os.Getenv("PLUGINHOST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "pluginhost-e2e-artifacts")
	}
	os.MkdirAll(dir, 0o755)
	file := filepath.Join(dir, name+".png")
	p.Screenshot(file)
	t.Logf("screenshot: %s", file)
}

const (
	createNote = `mutation($i:ID!,$k:String!,$v:JSON!){storageCreate(instanceId:$i,namespace:"notes",key:$k,value:$v){summary}}`
	liveReady  = `window.pluginhostPreview && window.pluginhostPreview.live() === "live" && document.querySelector("[data-ph-extension]")`
)

// TestAppNotes: the notes plugin end to end: the form creates a note and the
// list refreshes; writes by another client and by the AI appear on the open
// screen without a reload; navigation with parameters and a result; state
// persisted with setExtensionState survives a reload; the token is nowhere
// in the page.
func TestAppNotes(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	m, files := appNotes(t, nil)
	instl, ids := installApp(t, h, alice, m, files, 1)
	path := "/app/" + ids[0] + "/main"

	// Without credentials the page is refused with a Basic challenge.
	resp, err := http.Get(h.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("no credentials: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// The page's endpoints answer only the page's own same-origin requests.
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"from the page", map[string]string{"X-Pluginhost-App": "1", "Sec-Fetch-Site": "same-origin"}, 200},
		{"without the page's header", map[string]string{"Sec-Fetch-Site": "same-origin"}, 403},
		{"from another site", map[string]string{"X-Pluginhost-App": "1", "Sec-Fetch-Site": "cross-site"}, 403},
		{"from another origin", map[string]string{"X-Pluginhost-App": "1", "Origin": "http://evil.example"}, 403},
	} {
		req, _ := http.NewRequest("POST", h.URL+"/app/-/graphql", strings.NewReader(`{"query":"{viewer{name}}"}`))
		req.SetBasicAuth("user", alice.Token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range tc.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
	// A websocket from another origin is refused at the handshake.
	req, _ := http.NewRequest("GET", h.URL+"/app/"+ids[0]+"/-/graphql", nil)
	req.SetBasicAuth("user", alice.Token)
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": "http://evil.example", "Sec-WebSocket-Protocol": "graphql-transport-ws"} {
		req.Header.Set(k, v)
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("websocket from another origin: %v %v", resp, err)
	}

	p := openApp(t, alice, path)
	p.WaitFor(liveReady)
	waitText(p, "No notes yet")
	p.Eval(`window.loadedOnce = true`, nil)

	// The form creates a note; the list re-reads its storage source.
	p.TypeInto(`input[data-ph-commit]`, "milk")
	p.ClickText("button", "Add")
	waitText(p, "milk: milk")
	p.WaitFor(`window.pluginhostPreview.state().draft === ""`)
	loads := appEvents(t, p, "source_load")
	if l := loads[len(loads)-1]; l["source"] != "notes" || l["reason"] != "storage_changed" {
		t.Fatalf("after the create the last load was %v", l)
	}
	// An empty form is refused by validation, nothing is created.
	p.ClickText("button", "Add")
	p.WaitFor(`window.pluginhostPreview.events().some(function(e){return e.type==="validation_failed"})`)

	// A write by another client appears without a reload.
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "eggs", "v": map[string]any{"text": "from the phone"}}, nil)
	waitText(p, "eggs: from the phone")

	// A write by the AI appears without a reload.
	alice.Must(t, `mutation($i:ID!){setAiStorageConsent(installationId:$i,granted:true){id}}`, map[string]any{"i": instl}, nil)
	var tools struct {
		AiTools []struct{ Handle, Capability, InstanceID string } `json:"aiTools"`
	}
	alice.Must(t, `{aiTools{handle capability instanceId}}`, nil, &tools)
	handle := ""
	for _, tl := range tools.AiTools {
		if tl.Capability == "host.storage.create" && tl.InstanceID == ids[0] {
			handle = tl.Handle
		}
	}
	if handle == "" {
		t.Fatalf("no AI create tool in %+v", tools.AiTools)
	}
	alice.Must(t, `mutation($h:String!,$a:JSON){aiInvoke(handle:$h,arguments:$a){summary}}`, map[string]any{"h": handle, "a": map[string]any{"namespace": "notes", "key": "ai", "value": map[string]any{"text": "from the assistant"}}}, nil)
	waitText(p, "ai: from the assistant")
	if !p.EvalBool(`window.loadedOnce === true && performance.getEntriesByType("navigation").length === 1`) {
		t.Fatal("the page reloaded")
	}
	// A return to the foreground re-reads the storage source.
	p.Eval(`window.__vis = "hidden"; Object.defineProperty(document, "visibilityState", {configurable: true, get: function () { return window.__vis; }});
		document.dispatchEvent(new Event("visibilitychange")); window.__vis = "visible"; document.dispatchEvent(new Event("visibilitychange")); true`, nil)
	p.WaitFor(`window.pluginhostPreview.events().some(function(e){return e.type==="source_load" && e.source==="notes" && e.reason==="foreground"})`)
	screenshot(t, p, "app-notes")

	// Navigation with parameters is an address: a reload, Back and Forward
	// return to the same screen with its parameters, in the same page; back
	// writes its result.
	p.ClickText(".ph-card .ph-text", "milk: milk")
	waitText(p, "Detail of milk: milk")
	detail := "/app/" + ids[0] + "/detail?key=milk"
	if r := p.EvalString(`window.pluginhostPreview.route().extension + " " + location.pathname + location.search`); r != "detail "+detail {
		t.Fatalf("route and address: %s", r)
	}
	p.Do("Page.reload", nil)
	p.WaitFor(`window.pluginhostPreview && window.loadedOnce === undefined && ` + liveReady)
	waitText(p, "Detail of milk: milk")
	p.Eval(`window.loadedOnce = true`, nil)
	if d := p.EvalString(`String(window.pluginhostPreview.route().depth)`); d != "2" {
		t.Fatalf("after a reload the screen is at depth %s, want 2 (opened from the notes)", d)
	}
	p.Eval(`history.back(); true`, nil)
	waitUntil(p, `location.pathname === "/app/`+ids[0]+`/main" && document.body.innerText.indexOf("milk: milk") >= 0 && window.pluginhostPreview.route().extension === "main"`, 15*time.Second)
	p.Eval(`history.forward(); true`, nil)
	waitUntil(p, `location.pathname + location.search === "`+detail+`"`, 15*time.Second)
	waitText(p, "Detail of milk: milk")
	p.ClickText("button", "Done")
	waitText(p, "Last opened: milk")
	if !p.EvalBool(`location.pathname === "/app/` + ids[0] + `/main" && window.loadedOnce === true`) {
		t.Fatal("the plugin's back did not return to the notes' address in the same page")
	}

	// set_state with persist goes to setExtensionState and survives a reload.
	p.ClickText("button", "Oldest first")
	p.WaitFor(`window.pluginhostPreview.events().some(function(e){return e.type==="state_persisted"})`)
	var cfg struct {
		UiConfig struct{ PersistedState map[string]any } `json:"uiConfig"`
	}
	alice.Must(t, `query($i:ID!){uiConfig(instanceId:$i,extension:"main"){persistedState}}`, map[string]any{"i": ids[0]}, &cfg)
	if cfg.UiConfig.PersistedState["sort"] != "old" {
		t.Fatalf("persisted state %v", cfg.UiConfig.PersistedState)
	}
	p.Do("Page.reload", nil)
	p.WaitFor(`window.pluginhostPreview && window.loadedOnce === undefined && ` + liveReady)
	waitText(p, "Sort: old")

	// A browser that signed in with a sign-in link, and sends no header of
	// its own, reaches every endpoint of the page (GraphQL, the websocket)
	// with its session cookie.
	u := browser.Shared(t).Open(t, "about:blank", nil)
	u.Do("Page.navigate", map[string]any{"url": h.URL + "/app/login?token=" + url.QueryEscape(alice.Token) + "&next=" + url.QueryEscape(path)})
	waitUntil(u, liveReady, 15*time.Second)
	waitText(u, "milk: milk")
	if strings.Contains(u.EvalString(`location.href + document.documentElement.outerHTML`), alice.Token) {
		t.Fatal("the page signed in by link shows the token")
	}

	// The token is not in the page, its events or its requests.
	page := p.EvalString(`document.documentElement.outerHTML + JSON.stringify(window.pluginhostPreview.events()) + JSON.stringify(window.pluginhostPreview.inspector())`)
	if strings.Contains(page, alice.Token) {
		t.Fatal("the page shows the token")
	}
	for _, r := range p.Requests() {
		if strings.Contains(r, alice.Token) {
			t.Fatalf("a request URL holds the token: %s", r)
		}
	}
}

// appCacheAndImages: a second surface reuses the cached source; images go
// only through the image proxy (the browser's requests are counted) and a
// refused image shows its fallback; an Instance without the network grant
// shows why it has no images.
func appCacheAndImages(t *testing.T, h *host) {
	// The proxy takes only public HTTPS on port 443; a loopback address is
	// refused before any connection, so the image can only ever be seen by
	// the browser asking for it itself, which the request log would show.
	imageURL := "https://127.0.0.1/cat.png"

	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "img-alice", true)
	m, files := appNotes(t, nil)
	_, ids := installApp(t, h, alice, m, files, 2)
	alice.Must(t, `mutation($i:ID!){setInstanceGrant(instanceId:$i,permission:"network",granted:true){id}}`, map[string]any{"i": ids[0]}, nil)
	for _, id := range ids {
		alice.Must(t, createNote, map[string]any{"i": id, "k": "cat", "v": map[string]any{"text": "a cat", "image": imageURL}}, nil)
	}

	p := openApp(t, alice, "/app/"+ids[0]+"/home")
	p.WaitFor(liveReady)
	waitText(p, "home cat")
	graphqlPosts := func() int {
		n := 0
		for _, r := range p.Requests() {
			if strings.HasPrefix(r, "POST ") && strings.HasSuffix(r, "/-/graphql") {
				n++
			}
		}
		return n
	}
	before := graphqlPosts()
	p.ClickText("button", "Open notes")
	waitText(p, "cat: a cat")
	// The notes source of the screen is the home's: same Instance,
	// capability and arguments. It is taken from the cache, not run again.
	if len(eventsWith(t, p, "source_result", map[string]any{"extension": "main", "source": "notes", "cached": "cache"})) == 0 {
		t.Fatalf("the screen's notes source was not served from the cache: %v", appEvents(t, p, "source_result"))
	}
	for _, e := range appEvents(t, p, "source_load") {
		if e["extension"] == "main" {
			t.Fatalf("the screen loaded its source again: %v", e)
		}
	}
	if after := graphqlPosts(); after != before {
		t.Fatalf("opening the screen sent %d GraphQL requests, want none", after-before)
	}

	// The image is asked of the proxy, which refuses a loopback address; the
	// fallback shows; the page never requested the URL itself.
	p.WaitFor(`document.querySelector('[data-ph-image="failed"]')`)
	waitText(p, "Image unavailable (blocked_address)")
	var proxied int
	for _, r := range p.Requests() {
		if strings.Contains(r, "cat.png") {
			t.Fatalf("the page requested the image's URL: %s", r)
		}
		if r == "POST "+h.URL+"/app/"+ids[0]+"/-/ui-images:fetch" {
			proxied++
		}
	}
	if proxied != 1 {
		t.Fatalf("%d requests to the image proxy, want 1: %v", proxied, p.Requests())
	}
	screenshot(t, p, "app-image-fallback")

	// Without the network grant the page says why and asks nothing.
	q := openApp(t, alice, "/app/"+ids[1]+"/main")
	q.WaitFor(liveReady)
	waitText(q, "Images are off")
	for _, r := range q.Requests() {
		if strings.Contains(r, "ui-images:fetch") {
			t.Fatalf("an Instance without the network grant asked the proxy: %s", r)
		}
	}
}

// TestAppBlockedAndRefresh: a failing refresh keeps the good data without a
// retry state; a disabled Instance and a package update each show what
// happened; a failed capability shows its code; the inspector is for admins.
func TestAppBlockedAndRefresh(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	root := h.user(t, "root", true)
	m, files := appNotes(t, func(f map[string]string) {
		f["ui/main.json"] = strings.Replace(f["ui/main.json"], `{"type": "text", "props": {"text": "Sort: {{state.sort}}"}},`,
			`{"type": "text", "props": {"text": "Sort: {{state.sort}}"}}, {"type": "button", "props": {"label": "Summarize", "action": {"type": "invoke", "capability": "notes.summary", "arguments": {}}}},`, 1)
		f["manifest.json"] = strings.Replace(f["manifest.json"], `"extensions": [`,
			`"capabilities": [{"id": "notes.summary", "kind": "tool", "description": "Summarizes the notes.", "input_schema": {"type": "object", "properties": {}}, "output_schema": {"type": "object", "properties": {}}}],
  "extensions": [`, 1)
	})
	instl, ids := installApp(t, h, alice, m, files, 2)
	var created struct {
		StorageCreate struct{ Summary string } `json:"storageCreate"`
	}
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "milk", "v": map[string]any{"text": "buy milk " + alice.Token}}, &created)

	// A failing refresh keeps the good data: the note is deleted by another
	// client while its detail is open; the re-read fails, the data stays.
	p := openApp(t, alice, "/app/"+ids[0]+"/main")
	p.WaitFor(liveReady)
	waitText(p, "milk: buy milk [redacted]")
	p.ClickText(".ph-card .ph-text", "milk: buy milk [redacted]")
	waitText(p, "Detail of milk: buy milk [redacted]")
	alice.Must(t, `mutation($i:ID!){storageDelete(instanceId:$i,namespace:"notes",key:"milk",revision:1){summary}}`, map[string]any{"i": ids[0]}, nil)
	p.WaitFor(`window.pluginhostPreview.events().some(function(e){return e.type==="source_error" && e.source==="note" && e.kept_previous===true})`)
	waitText(p, "Detail of milk: buy milk [redacted]")
	if p.EvalBool(`document.querySelector("[data-ph-retry]")`) {
		t.Fatal("a retry state after a failed refresh of good data")
	}
	// The token a stored value held never reached the page.
	if strings.Contains(p.EvalString(`document.documentElement.outerHTML + JSON.stringify(window.pluginhostPreview.events())`), alice.Token) {
		t.Fatal("a stored copy of the token reached the page")
	}
	p.ClickText("button", "Done")

	// A failed capability says what happened in words; its code and
	// reason are for the admin's debug view.
	_, errs := alice.Do(t, `mutation($i:ID!){invoke(instanceId:$i,capability:"notes.summary",arguments:{}){summary}}`, map[string]any{"i": ids[0]})
	if len(errs) == 0 || errs[0].Extensions["reason"] != "no_module" {
		t.Fatalf("notes.summary without a module: %+v", errs)
	}
	p.ClickText("button", "Summarize")
	p.WaitFor(`document.querySelector("[data-ph-notice]")`)
	notice := p.EvalString(`document.querySelector("[data-ph-notice]").innerText`)
	if !strings.Contains(notice, "App notes cannot do this in this version.") || strings.Contains(notice, errs[0].Code()) || strings.Contains(notice, "no_module") {
		t.Fatalf("notice %q, want words without the code", notice)
	}
	screenshot(t, p, "app-capability-failed")

	// A package update (a new generation) reloads the config on the open
	// screen, keeping what the user typed.
	p.TypeInto(`input[data-ph-commit]`, "half a note")
	p.WaitFor(`window.pluginhostPreview.state().draft === "half a note"`)
	m2, files2 := appNotes(t, func(f map[string]string) {
		f["manifest.json"] = strings.Replace(f["manifest.json"], `"version": "1.0.0"`, `"version": "1.0.1"`, 1)
		f["ui/main.json"] = strings.Replace(f["ui/main.json"], `"title": "Notes"`, `"title": "Notes v2"`, 1)
	})
	alice.Must(t, `mutation($i:ID!,$p:String!){updatePlugin(installationId:$i,package:$p){generation}}`, map[string]any{"i": instl, "p": h.pub.Sign(t, m2, files2)}, nil)
	waitText(p, "Notes v2")
	waitText(p, "The plugin was updated to version 1.0.1")
	// Said quietly, as a toast, not as an alert.
	if !p.EvalBool(`!!document.querySelector('[data-ph-toast="updated"][role="status"]') && !document.querySelector('[data-ph-notice="PACKAGE_UPDATED"]')`) {
		t.Fatal("the update is not an info toast")
	}
	if !p.EvalBool(`window.pluginhostPreview.state().draft === "half a note" && document.querySelector("input[data-ph-commit]").value === "half a note"`) {
		t.Fatalf("the update lost what was typed: state %v", p.EvalString(`JSON.stringify(window.pluginhostPreview.state())`))
	}
	// A change pluginhost dev could not install: said on the open page as an
	// info toast that stays, the page unchanged.
	alice.Must(t, `mutation($i:ID!){reportDevelopment(installationId:$i,message:"ui/main.json /view: unknown node type \"colum\"")}`, map[string]any{"i": instl}, nil)
	p.WaitFor(`!!document.querySelector('[data-ph-toast="not_installed"][role="status"]')`)
	waitText(p, `Your latest change was not installed; this page still shows version 1.0.1. ui/main.json /view: unknown node type "colum"`)
	waitText(p, "Notes v2")
	screenshot(t, p, "app-change-not-installed")
	if len(appEvents(t, p, "package_changed")) == 0 || len(appEvents(t, p, "config_reloaded")) == 0 {
		t.Fatal("no package_changed and config_reloaded events")
	}

	// Disabling the open Instance blocks the page with a message.
	alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){id}}`, map[string]any{"i": ids[0]}, nil)
	p.WaitFor(`document.querySelector('[data-ph-blocked="disabled"]')`)
	waitText(p, "This Instance is disabled")
	screenshot(t, p, "app-disabled")
	// Opening a disabled Instance says so too; enabling it shows the screen.
	q := openApp(t, alice, "/app/"+ids[0]+"/main")
	q.WaitFor(`document.querySelector('[data-ph-blocked="disabled"]')`)
	alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:true){id}}`, map[string]any{"i": ids[0]}, nil)
	q.WaitFor(liveReady + ` && !window.pluginhostPreview.blocked()`)
	// Another user's Instance is refused in the page, not shown empty.
	bob := h.user(t, "bob", false)
	r := openApp(t, bob, "/app/"+ids[1]+"/main")
	r.WaitFor(`document.querySelector('[data-ph-blocked]')`)
	if strings.Contains(pageText(r), "No notes yet") {
		t.Fatal("a foreign Instance shows an empty list")
	}

	// The inspector and the page API that reads the plugin's state, data,
	// context and events: only an admin's.
	_, bobIDs := installApp(t, h, bob, m, files, 1)
	s := openApp(t, bob, "/app/"+bobIDs[0]+"/main?debug=1")
	s.WaitFor(liveReady)
	if s.EvalBool(`document.querySelector(".ph-side")`) {
		t.Fatal("a user who is not an admin sees the inspector")
	}
	for _, f := range []string{"events", "state", "data", "context", "inspector", "setState", "runAction", "clearEvents"} {
		if s.EvalBool(`typeof window.pluginhostPreview.` + f + ` !== "undefined"`) {
			t.Fatalf("the page API hands a user who is not an admin %s()", f)
		}
	}
	if !s.EvalBool(`window.pluginhostPreview.metrics().first_render_ms > 0 && window.pluginhostPreview.route().extension === "main"`) {
		t.Fatal("the page API does not say what it shows")
	}
	_, rootIDs := installApp(t, h, root, m, files, 1)
	for _, tc := range []struct {
		query string
		want  bool
	}{{"", false}, {"?debug=1", true}} {
		s := openApp(t, root, "/app/"+rootIDs[0]+"/main"+tc.query)
		s.WaitFor(liveReady)
		if got := s.EvalBool(`document.querySelector(".ph-side") && document.querySelector(".ph-side").isConnected`); got != tc.want {
			t.Fatalf("admin %q: inspector shown %v, want %v", tc.query, got, tc.want)
		}
		if got := s.EvalBool(`window.pluginhostPreview.inspector() !== null`); got != tc.want {
			t.Fatalf("admin %q: the page API's inspector data %v, want %v", tc.query, got, tc.want)
		}
		if tc.want {
			// The debug view says an error's code and reason too.
			s.ClickText("button", "Summarize")
			s.WaitFor(`document.querySelector("[data-ph-notice]")`)
			if notice := s.EvalString(`document.querySelector("[data-ph-notice]").innerText`); !strings.Contains(notice, errs[0].Code()+" (no_module)") {
				t.Fatalf("debug view notice %q, want the code and reason", notice)
			}
			s.WaitFor(`document.querySelector("#ph-inspector").textContent.indexOf("storage") >= 0 || document.querySelector("#ph-inspector").textContent.length > 10`)
			if strings.Contains(s.EvalString(`document.querySelector(".ph-side").innerText`), root.Token) {
				t.Fatal("the inspector shows the token")
			}
			screenshot(t, s, "app-inspector")
		}
	}

	// The home has a card per Instance, each leading to its first screen
	// and its settings.
	l := openApp(t, alice, "/app")
	l.WaitFor(`document.querySelectorAll('[data-instance] [data-ph-open]').length === 2`)
	for _, id := range ids {
		if got := l.EvalString(`document.querySelector('[data-instance="` + id + `"] [data-ph-open]').getAttribute("href") + " " + document.querySelector('[data-instance="` + id + `"] [data-ph-settings-link]').getAttribute("href")`); got != "/app/"+id+"/main /app/"+id+"/-/settings" {
			t.Fatalf("the card of %s leads to %s", id, got)
		}
	}
}

// BenchmarkAppFirstScreen measures the time from opening /app/{id}/main to
// the first screen with its storage source loaded (the runtime's
// first_data_ms), with 50 notes on the screen.
func BenchmarkAppFirstScreen(b *testing.B) {
	benchApp(b, func(b *testing.B, h *host, alice *Client, id string) {
		var ms []float64
		for i := 0; i < b.N; i++ {
			p := openApp(b, alice, "/app/"+id+"/main")
			p.WaitFor(`window.pluginhostPreview && window.pluginhostPreview.metrics().first_data_ms !== undefined`)
			var m struct {
				FirstData float64 `json:"first_data_ms"`
				Nodes     int     `json:"nodes"`
			}
			p.Eval(`window.pluginhostPreview.metrics()`, &m)
			ms = append(ms, m.FirstData)
			if i == b.N-1 {
				b.Logf("last run: %s", p.EvalString(`JSON.stringify(window.pluginhostPreview.metrics())`))
			}
		}
		report(b, ms)
	})
}

// BenchmarkAppFirstScreenWarm measures a person opening the same screen
// again in one browser (its cache warm: the static files are immutable),
// from the navigation's start to the first screen with its storage source
// loaded, and reports the page's HTML size.
func BenchmarkAppFirstScreenWarm(b *testing.B) {
	benchApp(b, func(b *testing.B, h *host, alice *Client, id string) {
		p := openApp(b, alice, "/app/"+id+"/main")
		p.WaitFor(`window.pluginhostPreview && window.pluginhostPreview.metrics().first_data_ms !== undefined`)
		var ms []float64
		var htmlBytes float64
		for i := 0; i < b.N; i++ {
			p.Do("Page.navigate", map[string]any{"url": h.URL + "/app/" + id + "/main?n=" + strconv.Itoa(i)})
			p.WaitFor(`location.search === "?n=` + strconv.Itoa(i) + `" && window.pluginhostPreview && window.pluginhostPreview.metrics().first_data_ms !== undefined`)
			var m struct {
				FirstData float64 `json:"first_data_ms"`
			}
			p.Eval(`window.pluginhostPreview.metrics()`, &m)
			ms = append(ms, m.FirstData)
			p.Eval(`performance.getEntriesByType("navigation")[0].decodedBodySize`, &htmlBytes)
		}
		b.ReportMetric(htmlBytes, "html-bytes")
		report(b, ms)
	})
}

// BenchmarkAppLiveUpdate measures the time from a storageUpdate by another
// client to the open screen showing the new value.
func BenchmarkAppLiveUpdate(b *testing.B) {
	benchApp(b, func(b *testing.B, h *host, alice *Client, id string) {
		p := openApp(b, alice, "/app/"+id+"/main")
		p.WaitFor(liveReady)
		waitText(p, "n0: note 0")
		p.Eval(`window.seen = {}; new MutationObserver(function () { var m = /n0: value (\d+)/.exec(document.body.innerText); if (m && !window.seen[m[1]]) window.seen[m[1]] = Date.now(); }).observe(document.body, {subtree: true, childList: true, characterData: true}); true`, nil)
		var ms []float64
		for i := 0; i < b.N; i++ {
			start := time.Now()
			alice.Must(b, `mutation($i:ID!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"notes",key:"n0",value:$v,revision:$r){summary}}`, map[string]any{"i": id, "v": map[string]any{"text": fmt.Sprintf("value %d", i)}, "r": i + 1}, nil)
			p.WaitFor(fmt.Sprintf(`window.seen[%q]`, fmt.Sprint(i)))
			var at int64
			p.Eval(fmt.Sprintf(`window.seen[%q]`, fmt.Sprint(i)), &at)
			ms = append(ms, float64(at-start.UnixMilli()))
		}
		report(b, ms)
	})
}

func benchApp(b *testing.B, run func(b *testing.B, h *host, alice *Client, id string)) {
	dir := b.TempDir()
	pub := NewPublisher(b)
	h := &host{Server: Start(b, "sqlite:"+dir+"/ph.db", pub.Dir), pub: pub}
	alice := &Client{URL: h.URL, Token: Token(b, h.DSN, "alice", false)}
	m, files := appNotes(b, nil)
	_, ids := installApp(b, h, alice, m, files, 1)
	for i := 0; i < 50; i++ {
		alice.Must(b, createNote, map[string]any{"i": ids[0], "k": fmt.Sprint("n", i), "v": map[string]any{"text": fmt.Sprint("note ", i)}}, nil)
	}
	b.ResetTimer()
	run(b, h, alice, ids[0])
}

// report adds the median and the 99th percentile of ms as metrics.
func report(b *testing.B, ms []float64) {
	if len(ms) == 0 {
		return
	}
	sort.Float64s(ms)
	b.ReportMetric(ms[len(ms)/2], "p50-ms")
	b.ReportMetric(ms[(len(ms)*99)/100], "p99-ms")
	b.ReportMetric(ms[len(ms)-1], "max-ms")
}

// TestAppBackgroundRun: the writes of a scheduled background run (a
// WebAssembly module whose host action stores a note) appear on the open
// screen without a reload, run after run.
func TestAppBackgroundRun(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	m, files := appNotes(t, func(f map[string]string) {
		f["manifest.json"] = strings.Replace(f["manifest.json"], `"extensions": [`,
			`"capabilities": [{"id": "notes.tick", "kind": "background", "description": "Writes a note on a schedule.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "module": "capabilities/bgwrite.wasm", "schedule_seconds": 30},
    {"id": "notes.count", "kind": "data", "description": "Counts the notes.", "input_schema": {"type": "object"}, "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}, "module": "capabilities/count.wasm"}],
  "extensions": [`, 1)
		// An ordinary capability source next to the storage source.
		f["ui/main.json"] = strings.Replace(f["ui/main.json"], `"trigger": "load", "arguments": {"namespace": "notes", "limit": 50}}`,
			`"trigger": "load", "arguments": {"namespace": "notes", "limit": 50}}, {"id": "stats", "capability": "notes.count", "trigger": "load"}`, 1)
		f["ui/main.json"] = strings.Replace(f["ui/main.json"], `{"type": "text", "props": {"text": "Sort: {{state.sort}}"}},`,
			`{"type": "text", "props": {"text": "Sort: {{state.sort}}"}}, {"type": "text", "props": {"text": "Counted: {{data.stats.summary}}"}},`, 1)
	})
	modules := wasmtest.Modules(t, "testdata/modules")
	files["capabilities/bgwrite.wasm"] = string(modules["bgwrite"])
	files["capabilities/count.wasm"] = string(modules["count"])
	_, ids := installApp(t, h, alice, m, files, 1)
	// The module is compiled on its first run, which can take longer than a
	// request may (many seconds under the race detector): it is compiled
	// before the page opens, so that the page's one run of the source is
	// judged, not the compiler's speed.
	warmCapability(t, alice, ids[0], "notes.count")
	p := openApp(t, alice, "/app/"+ids[0]+"/main")
	p.WaitFor(liveReady)
	p.Eval(`window.loadedOnce = true`, nil)
	waitTextWithin(p, "bg: from the background", 90*time.Second)
	first := p.EvalString(`(/bg: from the background \S+/.exec(document.body.innerText) || [""])[0]`)
	// The next run, 30 seconds on, shows its own note on the same page.
	deadline := time.Now().Add(90 * time.Second)
	for {
		now := p.EvalString(`(/bg: from the background \S+/.exec(document.body.innerText) || [""])[0]`)
		if now != first && now != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the next background run did not appear; the page shows %q", now)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !p.EvalBool(`window.loadedOnce === true`) {
		t.Fatal("the page reloaded")
	}
	// The storage source was re-read after each change it did not show
	// (the server read it for the page's first screen); the capability
	// source ran once, at open.
	waitText(p, "Counted: ")
	var stats, notes int
	for _, e := range appEvents(t, p, "source_load") {
		switch {
		case e["source"] == "stats":
			stats++
		case e["source"] == "notes" && e["reason"] == "storage_changed":
			notes++
		}
	}
	if stats != 1 || notes < 1 {
		t.Fatalf("loads: stats %d (want 1), notes re-read %d times (want at least once)", stats, notes)
	}
}

// TestAppSlowAnswerDiscarded: a capability's answer that arrives after its
// screen closed is discarded; the screen the user went back to is unchanged.
func TestAppSlowAnswerDiscarded(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	m, files := appNotes(t, func(f map[string]string) {
		f["manifest.json"] = strings.Replace(f["manifest.json"], `"extensions": [`,
			`"capabilities": [{"id": "notes.slow", "kind": "data", "description": "Answers late.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "module": "capabilities/slow.wasm"}],
  "extensions": [`, 1)
		f["ui/detail.json"] = strings.Replace(f["ui/detail.json"], `"data_sources": [`, `"data_sources": [{"id": "slow", "capability": "notes.slow", "trigger": "load"},`, 1)
	})
	files["capabilities/slow.wasm"] = string(wasmtest.Module(t, "testdata/modules", "slow"))
	_, ids := installApp(t, h, alice, m, files, 1)
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "milk", "v": map[string]any{"text": "buy milk"}}, nil)
	p := openApp(t, alice, "/app/"+ids[0]+"/main")
	p.WaitFor(liveReady)
	p.ClickText(".ph-card .ph-text", "milk: buy milk")
	waitText(p, "Detail of milk: buy milk")
	p.WaitFor(`window.pluginhostPreview.context().loading.slow === true`)
	p.ClickText("button", "Done")
	waitText(p, "Last opened: milk")
	waitUntil(p, `window.pluginhostPreview.events().some(function(e){return e.type==="discarded" && e.source==="slow" && e.reason==="the screen was closed"})`, 30*time.Second)
	if used := eventsWith(t, p, "source_result", map[string]any{"source": "slow"}); len(used) > 0 {
		t.Fatalf("the late answer was used: %v", used)
	}
	if r := p.EvalString(`window.pluginhostPreview.route().extension`); r != "main" {
		t.Fatalf("route %s after the late answer", r)
	}
}

// warmCapability runs a capability until one run succeeds, so that the
// timings a test judges include neither the module's compilation (seconds,
// more under the race detector) nor a first run cut short on a busy machine.
func warmCapability(t *testing.T, c *Client, instanceID, capability string) {
	t.Helper()
	var errs []GQLError
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, errs = retryWhileCompiling(t, c, `mutation($i: ID!, $c: String!) { invoke(instanceId: $i, capability: $c, arguments: {}) { summary } }`,
			map[string]any{"i": instanceID, "c": capability}); len(errs) == 0 {
			return
		}
		// Only a run cut by its deadline is tried again.
		if reason, _ := errs[0].Extensions["reason"].(string); errs[0].Code() != "INTERNAL" && reason != "timeout" {
			break
		}
	}
	t.Fatalf("%s never ran: %+v", capability, errs)
}

// retryWhileCompiling sends a request again, as a client would, while the
// answer is that a capability's module is still being compiled
// (CAPABILITY_FAILED busy: a module's first run after an install waits for
// its compilation), and returns the first other answer.
func retryWhileCompiling(t *testing.T, c *Client, query string, vars map[string]any) (map[string]json.RawMessage, []GQLError) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		data, errs := c.Do(t, query, vars)
		if len(errs) == 0 || errs[0].Code() != "CAPABILITY_FAILED" || errs[0].Extensions["reason"] != "busy" || time.Now().After(deadline) {
			return data, errs
		}
	}
}
