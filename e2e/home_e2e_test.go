package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
)

// The home (GET /app): every Instance's home extensions drawn live, in one
// page with the screens it opens, so that every surface shares the host
// cache. Network calls are counted from what Chromium sent.

// appTasks is the test plugin appnotes as another plugin, whose home card
// says "tasks" where appnotes' says "home".
func appTasks(t testing.TB) (map[string]any, map[string]string) {
	m, files := appNotes(t, func(f map[string]string) {
		f["ui/home.json"] = strings.Replace(f["ui/home.json"], `home {{item.key}}`, `tasks {{item.key}}`, 1)
	})
	m["id"] = "com.test.apptasks"
	m["name"] = "App tasks"
	return m, files
}

// openAppWith is openApp with a script that runs in the page before its own
// (none when empty).
func openAppWith(t testing.TB, c *Client, path, script string) *browser.Page {
	t.Helper()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+c.Token))
	p := browser.Shared(t).Open(t, "about:blank", map[string]string{"Authorization": basic})
	p.RecordRequests()
	if script != "" {
		p.Do("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": script})
	}
	p.Do("Page.navigate", map[string]any{"url": c.URL + path})
	p.WaitFor(`location.pathname === ` + fmt.Sprintf("%q", strings.SplitN(path, "?", 2)[0]) + ` && document.readyState === "complete"`)
	return p
}

// sourceCalls counts the invoke requests the page sent for capability on
// instance.
func sourceCalls(t testing.TB, p *browser.Page, instance, capability string) int {
	t.Helper()
	n := 0
	for _, post := range p.Posts() {
		if !strings.HasSuffix(post.URL, "/-/graphql") {
			continue
		}
		var body struct {
			Query     string
			Variables map[string]any
		}
		if err := json.Unmarshal([]byte(post.Body), &body); err != nil {
			t.Fatalf("a GraphQL request that is not JSON: %q", post.Body)
		}
		if strings.Contains(body.Query, "invoke(") && body.Variables["i"] == instance && body.Variables["c"] == capability {
			n++
		}
	}
	return n
}

// homeReady: the home's cards have drawn their first data.
const homeReady = `window.pluginhostShell && window.pluginhostShell.surfaces().length > 0 && window.pluginhostPreview && document.querySelectorAll("[data-home-card] [data-ph-extension]").length > 0`

// visibility makes the page hidden, or visible again, as a browser does when
// its tab is.
func visibility(p *browser.Page, state string) {
	p.Eval(fmt.Sprintf(`(function () {
		if (!window.__visPatched) { window.__visPatched = true; window.__vis = "visible";
			Object.defineProperty(document, "visibilityState", {configurable: true, get: function () { return window.__vis; }}); }
		window.__vis = %q; document.dispatchEvent(new Event("visibilitychange")); return true; })()`, state), nil)
}

// TestAppSurfaces: the surfaces of the web host's page (home cards,
// responses, screens) sharing one host cache and one connection, each part
// a user of its own on one server.
func TestAppSurfaces(t *testing.T) {
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	t.Run("home", func(t *testing.T) { appHome(t, h) })
	t.Run("cache and images", func(t *testing.T) { appCacheAndImages(t, h) })
	t.Run("responses", func(t *testing.T) { appResponses(t, h) })
	t.Run("invoke store shared", func(t *testing.T) { appInvokeStoreShared(t, h) })
}

