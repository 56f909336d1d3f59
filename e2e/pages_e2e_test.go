package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
)

// TestPagesOffline opens every page the server serves in Chromium with no
// outside network, signed in with a sign-in link as the README says. Each
// page must load and work from the binary alone: the live dashboard keeps
// up with changes, the app lists the Instances, the playground runs a
// query.
func TestPagesOffline(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	admin := h.user(t, "root", true)
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.pages", ns("notes", 1000), ns("tags", 500)), 2)
	alice.Must(t, createQ, map[string]any{"i": ids[0], "n": "notes", "k": "first", "v": "hello"}, nil)
	br := browser.Shared(t)
	// open loads a page recording every request it makes, from the first.
	open := func(t *testing.T, url string) *browser.Page {
		p := br.Open(t, "about:blank", nil)
		p.RecordRequests()
		p.Do("Page.navigate", map[string]any{"url": url})
		p.WaitFor(`location.href !== "about:blank" && document.readyState === "complete"`)
		return p
	}

	// A person signs in with a sign-in link that leads to the page.
	withToken := func(_, token, path string) string {
		return h.URL + "/app/login?token=" + url.QueryEscape(token) + "&next=" + url.QueryEscape(path)
	}
	artifacts := os.Getenv("PLUGINHOST_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(os.TempDir(), "pluginhost-e2e-artifacts")
	}
	os.MkdirAll(artifacts, 0o755)

	// The browser really is offline: a page asking for the CDN that gqlgen's
	// playground uses by default is refused, and the attempt is seen.
	t.Run("outside network is blocked", func(t *testing.T) {
		p := br.Open(t, "about:blank", nil)
		got := p.EvalString(`fetch("https://cdn.jsdelivr.net/npm/graphiql@4.1.2/graphiql.min.js").then(() => "loaded", () => "refused")`)
		if got != "refused" {
			t.Fatalf("a request to the CDN was %s", got)
		}
		if !contains(br.Outside(), "cdn.jsdelivr.net:443") {
			t.Fatalf("the refusing proxy did not see the request; it saw %q", br.Outside())
		}
	})

	// The live dashboard: the user's Instances with usage against quota,
	// changes as they are committed, an Instance's live updates that end.
	t.Run("dashboard", func(t *testing.T) {
		// Without a token the page is refused.
		if status, _ := (&Client{URL: h.URL}).REST(t, "GET", "/dashboard", nil); status != 401 {
			t.Fatalf("dashboard without a token: %d", status)
		}
		p := open(t, withToken("alice", alice.Token, "/dashboard"))
		p.WaitFor(`window.pluginhostDashboard && window.pluginhostDashboard.state().status === "live"`)
		row := func(id string) string { return fmt.Sprintf(`document.querySelector('tr[data-instance="%s"]')`, id) }
		p.WaitFor(row(ids[0]) + ` && ` + row(ids[1]))
		// first (5) + "hello" (7) = 12 bytes in notes.
		p.WaitFor(row(ids[0]) + `.querySelector('[data-namespace="notes"]').innerText.indexOf("1 keys, 0.0 KiB of 1.0 KiB") >= 0`)
		p.WaitFor(row(ids[0]) + `.querySelector(".rev").innerText === "1"`)
		// Changes from any path appear as they are committed, over the
		// websocket.
		for i := 0; i < 3; i++ {
			alice.Must(t, createQ, map[string]any{"i": ids[0], "n": "tags", "k": fmt.Sprint("t", i), "v": i}, nil)
		}
		p.WaitFor(row(ids[0]) + `.querySelector(".rev").innerText === "4"`)
		p.WaitFor(row(ids[0]) + `.querySelector('[data-namespace="tags"]').innerText.indexOf("3 keys") >= 0`)
		p.WaitFor(`document.querySelector("#log").innerText.indexOf("create tags/t2") >= 0`)
		if status, _ := alice.REST(t, "DELETE", "/v1/plugin-instances/"+ids[0]+"/storage", nil); status != 200 {
			t.Fatal("reset failed")
		}
		p.WaitFor(row(ids[0]) + `.querySelector(".rev").innerText === "5"`)
		p.WaitFor(row(ids[0]) + `.querySelector('[data-namespace="notes"]').innerText.indexOf("0 keys") >= 0`)
		p.WaitFor(`document.querySelector("#log").innerText.indexOf("reset") >= 0`)
		// Disabling an Instance ends its live updates, visibly.
		alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){id}}`, map[string]any{"i": ids[1]}, nil)
		p.WaitFor(row(ids[1]) + `.innerText.indexOf("live updates ended") >= 0`)
		p.WaitFor(row(ids[1]) + `.innerText.indexOf("disabled") >= 0`)
		p.Screenshot(filepath.Join(artifacts, "dashboard-offline.png"))
		onlyFrom(t, h.URL, p.Requests())
	})

	// The web host's list of apps, on a build that has it: it calls
	// GraphQL with the page's own credentials.
	t.Run("app", func(t *testing.T) {
		if status, _ := alice.REST(t, "GET", "/app", nil); status == 404 {
			t.Skip("this build serves no /app")
		}
		p := open(t, withToken("alice", alice.Token, "/app"))
		p.WaitFor(fmt.Sprintf(`document.querySelector('[data-instance="%s"]')`, ids[0]))
		p.Screenshot(filepath.Join(artifacts, "app-offline.png"))
		onlyFrom(t, h.URL, p.Requests())
	})

	t.Run("playground", func(t *testing.T) {
		p := open(t, withToken("root", admin.Token, "/playground"))
		p.WaitFor(`document.querySelector(".graphiql-container .graphiql-query-editor .CodeMirror")`)
		// Replace the editor's text as a person would: select all, type.
		p.Click(".graphiql-query-editor .CodeMirror-lines")
		p.Do("Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65, "modifiers": 2, "commands": []string{"selectAll"}})
		p.Do("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65, "modifiers": 2})
		p.Do("Input.insertText", map[string]any{"text": "{ viewer { name admin } }"})
		p.Click(".graphiql-execute-button")
		p.WaitFor(`(document.querySelector(".result-window") || {}).innerText && document.querySelector(".result-window").innerText.indexOf('"name": "root"') >= 0`)
		result := p.EvalString(`document.querySelector(".result-window").innerText`)
		if !strings.Contains(result, `"admin": true`) || strings.Contains(result, `"errors"`) {
			t.Fatalf("the playground's query answered:\n%s", result)
		}
		p.Screenshot(filepath.Join(artifacts, "playground-offline.png"))
		onlyFrom(t, h.URL, p.Requests())
	})
}

// onlyFrom checks that a page asked the server alone for what it needed
// (inline data: URLs aside): nothing from a CDN or any other host.
func onlyFrom(t *testing.T, server string, requests []string) {
	t.Helper()
	host := strings.TrimPrefix(server, "http://")
	for _, r := range requests {
		// "METHOD URL", or "WS URL" for a websocket.
		f := strings.Fields(r)
		u, err := url.Parse(f[len(f)-1])
		if err != nil {
			t.Errorf("the page requested an unparsable URL %q", r)
			continue
		}
		if u.Scheme == "data" {
			continue
		}
		if u.Host != host || (u.Scheme != "http" && u.Scheme != "ws") {
			t.Errorf("the page requested %s, which is not on the server %s", r, server)
		}
	}
	if len(requests) == 0 {
		t.Error("no request of the page was seen")
	}
	t.Logf("the page requested %d URLs, all from the server", len(requests))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
