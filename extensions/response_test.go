package extensions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"pluginhost/extensions"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// weatherResult is a weather.lookup result for an Instance that passes the
// forecast extension's a2ui.schema.
func weatherResult(instanceID string) map[string]any {
	return map[string]any{
		"summary":  "9° in Bern",
		"data":     map[string]any{"city": "Bern", "temperature": 9.5, "sky": "rain"},
		"evidence": []any{map[string]any{"type": "plugin_storage", "instance_id": instanceID, "namespace": "places", "key": "bern", "revision": 1}},
	}
}

func reasons(r *models.ResponseRender) string {
	var s []string
	for _, p := range r.Reasons {
		s = append(s, p.Code+" "+p.Path)
	}
	return strings.Join(s, ", ")
}

// TestResponseUI: the catalog, one passing render, each check failing alone,
// a duplicate, a stale handle after an update, another user's handle.
func TestResponseUI(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.User(t, "alice"), h.User(t, "bob")
		instl := h.install(t, alice, weather(t, "1.0.0", nil))
		inst, off := h.Instance(t, alice, instl), h.Instance(t, alice, instl)
		h.install(t, bob, weather(t, "1.0.0", nil)) // bob's own plugin: never in alice's catalog

		cands, err := h.ext.Candidates(ctx, alice)
		noErr(t, err)
		if len(cands) != 2 || cands[0].InstanceID != inst.ID || cands[0].Extension != "forecast" || cands[0].Version != 1 ||
			!strings.HasPrefix(cands[0].Description, "Use when the answer states") {
			t.Fatalf("candidates = %+v", cands)
		}
		handle, offHandle := cands[0].Handle, cands[1].Handle
		_, err = h.Life.SetInstanceEnabled(ctx, alice, off.ID, false)
		noErr(t, err)
		if cands, _ = h.ext.Candidates(ctx, alice); len(cands) != 1 {
			t.Fatalf("a disabled Instance is still a candidate: %+v", cands)
		}

		sel := func(u *models.User, handle, msg, capability string, result any) (*models.ResponseRender, error) {
			return h.ext.Select(ctx, u, extensions.Selection{Handle: handle, MessageID: msg, Capability: capability,
				Arguments: js(map[string]any{"city": "Bern"}), Result: js(result)})
		}

		// One passing render: the config, and the result as the result of
		// the config's data source of the capability.
		r, err := sel(alice, handle, "m-ok", "weather.lookup", weatherResult(inst.ID))
		noErr(t, err)
		if !r.Rendered || len(r.Reasons) != 0 || *r.InstanceID != inst.ID || *r.Extension != "forecast" || *r.Generation != 1 {
			t.Fatalf("render = %+v (%s)", r, reasons(r))
		}
		files := weather(t, "1.0.0", nil)
		if string(r.Config) != compact(t, files["ui/forecast.json"]) {
			t.Fatalf("config = %s", r.Config)
		}
		var data map[string]map[string]any
		json.Unmarshal(r.Data, &data)
		if len(data) != 1 || data["answer"]["summary"] != "9° in Bern" {
			t.Fatalf("data = %s", r.Data)
		}

		bad := func(edit func(m map[string]any)) map[string]any {
			m := weatherResult(inst.ID)
			edit(m)
			return m
		}
		rows := []struct {
			name       string
			user       *models.User
			handle     string
			msg        string
			capability string
			result     any
			want       string // code and path of each reason
		}{
			{"validity: a required member missing", alice, handle, "m-1", "weather.lookup",
				bad(func(m map[string]any) { delete(m["data"].(map[string]any), "temperature") }), "validity /data/temperature"},
			{"validity: a wrong type and a value out of range", alice, handle, "m-2", "weather.lookup",
				bad(func(m map[string]any) { m["summary"] = 3; m["data"].(map[string]any)["temperature"] = 101 }), "validity /data/temperature, validity /summary"},
			{"validity: not an object", alice, handle, "m-3", "weather.lookup", []any{1}, "validity "},
			{"relevance: no data source of the capability", alice, handle, "m-4", "weather.alerts", weatherResult(inst.ID), "relevance "},
			{"relevance: evidence of another Instance", alice, handle, "m-5", "weather.lookup", weatherResult(off.ID), "relevance /evidence/0/instance_id"},
			{"duplicate: the message has its container", alice, handle, "m-ok", "weather.lookup", weatherResult(inst.ID), "duplicate "},
			{"permission: disabled Instance", alice, offHandle, "m-6", "weather.lookup", weatherResult(off.ID), "permission "},
			{"permission: another user's handle", bob, handle, "m-7", "weather.lookup", weatherResult(inst.ID), "permission "},
			{"permission: not a handle of this host", alice, "aih1_forged", "m-8", "weather.lookup", weatherResult(inst.ID), "permission "},
		}
		for _, row := range rows {
			r, err := sel(row.user, row.handle, row.msg, row.capability, row.result)
			if err != nil {
				t.Errorf("%s: %v", row.name, err)
				continue
			}
			if r.Rendered || reasons(r) != row.want || r.Config != nil || r.Data != nil {
				t.Errorf("%s: rendered %v, reasons %q, want %q", row.name, r.Rendered, reasons(r), row.want)
			}
			for _, p := range r.Reasons {
				if p.Message == "" {
					t.Errorf("%s: reason %s without a message", row.name, p.Code)
				}
			}
		}
		// A refused selection leaves the message free: it renders afterwards.
		if r, _ := sel(alice, handle, "m-1", "weather.lookup", weatherResult(inst.ID)); !r.Rendered {
			t.Fatalf("after a refused selection: %s", reasons(r))
		}

		// Malformed arguments of the call are errors, not checks.
		for _, msg := range []string{"", strings.Repeat("m", models.MaxMessageIDLength+1), "a\nb"} {
			_, err := sel(alice, handle, msg, "weather.lookup", weatherResult(inst.ID))
			wantCode(t, err, models.ErrBadUserInput)
		}
		_, err = sel(alice, handle, strings.Repeat("m", models.MaxMessageIDLength), "weather.lookup", weatherResult(inst.ID))
		noErr(t, err)

		// After an update the handle is stale; a new candidate renders.
		_, err = h.Life.Update(ctx, alice, instl.ID, h.pkg(t, weather(t, "1.1.0", nil)))
		noErr(t, err)
		_, err = sel(alice, handle, "m-9", "weather.lookup", weatherResult(inst.ID))
		wantCode(t, err, models.ErrConflict)
		cands, _ = h.ext.Candidates(ctx, alice)
		if r, _ := sel(alice, cands[0].Handle, "m-9", "weather.lookup", weatherResult(inst.ID)); !r.Rendered || *r.Generation != 2 {
			t.Fatalf("with the new handle: %+v %s", r, reasons(r))
		}

		// Uninstall with purge (the example's policy) deletes the containers.
		if n := testenv.Count(t, h.DB.Read, "response_containers", "instance_id = ?", inst.ID); n != 4 {
			t.Fatalf("%d response containers, want 4", n)
		}
		noErr(t, h.Life.Uninstall(ctx, alice, instl.ID))
		if n := testenv.Count(t, h.DB.Read, "response_containers", "instance_id = ?", inst.ID); n != 0 {
			t.Fatalf("purge left %d response containers", n)
		}
	})
}

