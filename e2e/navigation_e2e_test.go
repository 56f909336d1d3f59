package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/testenv"
)

// navScreen is a screen whose navigation persists its selection: by index
// (no selected_state_key) or through a state key.
func navScreen(withKey bool) string {
	nav := map[string]any{"type": "tabs", "persist": true, "label_behavior": "always", "items": []any{
		map[string]any{"id": "first", "label": "First", "icon": "menu_book", "value": "first", "action": map[string]any{"type": "set_state", "values": map[string]any{"mark": "first"}}},
		map[string]any{"id": "second", "label": "Second", "icon": "local_florist", "value": "second", "action": map[string]any{"type": "set_state", "values": map[string]any{"mark": "second"}}},
		map[string]any{"id": "third", "label": "Third", "value": "third", "action": map[string]any{"type": "set_state", "values": map[string]any{"mark": "third"}}},
	}}
	state := map[string]any{"mark": "none"}
	if withKey {
		nav["selected_state_key"] = "tab"
		state["tab"] = "first"
	}
	c := map[string]any{"ui_schema": 2, "description": "tabs", "navigation": nav, "initial_state": state,
		"view": map[string]any{"type": "text", "props": map[string]any{"text": "Mark {{state.mark}}"}}}
	b, _ := json.Marshal(c)
	return string(b)
}

// Navigation persist keeps and restores the selection in both forms the
// spec allows: the selected item's index when there is no
// selected_state_key, and the key's value when there is one.
func TestNavigationPersist(t *testing.T) {
	testenv.Chromium(t)
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	m, files := appNotes(t, func(f map[string]string) {
		f["ui/byindex.json"] = navScreen(false)
		f["ui/bykey.json"] = navScreen(true)
		var m map[string]any
		json.Unmarshal([]byte(f["manifest.json"]), &m)
		m["extensions"] = append(m["extensions"].([]any),
			map[string]any{"id": "byindex", "point": "screen", "config": "ui/byindex.json"},
			map[string]any{"id": "bykey", "point": "screen", "config": "ui/bykey.json"})
		b, _ := json.Marshal(m)
		f["manifest.json"] = string(b)
	})
	_, ids := installApp(t, h, alice, m, files, 1)
	for _, tc := range []struct{ ext, stored string }{
		{"byindex", `{"$navigation":2}`},
		{"bykey", `{"tab":"third"}`},
	} {
		t.Run(tc.ext, func(t *testing.T) {
			p := openApp(t, alice, "/app/"+ids[0]+"/"+tc.ext)
			p.WaitFor(liveReady)
			// Any Material Symbols name is drawn as its symbol: one glyph as
			// wide as the icon, not the name's letters.
			p.WaitFor(`document.fonts.status === "loaded" && document.fonts.check('20px "Material Symbols Outlined"')`)
			for _, name := range []string{"menu_book", "local_florist"} {
				var g struct {
					Text  string
					Width float64
				}
				p.Eval(`(function(){var e=document.querySelector('[data-icon="`+name+`"]'); var r=document.createRange(); r.selectNodeContents(e); return {text: e.textContent, width: r.getBoundingClientRect().width};})()`, &g)
				if g.Text != name || g.Width < 10 || g.Width > 24 {
					t.Fatalf("icon %s is drawn as %q, %v px wide, not as one symbol", name, g.Text, g.Width)
				}
			}
			p.Click(`[data-ph-nav-item="third"]`)
			waitText(p, "Mark third")
			p.WaitFor(`window.pluginhostPreview.events().some(function(e){return e.type==="state_persisted" || e.type==="navigation_select"})`)
			var ui struct {
				UiConfig struct{ PersistedState json.RawMessage } `json:"uiConfig"`
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				alice.Must(t, `query($i:ID!,$e:String!){uiConfig(instanceId:$i,extension:$e){persistedState}}`, map[string]any{"i": ids[0], "e": tc.ext}, &ui)
				if string(ui.UiConfig.PersistedState) == tc.stored {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("persisted %s, want %s; events %s", ui.UiConfig.PersistedState, tc.stored, p.EvalString(`JSON.stringify(window.pluginhostPreview.events().slice(-8))`))
				}
				time.Sleep(100 * time.Millisecond)
			}
			p.Do("Page.reload", nil)
			p.WaitFor(liveReady)
			waitUntil(p, `document.querySelector('[data-ph-nav-item="third"]') && document.querySelector('[data-ph-nav-item="third"]').getAttribute('aria-selected') === "true"`, 15*time.Second)
		})
	}
	// The key is the host's: refused where the config has no such
	// navigation, and out of range.
	const set = `mutation($i:ID!,$e:String!,$v:JSON!){setExtensionState(instanceId:$i,extension:$e,values:$v)}`
	for _, tc := range []struct {
		ext   string
		value any
	}{{"main", 0}, {"byindex", 3}, {"byindex", -1}, {"byindex", "2"}, {"byindex", 1.5}} {
		alice.Fail(t, "PLUGIN_STORAGE_INVALID", set, map[string]any{"i": ids[0], "e": tc.ext, "v": map[string]any{"$navigation": tc.value}})
	}
	alice.Must(t, set, map[string]any{"i": ids[0], "e": "byindex", "v": map[string]any{"$navigation": 0}}, nil)
}

// hideDetail gives the test plugin's detail screen placement hidden.
func hideDetail(t testing.TB, files map[string]string) {
	var c map[string]any
	if err := json.Unmarshal([]byte(files["ui/detail.json"]), &c); err != nil {
		t.Fatal(err)
	}
	c["placement"] = "hidden"
	b, _ := json.Marshal(c)
	files["ui/detail.json"] = string(b)
}

