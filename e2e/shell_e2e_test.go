package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
)

// The web host's shell as a person meets it, in Chromium against a real
// server on SQLite: a first visit's weight, the views at three widths, the
// device's dark mode and a theme picked in the account menu, popovers that
// close, a lost connection said and cleared, an Instance's settings, the
// keyboard alone, and axe-core's verdict on every kind of page.

// axeSource is axe-core's script (e2e/axe, npm ci), which the test injects
// into the page.
func axeSource(t *testing.T) string {
	t.Helper()
	nodeWith(t, "axe", "axe-core")
	b, err := os.ReadFile(filepath.Join("axe", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// axeViolation is one rule axe-core found broken on a page.
type axeViolation struct {
	ID, Impact, Help string
	Nodes            []struct{ Target []string }
}

// axeCheck runs axe-core on the page (WCAG 2.1 A and AA, and best
// practices) and fails on any serious or critical finding.
func axeCheck(t *testing.T, p *browser.Page, axe, name string) {
	t.Helper()
	if !p.EvalBool(`window.axe !== undefined`) {
		p.Eval(axe+";true", nil)
	}
	var found []axeViolation
	p.Eval(`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}}).then(function (r) { return r.violations.map(function (v) { return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(function (n) { return {target: n.target}; })}; }); })`, &found)
	var bad []string
	for _, v := range found {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, fmt.Sprintf("%s (%s): %s %v", v.ID, v.Impact, v.Help, v.Nodes))
		} else {
			t.Logf("axe on %s, %s: %s (%s)", name, v.ID, v.Help, v.Impact)
		}
	}
	if len(bad) > 0 {
		t.Errorf("axe-core on %s:\n%s", name, strings.Join(bad, "\n"))
	}
}

// tabTo presses Tab until the focus is on an element of selector.
func tabTo(p *browser.Page, selector string) {
	p.T().Helper()
	for i := 0; i < 40; i++ {
		p.Press("Tab", false)
		if p.EvalBool(fmt.Sprintf(`document.activeElement && document.activeElement.matches(%q)`, selector)) {
			return
		}
	}
	p.T().Fatalf("Tab never reached %s; the focus is on %s", selector, p.EvalString(`document.activeElement ? document.activeElement.outerHTML.slice(0, 160) : "nothing"`))
}

// focusShows reports whether the focused element shows it: an outline, on
// it or on its field's row.
func focusShows(p *browser.Page) bool {
	return p.EvalBool(`(function () { var e = document.activeElement; var r = e.closest(".ph-input-row") || e; return getComputedStyle(r).outlineStyle !== "none" && parseFloat(getComputedStyle(r).outlineWidth) >= 2; })()`)
}

func TestAppShell(t *testing.T) {
	axe := axeSource(t)
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	alice := h.user(t, "alice", false)
	root := h.user(t, "root", true)
	m, files := appNotes(t, nil)
	m["permissions"] = []any{"storage", "ai_storage", "network", "notifications"}
	_, ids := installApp(t, h, alice, m, files, 2)
	for _, k := range []string{"milk", "eggs"} {
		alice.Must(t, createNote, map[string]any{"i": ids[0], "k": k, "v": map[string]any{"text": "buy " + k}}, nil)
	}
	screen := "/app/" + ids[0] + "/main"
	settings := "/app/" + ids[0] + "/-/settings"
	views := []struct{ name, path string }{{"home", "/app"}, {"screen", screen}, {"settings", settings}, {"dashboard", "/dashboard"}}

	// A first visit: what Chromium transferred, everything compressed that
	// is text, no request made twice.
	t.Run("first visit", func(t *testing.T) {
		p := openApp(t, alice, screen)
		p.WaitFor(`window.pluginhostPreview && window.pluginhostPreview.live && window.pluginhostPreview.live() === "live" && document.body.innerText.indexOf("milk: buy milk") >= 0 && document.fonts.status === "loaded"`)
		p.Eval(`window.pluginhostPreview.idle()`, nil)
		time.Sleep(500 * time.Millisecond) // the requests that follow the first screen (the other screens' state, the bell)
		var total int64
		var lines []string
		for _, x := range p.Transferred() {
			total += x.Bytes
			lines = append(lines, fmt.Sprintf("%6d %s", x.Bytes, strings.TrimPrefix(x.URL, h.URL)))
		}
		t.Logf("first visit: %d bytes transferred\n%s", total, strings.Join(lines, "\n"))
		if total == 0 || total > 150<<10 {
			t.Fatalf("a first visit transferred %d bytes; at most 150 KiB", total)
		}
		// Every text answer came compressed.
		var loose []string
		p.Eval(`performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).filter(function (e) {
			return e.decodedBodySize > 600 && e.encodedBodySize >= e.decodedBodySize && !/\.woff2$/.test(e.name); }).map(function (e) { return e.name + " " + e.decodedBodySize; })`, &loose)
		if len(loose) > 0 {
			t.Fatalf("sent uncompressed: %v", loose)
		}
		seen := map[string]bool{}
		for _, r := range p.Requests() {
			if !strings.HasPrefix(r, "POST ") && seen[r] {
				t.Fatalf("requested twice: %s in %v", r, p.Requests())
			}
			seen[r] = true
		}
		posts := map[string]bool{}
		for _, post := range p.Posts() {
			if posts[post.Body] {
				t.Fatalf("the same GraphQL request twice: %s", post.Body)
			}
			posts[post.Body] = true
		}
	})

	// Every view from 320 to 1920 px without sideways scroll, pictured at a
	// phone's, a tablet's and a laptop's width; axe-core finds nothing
	// serious on any of them, nor on the sign-in page.
	t.Run("views", func(t *testing.T) {
		signin := browser.Shared(t).Open(t, h.URL+"/app/login", nil)
		axeCheck(t, signin, axe, "the sign-in page")
		for _, v := range views {
			p := openApp(t, alice, v.path)
			p.WaitFor(`window.pluginhostShell && window.pluginhostShell.view() && !document.querySelector("#ph-shell[aria-busy]") && !document.querySelector("[aria-busy=true]")`)
			p.Eval(`window.pluginhostPreview.idle()`, nil)
			for _, w := range []int{320, 390, 768, 1280, 1920} {
				p.Do("Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": 860, "deviceScaleFactor": 1, "mobile": false})
				waitUntil(p, fmt.Sprintf(`window.innerWidth === %d && document.getElementById("ph-shell").getAttribute("data-nav") === %q`, w, map[bool]string{true: "bar", false: map[bool]string{true: "rail", false: "drawer"}[w < 1200]}[w < 600]), 10*time.Second)
				p.Eval(`new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(function () { r(true); }); }); })`, nil)
				if p.EvalBool(`document.documentElement.scrollWidth > window.innerWidth`) {
					t.Fatalf("%s at %d px scrolls sideways", v.name, w)
				}
				if w == 390 || w == 768 || w == 1280 {
					screenshot(t, p, fmt.Sprintf("shell-%s-%d", v.name, w))
				}
			}
			axeCheck(t, p, axe, v.name)
		}
	})

	// The device's dark mode darkens the whole shell and the plugin; a
	// theme picked in the account menu wins, and is remembered.
	t.Run("themes", func(t *testing.T) {
		p := openApp(t, alice, screen)
		p.WaitFor(liveReady)
		bg := func(sel string) string {
			return p.EvalString(`getComputedStyle(document.querySelector(` + fmt.Sprintf("%q", sel) + `)).backgroundColor`)
		}
		dark, light := "rgb(20, 18, 24)", "rgb(254, 247, 255)"
		p.Do("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": "dark"}}})
		waitUntil(p, `document.querySelector("[data-ph-frame]").getAttribute("data-mode") === "dark"`, 10*time.Second)
		if b, top := bg("body"), bg(".ph-topbar"); b != dark || top != dark {
			t.Fatalf("the device's dark mode: the page is %s, its top bar %s", b, top)
		}
		screenshot(t, p, "shell-dark")
		axeCheck(t, p, axe, "the screen in dark mode")
		p.Click(`[data-ph-account]`)
		p.Click(`label[for="ph-theme-light"]`)
		waitUntil(p, `document.documentElement.getAttribute("data-theme") === "light" && document.querySelector("[data-ph-frame]").getAttribute("data-mode") === "light"`, 10*time.Second)
		if b := bg("body"); b != light {
			t.Fatalf("picked light in a dark device: the page is %s", b)
		}
		// Remembered: the server draws the page light from the first paint.
		p.Do("Page.reload", nil)
		p.WaitFor(liveReady)
		if p.EvalString(`document.documentElement.getAttribute("data-theme")`) != "light" || bg("body") != light ||
			p.EvalString(`document.querySelector("[data-ph-frame]").getAttribute("data-mode")`) != "light" {
			t.Fatal("the picked theme was forgotten on reload")
		}
		p.Click(`[data-ph-account]`)
		p.Click(`label[for="ph-theme-system"]`)
		waitUntil(p, `!document.documentElement.hasAttribute("data-theme") && document.querySelector("[data-ph-frame]").getAttribute("data-mode") === "dark"`, 10*time.Second)
		p.Do("Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": "light"}}})
		waitUntil(p, `document.querySelector("[data-ph-frame]").getAttribute("data-mode") === "light"`, 10*time.Second)
	})

	// Popovers close on Escape (the focus goes back) and on a click
	// outside; the switcher names the Instances; the bell names who sent a
	// notification; admins find the dashboard in the account menu.
	t.Run("popovers", func(t *testing.T) {
		p := openApp(t, alice, screen)
		p.WaitFor(liveReady)
		p.Click(`[data-ph-switcher]`)
		p.WaitFor(`!document.querySelector(".ph-switcher-panel").hidden`)
		if got := p.EvalString(`document.querySelector(".ph-switcher-panel").innerText`); !strings.Contains(got, "Instance 1") || !strings.Contains(got, "Instance 2") || strings.Contains(got, ids[0]) {
			t.Fatalf("the switcher lists %q", got)
		}
		p.Press("Escape", false)
		p.WaitFor(`document.querySelector(".ph-switcher-panel").hidden && document.activeElement === document.querySelector("[data-ph-switcher]")`)
		p.Click(`.ph-bell`)
		p.WaitFor(`!document.querySelector(".ph-bell-panel").hidden`)
		waitText(p, "No notifications yet.")
		p.Click(`.ph-screen-head h1`)
		p.WaitFor(`document.querySelector(".ph-bell-panel").hidden`)
		p.Click(`[data-ph-account]`)
		if p.EvalBool(`document.querySelector("[data-ph-dashboard-link]") !== null`) {
			t.Fatal("a user who is not an admin is offered the dashboard")
		}
		p.Press("Escape", false)
		p.WaitFor(`document.querySelector(".ph-account-panel").hidden`)
		// Moving to another Instance with the switcher.
		p.Click(`[data-ph-switcher]`)
		p.Click(`[data-ph-switch="` + ids[1] + `"]`)
		waitUntil(p, `location.pathname === "/app/`+ids[1]+`/main" && document.querySelector(".ph-switcher-instance").textContent === "Instance 2"`, 10*time.Second)
		// The admin's account menu leads to the dashboard, in the shell.
		r := openApp(t, root, "/app")
		r.WaitFor(`window.pluginhostShell && window.pluginhostShell.view()`)
		r.Click(`[data-ph-account]`)
		r.Click(`[data-ph-dashboard-link]`)
		waitUntil(r, `location.pathname === "/dashboard" && window.pluginhostDashboard && window.pluginhostDashboard.state().status === "live"`, 10*time.Second)
		if !r.EvalBool(`document.querySelector("[data-ph-home-link]") && document.querySelector(".ph-bell") && document.querySelector("[data-ph-account]")`) {
			t.Fatal("the dashboard is not in the shell")
		}
	})

	// A lost connection is said at once, and the banner clears when the
	// page is back.
	t.Run("offline", func(t *testing.T) {
		p := openApp(t, alice, "/app")
		p.WaitFor(`window.pluginhostShell && window.pluginhostShell.connected()`)
		p.Do("Network.emulateNetworkConditions", map[string]any{"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
		waitUntil(p, `window.pluginhostShell.offline() === "offline"`, 10*time.Second)
		waitText(p, "You are offline.")
		screenshot(t, p, "shell-offline")
		p.Do("Network.emulateNetworkConditions", map[string]any{"offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
		waitUntil(p, `window.pluginhostShell.offline() === null && window.pluginhostShell.connected()`, 20*time.Second)
	})

	// The keyboard alone: skip to the content, open an Instance, add a
	// note, open it and come back, every focus visible.
	t.Run("keyboard", func(t *testing.T) {
		p := openApp(t, alice, "/app")
		p.WaitFor(`document.querySelectorAll("[data-ph-open]").length === 2`)
		p.Press("Tab", false)
		if !p.EvalBool(`document.activeElement.classList.contains("ph-skip")`) || !focusShows(p) {
			t.Fatal("the first Tab does not reach a visible skip link")
		}
		p.Press("Enter", false)
		p.WaitFor(`document.activeElement === document.getElementById("ph-main")`)
		tabTo(p, `[data-ph-open="`+ids[0]+`"]`)
		if !focusShows(p) {
			t.Fatal("the focused link does not show it")
		}
		p.Press("Enter", false)
		waitUntil(p, `location.pathname === "`+screen+`" && document.querySelector("[data-ph-commit]")`, 10*time.Second)
		tabTo(p, `[data-ph-commit]`)
		if !focusShows(p) {
			t.Fatal("the focused field does not show it")
		}
		p.Do("Input.insertText", map[string]any{"text": "bread"})
		tabTo(p, `button.ph-button-filled`)
		p.Press("Enter", false)
		waitText(p, "bread: bread")
		tabTo(p, `[data-ph-card-hit][aria-label="bread: bread"]`)
		p.Press("Enter", false)
		waitText(p, "Detail of bread: bread")
		tabTo(p, `button.ph-button-filled`)
		p.Press(" ", false)
		waitText(p, "Last opened: bread")
	})

	// The settings: what it may do, its data reset after a confirmation
	// that says what is lost, off and on, deleted.
	t.Run("settings", func(t *testing.T) {
		p := openApp(t, alice, settings)
		p.WaitFor(`document.querySelector("[data-ph-section=data]")`)
		for _, want := range []string{"Network", "Your assistant", "Notifications", "3 items", "notes: 3 items"} {
			waitText(p, want)
		}
		// Muting notifications, with the keyboard.
		p.Eval(`document.getElementById("ph-main").focus(); true`, nil)
		tabTo(p, `#ph-grant-notifications`)
		p.Press(" ", false)
		// The note drawn where the switch is (a screen reader hears it too).
		p.WaitFor(`(document.querySelector('[data-ph-note="notifications"]') || {}).textContent === "Notifications muted."`)
		var inst struct {
			Instance struct {
				NotificationsMuted bool
				Enabled            bool
			}
		}
		alice.Must(t, `query($i:ID!){instance(id:$i){notificationsMuted enabled}}`, map[string]any{"i": ids[0]}, &inst)
		if !inst.Instance.NotificationsMuted {
			t.Fatal("the switch did not mute the Instance")
		}
		// The reset says what is lost; cancelled, nothing is.
		p.Click(`[data-ph-reset]`)
		p.WaitFor(`document.querySelector("dialog[open]")`)
		if got := p.EvalString(`document.querySelector("dialog[open]").innerText`); !strings.Contains(got, "All 3 items") || !strings.Contains(got, "in notes are deleted. This cannot be undone.") {
			t.Fatalf("the confirmation says %q", got)
		}
		screenshot(t, p, "shell-settings-reset")
		p.Press("Escape", false)
		p.WaitFor(`!document.querySelector("dialog[open]")`)
		waitText(p, "notes: 3 items")
		p.Click(`[data-ph-reset]`)
		p.Click(`dialog[open] [data-ph-confirm=yes]`)
		p.WaitFor(`(document.querySelector('[data-ph-note="reset"]') || {}).textContent === "Deleted 3 items." && document.body.innerText.indexOf("It keeps nothing yet.") >= 0`)
		// Off: the home says so; on again.
		p.Click(`#ph-enabled`)
		p.WaitFor(`(document.querySelector('[data-ph-note="enabled"]') || {}).textContent === "App notes · Instance 1 is off."`)
		alice.Must(t, `query($i:ID!){instance(id:$i){notificationsMuted enabled}}`, map[string]any{"i": ids[0]}, &inst)
		if inst.Instance.Enabled {
			t.Fatal("the switch did not disable the Instance")
		}
		p.Click(`#ph-enabled`)
		p.WaitFor(`(document.querySelector('[data-ph-note="enabled"]') || {}).textContent === "App notes · Instance 1 is on."`)
		// Deleted: the home no longer has it.
		q := openApp(t, alice, "/app/"+ids[1]+"/-/settings")
		q.WaitFor(`document.querySelector("[data-ph-delete]")`)
		q.Click(`[data-ph-delete]`)
		q.Click(`dialog[open] [data-ph-confirm=yes]`)
		waitUntil(q, `location.pathname === "/app" && document.querySelectorAll("[data-instance]").length === 1`, 10*time.Second)
		var list struct {
			Installations []struct{ Instances []struct{ ID string } }
		}
		alice.Must(t, `{installations{instances{id}}}`, nil, &list)
		if raw, _ := json.Marshal(list); strings.Contains(string(raw), ids[1]) {
			t.Fatal("the deleted Instance is still there")
		}
	})
}