// TestA2UIVersion: a2ui.version as a number or a string version.
func TestA2UIVersion(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		if b.Name != "sqlite" {
			t.Skip("no database rule involved")
		}
		h := newHost(t, b)
		alice := h.User(t, "alice")
		for i, v := range []any{"2.1", 3} {
			files := weather(t, "1.0.0", func(m map[string]any, f map[string][]byte) {
				m["id"] = fmt.Sprintf("com.example.weather%d", i)
				f["ui/forecast.json"] = []byte(strings.Replace(string(f["ui/forecast.json"]), `"version": 1`, `"version": `+string(js(v)), 1))
			})
			h.Instance(t, alice, h.install(t, alice, files))
		}
		cands, err := h.ext.Candidates(ctx, alice)
		noErr(t, err)
		if len(cands) != 2 || cands[0].Version != 2 || cands[1].Version != 3 {
			t.Fatalf("candidates = %+v", cands)
		}
	})
}

// TestRenderedResponses: a rendered response is listed and streamed to its
// user only; a user's newest KeepRendered keep their result, the next one
// drops the oldest's; a disabled Instance's and an older generation's are
// not shown again; first is checked at its limits.
func TestRenderedResponses(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.User(t, "alice"), h.User(t, "bob")
		instl := h.install(t, alice, weather(t, "1.0.0", nil))
		inst := h.Instance(t, alice, instl)
		h.Instance(t, bob, h.install(t, bob, weather(t, "1.0.0", nil)))
		cands, err := h.ext.Candidates(ctx, alice)
		noErr(t, err)
		sel := func(msg string) {
			t.Helper()
			r, err := h.ext.Select(ctx, alice, extensions.Selection{Handle: cands[0].Handle, MessageID: msg, Capability: "weather.lookup",
				Arguments: js(map[string]any{"city": "Bern"}), Result: js(weatherResult(inst.ID))})
			noErr(t, err)
			if !r.Rendered {
				t.Fatalf("%s: %s", msg, reasons(r))
			}
		}

		sub, cancel := context.WithCancel(ctx)
		defer cancel()
		aliceFeed, bobFeed := h.ext.SubscribeRendered(sub, alice.ID), h.ext.SubscribeRendered(sub, bob.ID)
		sel("m-0")
		select {
		case got := <-aliceFeed:
			var data map[string]map[string]any
			json.Unmarshal(got.Data, &data)
			if got.MessageID != "m-0" || got.InstanceID != inst.ID || got.Extension != "forecast" || got.Capability != "weather.lookup" ||
				got.Generation != 1 || data["answer"]["summary"] != "9° in Bern" {
				t.Fatalf("streamed %+v %s", got, got.Data)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the rendered response was not streamed")
		}
		select {
		case got := <-bobFeed:
			t.Fatalf("bob heard alice's response: %+v", got)
		case <-time.After(100 * time.Millisecond):
		}
		rendered := func(user *models.User, first int) ([]*models.RenderedResponse, error) {
			p, err := h.ext.Rendered(ctx, user, models.PageArgs{First: new(first)})
			return p.Nodes(), err
		}
		if list, err := rendered(bob, 10); err != nil || len(list) != 0 {
			t.Fatalf("bob lists %+v, %v", list, err)
		}

		// At the limit every one keeps its result; one more drops the oldest's.
		for i := 1; i < extensions.KeepRendered; i++ {
			sel(fmt.Sprintf("m-%d", i))
		}
		list, err := rendered(alice, extensions.KeepRendered)
		noErr(t, err)
		if len(list) != extensions.KeepRendered || list[0].MessageID != fmt.Sprintf("m-%d", extensions.KeepRendered-1) || list[len(list)-1].MessageID != "m-0" {
			t.Fatalf("%d listed, newest %s", len(list), list[0].MessageID)
		}
		sel("m-last")
		list, err = rendered(alice, extensions.KeepRendered)
		noErr(t, err)
		if len(list) != extensions.KeepRendered || list[0].MessageID != "m-last" || list[len(list)-1].MessageID != "m-1" {
			t.Fatalf("after one more: %d listed, newest %s, oldest %s", len(list), list[0].MessageID, list[len(list)-1].MessageID)
		}
		if n := testenv.Count(t, h.DB.Read, "response_containers", "user_id = ? AND data IS NULL", alice.ID); n != 1 {
			t.Fatalf("%d containers without their result, want 1", n)
		}
		for _, first := range []int{0, models.MaxPageSize + 1} {
			_, err := rendered(alice, first)
			wantCode(t, err, models.ErrBadUserInput)
		}

		// Disabled: not shown; enabled again: shown; updated: the old
		// generation's are not shown.
		_, err = h.Life.SetInstanceEnabled(ctx, alice, inst.ID, false)
		noErr(t, err)
		if list, _ := rendered(alice, 10); len(list) != 0 {
			t.Fatalf("a disabled Instance's responses: %d", len(list))
		}
		_, err = h.Life.SetInstanceEnabled(ctx, alice, inst.ID, true)
		noErr(t, err)
		_, err = h.Life.Update(ctx, alice, instl.ID, h.pkg(t, weather(t, "1.1.0", nil)))
		noErr(t, err)
		if list, _ := rendered(alice, 10); len(list) != 0 {
			t.Fatalf("responses of an older generation: %d", len(list))
		}
	})
}