// appHome: two plugins on the home, each card live; a screen opened
// from a card or from the list opens in the page and takes the card's
// source from the cache (no second call); a storage change reaches both
// surfaces with one call; back returns to the home; a resume re-reads the
// storage sources (the home at three widths is TestAppShell's).
func appHome(t *testing.T, h *host) {
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "home-alice", true)
	m, files := appNotes(t, nil)
	_, notes := installApp(t, h, alice, m, files, 1)
	m2, files2 := appTasks(t)
	_, tasks := installApp(t, h, alice, m2, files2, 1)
	alice.Must(t, createNote, map[string]any{"i": notes[0], "k": "cat", "v": map[string]any{"text": "a cat"}}, nil)
	alice.Must(t, createNote, map[string]any{"i": tasks[0], "k": "dog", "v": map[string]any{"text": "a dog"}}, nil)

	// The page: its policy, its size, no inline script.
	req, _ := http.NewRequest("GET", h.URL+"/app", nil)
	req.SetBasicAuth("user", alice.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline'; connect") && strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
		t.Fatalf("policy %q", csp)
	}
	if strings.Contains(string(page), "<script>") || strings.Contains(string(page), alice.Token) {
		t.Fatal("the home has an inline script or the token")
	}
	t.Logf("home page: %d bytes of HTML for 2 Instances", len(page))

	p := openApp(t, alice, "/app")
	p.WaitFor(homeReady)
	waitText(p, "home cat")
	waitText(p, "tasks dog")
	if !p.EvalBool(`window.pluginhostShell.surfaces().length === 2 && window.pluginhostShell.surfaces().every(function (s) { return s.surface === "home" && s.shown; })`) {
		t.Fatalf("surfaces %s", p.EvalString(`JSON.stringify(window.pluginhostShell.surfaces())`))
	}
	waitUntil(p, `window.pluginhostPreview.events().filter(function (e) { return e.type === "live_status" && e.status === "live"; }).length >= 2`, 15*time.Second)
	// One socket for the page, whatever the number of its surfaces.
	sockets := 0
	for _, r := range p.Requests() {
		if strings.HasPrefix(r, "WS ") {
			sockets++
		}
	}
	if sockets != 1 {
		t.Fatalf("%d websockets, want 1: %v", sockets, p.Requests())
	}
	for _, id := range []string{notes[0], tasks[0]} {
		if n := sourceCalls(t, p, id, "host.storage.list"); n != 1 {
			t.Fatalf("Instance %s: %d calls of its notes source, want 1", id, n)
		}
	}

	// The card's button opens the screen in the page; its notes source is
	// the card's, taken from the cache.
	p.Eval(`window.sameDocument = true`, nil)
	p.ClickText(fmt.Sprintf(`[data-home-card="%s/home"] button`, notes[0]), "Open notes")
	waitUntil(p, fmt.Sprintf(`location.pathname === "/app/%s/main"`, notes[0]), 10*time.Second)
	waitText(p, "cat: a cat")
	if !p.EvalBool(`window.sameDocument === true`) {
		t.Fatal("opening the screen loaded a new page")
	}
	if n := sourceCalls(t, p, notes[0], "host.storage.list"); n != 1 {
		t.Fatalf("the screen called the source the card had: %d calls", n)
	}
	if len(eventsWith(t, p, "source_result", map[string]any{"surface": "screen", "source": "notes", "cached": "cache"})) == 0 {
		t.Fatalf("the screen's notes did not come from the cache: %v", appEvents(t, p, "source_result"))
	}

	// A write by another client reaches the screen and the card behind it
	// with one call.
	alice.Must(t, createNote, map[string]any{"i": notes[0], "k": "bird", "v": map[string]any{"text": "a bird"}}, nil)
	waitText(p, "bird: a bird")
	p.Eval(`window.pluginhostPreview.idle()`, nil)
	if n := sourceCalls(t, p, notes[0], "host.storage.list"); n != 2 {
		t.Fatalf("%d calls after one change seen by two surfaces, want 2 in all", n)
	}
	// Back returns to the home, which has the bird already.
	p.Eval(`history.back(); true`, nil)
	waitUntil(p, `location.pathname === "/app" && !document.getElementById("ph-home").hidden`, 10*time.Second)
	waitText(p, "home bird")
	if n := sourceCalls(t, p, notes[0], "host.storage.list"); n != 2 {
		t.Fatalf("the home called again on return: %d calls", n)
	}

	// The list's link opens the other plugin's screen in the page, from the
	// cache too.
	p.Click(fmt.Sprintf(`[data-instance="%s"] a[data-extension="main"]`, tasks[0]))
	waitUntil(p, fmt.Sprintf(`location.pathname === "/app/%s/main"`, tasks[0]), 10*time.Second)
	waitText(p, "dog: a dog")
	if n := sourceCalls(t, p, tasks[0], "host.storage.list"); n != 1 {
		t.Fatalf("the list's screen called the source the card had: %d calls", n)
	}
	p.Click(`[data-ph-home-link]`)
	waitUntil(p, `location.pathname === "/app" && !document.getElementById("ph-home").hidden`, 10*time.Second)
	if !p.EvalBool(`window.sameDocument === true`) {
		t.Fatal("the home link loaded a new page")
	}

	// A resume re-reads each card's storage source, once.
	visibility(p, "hidden")
	visibility(p, "visible")
	waitUntil(p, `window.pluginhostPreview.events().filter(function (e) { return e.type === "source_load" && e.reason === "foreground" && e.surface === "home"; }).length === 2`, 10*time.Second)
	p.Eval(`window.pluginhostPreview.idle()`, nil)
	if a, b := sourceCalls(t, p, notes[0], "host.storage.list"), sourceCalls(t, p, tasks[0], "host.storage.list"); a != 3 || b != 2 {
		t.Fatalf("after a resume: %d and %d calls, want 3 and 2", a, b)
	}
	screenshot(t, p, "app-home")

	// Opened by its address, a screen's page is the same shell: the server
	// read its storage source for it (no call from the page); its home
	// link shows the home in the page, which calls the card's source only
	// for the Instance the screen did not show.
	q := openApp(t, alice, "/app/"+notes[0]+"/main")
	q.WaitFor(liveReady)
	waitText(q, "cat: a cat")
	q.Eval(`window.sameDocument = true`, nil)
	q.Click(`[data-ph-home-link]`)
	waitUntil(q, `location.pathname === "/app"`, 10*time.Second)
	waitText(q, "home cat")
	waitText(q, "tasks dog")
	q.Eval(`window.pluginhostPreview.idle()`, nil)
	if a, b := sourceCalls(t, q, notes[0], "host.storage.list"), sourceCalls(t, q, tasks[0], "host.storage.list"); a != 0 || b != 1 || !q.EvalBool(`window.sameDocument === true`) {
		t.Fatalf("screen then home: %d and %d calls, want 0 and 1, in one page", a, b)
	}
}

