package e2e

import (
	"encoding/json"
	"strconv"
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

// TestAppShellNavigation: the shell's navigation offers the Instance's
// screens by their placement (auto and navigation in it, menu under More,
// hidden nowhere) with its home and settings, as a drawer, a rail or a bar
// by the window's width, with no sideways scroll from 320 to 1920 px; each
// opens in the page; the plugin's own navigate reaches a hidden screen,
// which its address alone does not open; a plugin's navigation persists
// its selection (both forms the spec allows), its icons drawn by the font.
func TestAppShellNavigation(t *testing.T) {
	testenv.Chromium(t)
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	alice := h.user(t, "alice", true)
	screen := func(description, placement string) string {
		return `{"ui_schema": 2, "description": "` + description + `", "placement": "` + placement + `", "app_bar": {"title": "` + description + `"}, "view": {"type": "text", "props": {"text": "This is ` + description + `"}}}`
	}
	m, files := appNotes(t, func(f map[string]string) {
		hideDetail(t, f)
		f["ui/byindex.json"] = navScreen(false)
		f["ui/bykey.json"] = navScreen(true)
		f["ui/about.json"] = screen("About", "navigation")
		f["ui/prefs.json"] = screen("Preferences", "menu")
		var m map[string]any
		json.Unmarshal([]byte(f["manifest.json"]), &m)
		m["extensions"] = append(m["extensions"].([]any),
			map[string]any{"id": "about", "point": "screen", "config": "ui/about.json"},
			map[string]any{"id": "prefs", "point": "screen", "config": "ui/prefs.json"},
			map[string]any{"id": "byindex", "point": "screen", "config": "ui/byindex.json"},
			map[string]any{"id": "bykey", "point": "screen", "config": "ui/bykey.json"})
		b, _ := json.Marshal(m)
		f["manifest.json"] = string(b)
	})
	_, ids := installApp(t, h, alice, m, files, 1)
	alice.Must(t, createNote, map[string]any{"i": ids[0], "k": "milk", "v": map[string]any{"text": "milk"}}, nil)

	p := openApp(t, alice, "/app/"+ids[0]+"/main")
	p.WaitFor(liveReady)
	p.Eval(`window.sameDocument = true`, nil)
	type dest struct{ Key, Placement, Current string }
	dests := func() (shown, more []string) {
		var d struct{ Shown, More []dest }
		p.Eval(`({shown: Array.from(document.querySelectorAll("#ph-nav .ph-sn-list > li > a")).map(function (a) { return {key: a.getAttribute("data-ph-dest"), placement: a.getAttribute("data-placement") || "", current: a.getAttribute("aria-current") || ""}; }),
			more: Array.from(document.querySelectorAll("#ph-nav .ph-more-panel a")).map(function (a) { return {key: a.getAttribute("data-ph-dest"), placement: a.getAttribute("data-placement") || "", current: a.getAttribute("aria-current") || ""}; })})`, &d)
		for _, x := range d.Shown {
			shown = append(shown, x.Key+":"+x.Placement+":"+x.Current)
		}
		for _, x := range d.More {
			more = append(more, x.Key+":"+x.Placement)
		}
		return
	}
	for _, tc := range []struct {
		width      int
		class, nav string
		shown      string
		more       string
	}{
		{1280, "expanded", "drawer", "home:: screen:main:auto:page screen:about:navigation: screen:byindex:auto: screen:bykey:auto: settings::", "screen:prefs:menu"},
		{768, "medium", "rail", "home:: screen:main:auto:page screen:about:navigation: screen:byindex:auto: screen:bykey:auto: settings::", "screen:prefs:menu"},
		{390, "compact", "bar", "home:: screen:main:auto:page screen:about:navigation: settings::", "screen:byindex:auto screen:bykey:auto screen:prefs:menu"},
	} {
		p.Do("Emulation.setDeviceMetricsOverride", map[string]any{"width": tc.width, "height": 800, "deviceScaleFactor": 1, "mobile": false})
		waitUntil(p, `window.pluginhostPreview.context().screen.size_class === "`+tc.class+`" && document.getElementById("ph-shell").getAttribute("data-nav") === "`+tc.nav+`"`, 15*time.Second)
		shown, more := dests()
		if strings.Join(shown, " ") != tc.shown || strings.Join(more, " ") != tc.more {
			t.Fatalf("%d px: navigation %v, More %v", tc.width, shown, more)
		}
	}
	// From 320 to 1920 px nothing scrolls sideways, and the content keeps
	// a readable width.
	for _, w := range []int{320, 390, 768, 1280, 1920} {
		p.Do("Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": 800, "deviceScaleFactor": 1, "mobile": false})
		waitUntil(p, `window.innerWidth === `+strconv.Itoa(w)+` && window.pluginhostPreview.context().screen.width === `+strconv.Itoa(w), 15*time.Second)
		var got struct{ Scroll, Window, Frame float64 }
		p.Eval(`({scroll: document.documentElement.scrollWidth, window: window.innerWidth, frame: document.querySelector("[data-ph-frame]").getBoundingClientRect().width})`, &got)
		if got.Scroll > got.Window || got.Frame > 1040 || got.Frame < float64(min(w, 1040))-2*24-280-1 {
			t.Fatalf("%d px: the page is %v wide, the screen %v", w, got.Scroll, got.Frame)
		}
	}
	p.Do("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false})
	waitUntil(p, `document.getElementById("ph-shell").getAttribute("data-nav") === "drawer"`, 15*time.Second)

	// Each destination opens in the page, and the address follows.
	p.Click(`#ph-nav [data-ph-dest="screen:about"]`)
	waitText(p, "This is About")
	p.Click(`#ph-nav [data-ph-nav-more]`)
	p.Click(`#ph-nav [data-ph-dest="screen:prefs"]`)
	waitText(p, "This is Preferences")
	if p.EvalString(`location.pathname`) != "/app/"+ids[0]+"/prefs" || !p.EvalBool(`window.sameDocument === true`) ||
		p.EvalString(`document.querySelector("[data-ph-nav-more]").getAttribute("aria-current")`) != "page" {
		t.Fatal("the menu's screen did not open in the page, marked where it is")
	}
	screenshot(t, p, "app-placement")
	p.Click(`#ph-nav [data-ph-dest="screen:main"]`)
	waitText(p, "milk: milk")

	// The plugin's own navigate reaches the hidden screen.
	p.ClickText(".ph-card", "milk: milk")
	waitText(p, "Detail of milk: milk")
	// Opened by its address, the hidden screen says where it opens from.
	d := openApp(t, alice, "/app/"+ids[0]+"/detail")
	waitText(d, "This screen opens from within the plugin")
	// /app/{instance} leads to a screen that is not hidden.
	resp := get(t, h.URL+"/app/"+ids[0], map[string]string{"Authorization": "Bearer " + alice.Token})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/app/"+ids[0]+"/main" {
		t.Fatalf("/app/{instance}: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	// A plugin's navigation persists its selection: by index without a
	// selected_state_key, by the key's value with one.
	for _, tc := range []struct{ ext, stored string }{
		{"byindex", `{"$navigation":2}`},
		{"bykey", `{"tab":"third"}`},
	} {
		p.Click(`#ph-nav [data-ph-dest="screen:` + tc.ext + `"]`)
		waitUntil(p, `location.pathname === "/app/`+ids[0]+`/`+tc.ext+`" && document.querySelector('[data-ph-nav-item="third"]')`, 15*time.Second)
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