// The app fills the window at every width, with the size class the width
// gives; the list names the plugin and its screens; a hidden extension is
// neither listed nor opened by URL, yet the plugin's own navigate reaches it.
func TestAppFillsWindowAndPlacement(t *testing.T) {
	testenv.Chromium(t)
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	m, files := appNotes(t, func(f map[string]string) { hideDetail(t, f) })
	_, ids := installApp(t, h, alice, m, files, 1)
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "milk", "v": map[string]any{"text": "milk"}}, nil)

	p := openApp(t, alice, "/app/"+ids[0]+"/main")
	p.WaitFor(liveReady)
	for _, tc := range []struct {
		width int
		class string
	}{{390, "compact"}, {700, "medium"}, {1280, "expanded"}} {
		p.Do("Emulation.setDeviceMetricsOverride", map[string]any{"width": tc.width, "height": 800, "deviceScaleFactor": 1, "mobile": false})
		waitUntil(p, `window.pluginhostPreview.context().screen.size_class === "`+tc.class+`"`, 15*time.Second)
		var got struct{ Frame, Window float64 }
		p.Eval(`({frame: document.querySelector("[data-ph-frame]").getBoundingClientRect().width, window: window.innerWidth})`, &got)
		if got.Frame < got.Window-1 || got.Window != float64(tc.width) {
			t.Fatalf("width %d: the frame is %v wide in a window of %v", tc.width, got.Frame, got.Window)
		}
		screenshot(t, p, "app-"+tc.class)
	}
	p.Do("Emulation.clearDeviceMetricsOverride", nil)
	// The page lays itself out again at the window's own width before the
	// click, so that the click lands where the card is.
	waitUntil(p, `window.innerWidth !== 1280 && window.pluginhostPreview.context().screen.width === window.innerWidth`, 15*time.Second)
	p.Eval(`new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(function () { r(true); }); }); })`, nil)

	// The plugin's own navigate reaches the hidden screen.
	p.ClickText(".ph-card", "milk: milk")
	waitText(p, "Detail of milk: milk")

	// The list: the plugin's name and description, its screens by their
	// descriptions, not the hidden one.
	l := openApp(t, alice, "/app")
	l.WaitFor(`document.querySelector('[data-instance="` + ids[0] + `"] a')`)
	text := pageText(l)
	for _, want := range []string{"App notes · Instance 1", "Notes with a form, a home card and a detail screen", "The notes of the Instance, and a form that adds one."} {
		if !strings.Contains(text, want) {
			t.Fatalf("the list does not show %q:\n%s", want, text)
		}
	}
	if l.EvalBool(`!!document.querySelector('[data-extension="detail"]')`) {
		t.Fatal("the list links the hidden extension")
	}

	// Opened by URL, the hidden extension says where it opens from.
	d := openApp(t, alice, "/app/"+ids[0]+"/detail")
	waitText(d, "This screen opens from within the plugin")
	// /app/{instance} leads to a screen that is not hidden.
	resp := get(t, h.URL+"/app/"+ids[0], map[string]string{"Authorization": "Bearer " + alice.Token})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/app/"+ids[0]+"/main" {
		t.Fatalf("/app/{instance}: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestAppPlacement: above a screen, the plugin's bar offers its screens as
// their placement says: auto and navigation in the bar, menu under More,
// hidden nowhere; each opens in the page.
func TestAppPlacement(t *testing.T) {
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	screen := func(description, placement string) string {
		return `{"ui_schema": 2, "description": "` + description + `", "placement": "` + placement + `", "view": {"type": "text", "props": {"text": "This is ` + description + `"}}}`
	}
	m, files := appNotes(t, func(f map[string]string) {
		hideDetail(t, f)
		f["manifest.json"] = strings.Replace(f["manifest.json"], `{"id": "detail", "point": "screen", "config": "ui/detail.json"}`,
			`{"id": "detail", "point": "screen", "config": "ui/detail.json"}, {"id": "about", "point": "screen", "config": "ui/about.json"}, {"id": "settings", "point": "screen", "config": "ui/settings.json"}`, 1)
	})
	files["ui/about.json"] = screen("About", "navigation")
	files["ui/settings.json"] = screen("Settings", "menu")
	_, ids := installApp(t, h, alice, m, files, 1)

	p := openApp(t, alice, "/app/"+ids[0]+"/main")
	p.WaitFor(liveReady)
	p.WaitFor(`!document.querySelector(".ph-plugin-bar").hidden`)
	var bar struct{ Bar, More []string }
	p.Eval(`({bar: Array.from(document.querySelectorAll(".ph-plugin-bar > a")).map(function (a) { return a.getAttribute("data-extension") + ":" + a.getAttribute("data-placement"); }),
		more: Array.from(document.querySelectorAll(".ph-plugin-more a")).map(function (a) { return a.getAttribute("data-extension"); })})`, &bar)
	if strings.Join(bar.Bar, " ") != "main:auto home:auto about:navigation" || strings.Join(bar.More, " ") != "settings" {
		t.Fatalf("bar %v, More %v", bar.Bar, bar.More)
	}
	if p.EvalString(`document.querySelector('.ph-plugin-bar [aria-current]').getAttribute("data-extension")`) != "main" {
		t.Fatal("the bar does not mark the open screen")
	}
	p.Eval(`window.sameDocument = true`, nil)
	p.Click(`.ph-plugin-more summary`)
	p.Click(`.ph-plugin-more a[data-extension="settings"]`)
	waitText(p, "This is Settings")
	if p.EvalString(`location.pathname`) != "/app/"+ids[0]+"/settings" || !p.EvalBool(`window.sameDocument === true`) {
		t.Fatal("the menu's screen did not open in the page")
	}
	p.Click(`.ph-plugin-bar a[data-extension="about"]`)
	waitText(p, "This is About")
	screenshot(t, p, "app-placement")
}