// TestAppHomeTimersAndGenerations: a card's refresh_seconds timer runs only
// while the page is visible and the home shown; an answer for an older
// package generation is discarded when the plugin is updated while it runs.
// The page's long timers run a hundred times faster, so that a 30 s period
// takes 0.3 s.
func TestAppHomeTimersAndGenerations(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	pub := NewPublisher(t)
	h := &host{Server: Start(t, b.DSN, pub.Dir, "--run-timeout", "20s"), pub: pub}
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	edit := func(home string) (map[string]any, map[string]string) {
		m, files := appNotes(t, func(f map[string]string) {
			f["manifest.json"] = strings.Replace(f["manifest.json"], `"extensions": [`,
				`"capabilities": [{"id": "notes.slow", "kind": "data", "description": "Answers late.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "module": "capabilities/slow.wasm"}],
  "extensions": [`, 1)
			f["ui/home.json"] = home
		})
		files["capabilities/slow.wasm"] = string(wasmtest.Module(t, "testdata/modules", "slow"))
		return m, files
	}
	home := func(label string) string {
		return `{"ui_schema": 2, "description": "Ticks.", "data_sources": [
			{"id": "notes", "capability": "host.storage.list", "trigger": "load", "refresh_seconds": 30, "arguments": {"namespace": "notes", "limit": 5}},
			{"id": "slow", "capability": "notes.slow", "trigger": "manual", "arguments": {"ms": 12000}}],
			"view": {"type": "column", "children": [{"type": "text", "props": {"text": "` + label + ` {{data.notes.summary}}"}},
			{"type": "button", "props": {"label": "Ask slowly", "action": {"type": "refresh", "source": "slow"}}},
			{"type": "text", "props": {"text": "slow: {{data.slow.summary}}"}}]}}`
	}
	m, files := edit(home("v1"))
	instl, ids := installApp(t, h, alice, m, files, 1)
	warmCapability(t, alice, ids[0], "notes.slow")

	fast := `(function () { var si = window.setInterval; window.setInterval = function (fn, ms) { return si(fn, ms >= 30000 ? ms / 100 : ms); }; })();`
	p := openAppWith(t, alice, "/app", fast)
	p.WaitFor(homeReady)
	waitText(p, "v1")
	ticks := func() int {
		return len(eventsWith(t, p, "source_load", map[string]any{"reason": "refresh_seconds", "surface": "home"}))
	}
	waitUntil(p, `window.pluginhostPreview.events().filter(function (e) { return e.reason === "refresh_seconds"; }).length >= 3`, 15*time.Second)

	// Hidden: no tick for five periods.
	visibility(p, "hidden")
	p.Eval(`window.pluginhostPreview.idle()`, nil)
	before := ticks()
	time.Sleep(1500 * time.Millisecond) // five periods
	if n := ticks(); n != before {
		t.Fatalf("%d refresh_seconds loads while hidden", n-before)
	}
	visibility(p, "visible")
	waitUntil(p, fmt.Sprintf(`window.pluginhostPreview.events().filter(function (e) { return e.reason === "refresh_seconds"; }).length > %d`, before), 15*time.Second)

	// Not shown (a screen covers the home): no tick either.
	p.Eval(fmt.Sprintf(`window.pluginhostShell.open(%q, "main"); true`, ids[0]), nil)
	waitText(p, "Sort:")
	p.Eval(`window.pluginhostPreview.idle()`, nil)
	before = ticks()
	time.Sleep(1500 * time.Millisecond) // five periods
	if n := ticks(); n != before {
		t.Fatalf("%d refresh_seconds loads of a card behind the screen", n-before)
	}
	p.Eval(`window.pluginhostShell.home(); true`, nil)
	waitUntil(p, `!document.getElementById("ph-home").hidden`, 10*time.Second)

	// An answer asked before an update arrives after it (the capability takes
	// 12 s, the update far less, even under the race detector): discarded,
	// and the card shows the new version.
	// The card reloads its notes every 0.3 s here, and may move the button
	// as it does: a click that misses is made again.
	clickUntil(p, "button", "Ask slowly", `window.pluginhostPreview.events().some(function (e) { return e.type === "source_load" && e.source === "slow"; })`)
	m2, files2 := edit(home("v2"))
	m2["version"] = "1.0.1"
	alice.Must(t, `mutation($i:ID!,$p:String!){updatePlugin(installationId:$i,package:$p){generation}}`, map[string]any{"i": instl, "p": h.pub.Sign(t, m2, files2)}, nil)
	waitText(p, "v2")
	waitUntil(p, `window.pluginhostPreview.events().some(function (e) { return e.type === "discarded" && e.source === "slow" && e.reason === "the package generation changed"; })`, 30*time.Second)
	if strings.Contains(pageText(p), "slow answer") {
		t.Fatal("the card shows an answer of the older generation")
	}
}

// appResponses: a response the AI chose (selectResponseUi) appears on
// the open home, live, from the result it chose: no call; a screen that shows
// the same source takes it from the cache; a reload lists it again; another
// user's home never shows it.
func appResponses(t *testing.T, h *host) {
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice, bob := h.user(t, "resp-alice", true), h.user(t, "resp-bob", false)
	// The plugin shows answers, and has no home card: only the response
	// could fill the cache.
	m, files := appNotes(t, func(f map[string]string) {
		f["manifest.json"] = strings.Replace(f["manifest.json"], `{"id": "home", "point": "home", "config": "ui/home.json"},`,
			`{"id": "answer", "point": "response", "config": "ui/answer.json"},`, 1)
	})
	delete(files, "ui/home.json")
	files["ui/answer.json"] = `{"ui_schema": 2, "description": "The notes the assistant found.",
		"a2ui": {"version": 1, "description": "Use when the answer lists the user's notes.", "schema": {"type": "object", "required": ["data"]}},
		"data_sources": [{"id": "notes", "capability": "host.storage.list", "trigger": "load", "arguments": {"namespace": "notes", "limit": 50}}],
		"view": {"type": "column", "children": [
			{"type": "list", "props": {"items_source": "{{data.notes.data.items}}"}, "children": [{"type": "text", "props": {"text": "answer {{item.key}}: {{item.value.text}}"}}]},
			{"type": "button", "props": {"label": "All notes", "action": {"type": "navigate", "target": "main"}}}]}}`
	instl, ids := installApp(t, h, alice, m, files, 1)
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "cat", "v": map[string]any{"text": "a cat"}}, nil)
	alice.Must(t, `mutation($i:ID!){setAiStorageConsent(installationId:$i,granted:true){id}}`, map[string]any{"i": instl}, nil)

	p := openApp(t, alice, "/app")
	p.WaitFor(`window.pluginhostShell && document.querySelector("[data-instance]")`)
	q := openApp(t, bob, "/app")
	q.WaitFor(`window.pluginhostShell && document.querySelector(".ph-home-list")`)
	if !p.EvalBool(`document.querySelector(".ph-home-responses").hidden`) {
		t.Fatal("the home shows responses before any")
	}
	waitUntil(p, `window.pluginhostShell.connected()`, 15*time.Second)
	time.Sleep(300 * time.Millisecond) // the server takes the subscription the acknowledgement let through

	// The assistant lists the notes, then shows its answer with the response.
	var tools struct {
		AiTools []struct{ Handle, Capability, InstanceID string } `json:"aiTools"`
	}
	alice.Must(t, `{aiTools{handle capability instanceId}}`, nil, &tools)
	list := ""
	for _, tl := range tools.AiTools {
		if tl.Capability == "host.storage.list" && tl.InstanceID == ids[0] {
			list = tl.Handle
		}
	}
	args := map[string]any{"namespace": "notes", "limit": 50}
	var ran struct {
		AiInvoke json.RawMessage `json:"aiInvoke"`
	}
	alice.Must(t, `mutation($h:String!,$a:JSON){aiInvoke(handle:$h,arguments:$a){summary data evidence{type instanceId namespace key revision}}}`, map[string]any{"h": list, "a": args}, &ran)
	var result map[string]any
	json.Unmarshal(ran.AiInvoke, &result)
	if ev, ok := result["evidence"].([]any); ok {
		for _, e := range ev {
			e := e.(map[string]any)
			e["instance_id"] = e["instanceId"]
			delete(e, "instanceId")
		}
	}
	var cands struct {
		ResponseCandidates []struct{ Handle, InstanceID, Extension string } `json:"responseCandidates"`
	}
	alice.Must(t, `{responseCandidates{handle instanceId extension}}`, nil, &cands)
	if len(cands.ResponseCandidates) != 1 {
		t.Fatalf("candidates %+v", cands)
	}
	var sel struct {
		SelectResponseUi struct {
			Rendered bool
			Reasons  []struct{ Code, Path, Message string }
		} `json:"selectResponseUi"`
	}
	alice.Must(t, `mutation($h:String!,$a:JSON,$r:JSON!){selectResponseUi(handle:$h,messageId:"msg-1",capability:"host.storage.list",arguments:$a,result:$r){rendered reasons{code path message}}}`,
		map[string]any{"h": cands.ResponseCandidates[0].Handle, "a": args, "r": result}, &sel)
	if !sel.SelectResponseUi.Rendered {
		t.Fatalf("not rendered: %+v", sel.SelectResponseUi.Reasons)
	}
	waitText(p, "answer cat: a cat")
	if n := sourceCalls(t, p, ids[0], "host.storage.list"); n != 0 {
		t.Fatalf("the response called its source: %d calls", n)
	}
	if !p.EvalBool(`window.pluginhostShell.surfaces().some(function (s) { return s.surface === "response" && s.message === "msg-1"; })`) {
		t.Fatalf("surfaces %s", p.EvalString(`JSON.stringify(window.pluginhostShell.surfaces())`))
	}

	// Its button opens the screen, whose notes come from the cache.
	p.ClickText(`[data-response="msg-1"] button`, "All notes")
	waitText(p, "cat: a cat")
	if n := sourceCalls(t, p, ids[0], "host.storage.list"); n != 0 {
		t.Fatalf("the screen called the source the response had: %d calls", n)
	}
	screenshot(t, p, "app-response-screen")
	p.Eval(`history.back(); true`, nil)
	waitUntil(p, `!document.getElementById("ph-home").hidden`, 10*time.Second)
	screenshot(t, p, "app-response")

	// A reload lists it from the server, still without a call.
	r := openApp(t, alice, "/app")
	r.WaitFor(`window.pluginhostShell && document.querySelector("[data-response]")`)
	waitText(r, "answer cat: a cat")
	if n := sourceCalls(t, r, ids[0], "host.storage.list"); n != 0 {
		t.Fatalf("after a reload: %d calls", n)
	}
	if strings.Contains(pageText(q), "answer cat") || q.EvalBool(`document.querySelector("[data-response]") !== null`) {
		t.Fatal("bob's home shows alice's response")
	}
}

// appInvokeStoreShared: an invoke that stores its result in a data
// source puts it in the host cache, and the home card showing the same
// source shows it, without a call of its own.
func appInvokeStoreShared(t *testing.T, h *host) {
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "store-alice", true)
	m, files := appNotes(t, func(f map[string]string) {
		f["manifest.json"] = strings.Replace(f["manifest.json"], `"extensions": [`,
			`"capabilities": [{"id": "notes.count", "kind": "data", "description": "Counts the notes.", "input_schema": {"type": "object"}, "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}, "module": "capabilities/count.wasm"}],
  "extensions": [`, 1)
		// The card shows the count; the screen recounts into the same source.
		f["ui/home.json"] = strings.Replace(f["ui/home.json"], `"data_sources": [`, `"data_sources": [{"id": "stats", "capability": "notes.count", "trigger": "load"},`, 1)
		f["ui/home.json"] = strings.Replace(f["ui/home.json"], `"children": [`, `"children": [{"type": "text", "props": {"text": "Card count: {{data.stats.summary}}"}},`, 1)
		f["ui/main.json"] = strings.Replace(f["ui/main.json"], `"data_sources": [`, `"data_sources": [{"id": "stats", "capability": "notes.count", "trigger": "manual"},`, 1)
		f["ui/main.json"] = strings.Replace(f["ui/main.json"], `{"type": "text", "props": {"text": "Sort: {{state.sort}}"}},`,
			`{"type": "text", "props": {"text": "Sort: {{state.sort}}"}}, {"type": "button", "props": {"label": "Recount", "action": {"type": "invoke", "capability": "notes.count", "store": "stats"}}}, {"type": "text", "props": {"text": "Screen count: {{data.stats.summary}}"}},`, 1)
	})
	files["capabilities/count.wasm"] = string(wasmtest.Module(t, "testdata/modules", "count"))
	_, ids := installApp(t, h, alice, m, files, 1)
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "cat", "v": map[string]any{"text": "a cat"}}, nil)
	warmCapability(t, alice, ids[0], "notes.count")

	p := openApp(t, alice, "/app")
	p.WaitFor(homeReady)
	waitText(p, "Card count: 1 notes")
	// A new note: the count is not a storage source, so nothing re-runs it.
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "dog", "v": map[string]any{"text": "a dog"}}, nil)
	waitText(p, "home dog")
	waitText(p, "Card count: 1 notes")

	p.ClickText("button", "Open notes")
	waitText(p, "dog: a dog")
	p.ClickText("button", "Recount")
	waitText(p, "Screen count: 2 notes")
	p.Eval(`history.back(); true`, nil)
	waitUntil(p, `!document.getElementById("ph-home").hidden`, 10*time.Second)
	waitText(p, "Card count: 2 notes")
	p.Eval(`window.pluginhostPreview.idle()`, nil)
	if n := sourceCalls(t, p, ids[0], "notes.count"); n != 2 {
		t.Fatalf("%d calls of notes.count, want 2: the card's first load and the recount", n)
	}
	if len(eventsWith(t, p, "source_result", map[string]any{"surface": "home", "source": "stats", "cached": "shared", "summary": "2 notes"})) == 0 {
		t.Fatalf("the card did not take the stored result: %v", appEvents(t, p, "source_result"))
	}
}
