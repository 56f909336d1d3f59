package extensions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// stateFiles is the weather plugin whose main screen declares city, unit,
// favorites and apiToken (a credential name the validator only warns about),
// and whose detail screen declares expanded.
func stateFiles(t *testing.T, version, policy string) map[string][]byte {
	return weather(t, version, func(m map[string]any, f map[string][]byte) {
		m["data_policy"] = policy
		setState(t, f, "ui/main.json", map[string]any{"city": "Bern", "unit": "celsius", "favorites": []any{}, "apiToken": ""})
	})
}

// nested returns a value of the depth (a scalar is 0): [[...[1]...]].
func nested(depth int) any {
	var v any = 1
	for i := 0; i < depth; i++ {
		v = []any{v}
	}
	return v
}

func list(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = i % 10
	}
	return out
}

func js(v any) models.JSON { b, _ := json.Marshal(v); return b }

// TestPersistedStateRules breaks every rule of setExtensionState once, with
// its code, next to the value at the limit that passes.
func TestPersistedStateRules(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.User(t, "alice"), h.User(t, "bob")
		instl := h.install(t, alice, stateFiles(t, "1.0.0", "retain"))
		inst := h.Instance(t, alice, instl)
		disabled := h.Instance(t, alice, instl)
		_, err := h.Life.SetInstanceEnabled(ctx, alice, disabled.ID, false)
		noErr(t, err)
		// {"city":"<n characters>"} is 11+n bytes as compact JSON.
		atLimit := strings.Repeat("a", models.MaxPersistedStateBytes-11)
		rows := []struct {
			name     string
			user     *models.User
			instance string
			ext      string
			values   any
			want     models.Code
		}{
			{"declared keys", alice, inst.ID, "main", map[string]any{"city": "Zürich", "unit": "kelvin"}, ""},
			{"undeclared key", alice, inst.ID, "main", map[string]any{"country": "CH"}, models.ErrInvalid},
			{"key declared by another extension", alice, inst.ID, "main", map[string]any{"expanded": true}, models.ErrInvalid},
			{"depth 8", alice, inst.ID, "main", map[string]any{"favorites": nested(8)}, ""},
			{"too deep: 9", alice, inst.ID, "main", map[string]any{"favorites": nested(9)}, models.ErrInvalid},
			{"64 entries", alice, inst.ID, "main", map[string]any{"favorites": list(64)}, ""},
			{"too many entries: 65", alice, inst.ID, "main", map[string]any{"favorites": list(65)}, models.ErrInvalid},
			{"too many members: 65", alice, inst.ID, "main", map[string]any{"favorites": map[string]any{"x": func() map[string]any {
				m := map[string]any{}
				for i := 0; i < 65; i++ {
					m[strings.Repeat("k", i+1)] = i
				}
				return m
			}()}}, models.ErrInvalid},
			{"credential key name", alice, inst.ID, "main", map[string]any{"apiToken": "abc"}, models.ErrInvalid},
			{"not an object", alice, inst.ID, "main", []any{"city"}, models.ErrInvalid},
			{"disabled Instance", alice, disabled.ID, "main", map[string]any{"city": "Bern"}, models.ErrPermissionDenied},
			{"another user's Instance", bob, inst.ID, "main", map[string]any{"city": "Bern"}, models.ErrPermissionDenied},
			{"unknown Instance", alice, "ins_nope", "main", map[string]any{"city": "Bern"}, models.ErrPermissionDenied},
			{"unknown extension", alice, inst.ID, "settings", map[string]any{"city": "Bern"}, models.ErrBadUserInput},
			{"not an extension id", alice, inst.ID, strings.Repeat("x", 65), map[string]any{"city": "Bern"}, models.ErrBadUserInput},
		}
		for _, r := range rows {
			_, err := h.ext.SetState(ctx, models.Caller{UserID: r.user.ID}, r.instance, r.ext, js(r.values))
			if models.ErrorCode(err) != r.want {
				t.Errorf("%s: got %v, want %q", r.name, err, r.want)
			}
		}

		// 16 KiB as compact JSON is the limit of the whole state.
		fresh := h.Instance(t, alice, instl)
		got, err := h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, fresh.ID, "main", js(map[string]any{"city": atLimit}))
		noErr(t, err)
		if len(got) != models.MaxPersistedStateBytes {
			t.Fatalf("state at the limit has %d bytes", len(got))
		}
		_, err = h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, fresh.ID, "main", js(map[string]any{"city": atLimit + "a"}))
		wantCode(t, err, models.ErrQuotaExceeded)
		// ... counted after the merge: a small value next to a full one is over.
		_, err = h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, fresh.ID, "main", js(map[string]any{"unit": "k"}))
		wantCode(t, err, models.ErrQuotaExceeded)

		// Refused writes changed nothing; the merge kept every accepted key.
		ui, err := h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main")
		noErr(t, err)
		var state map[string]any
		json.Unmarshal(ui.PersistedState, &state)
		if state["city"] != "Zürich" || state["unit"] != "kelvin" || len(state["favorites"].([]any)) != 64 || len(state) != 3 {
			t.Fatalf("persisted state = %s", ui.PersistedState)
		}
	})
}

// mainV2 is a main screen that declares city and favorites, no longer unit;
// detailV2 a detail screen that declares open, no longer expanded.
const (
	mainV2   = `{"ui_schema": 2, "initial_state": {"city": "Bern", "favorites": []}, "view": {"type": "text", "props": {"text": "{{state.city}}"}}}`
	detailV2 = `{"ui_schema": 2, "initial_state": {"open": false}, "view": {"type": "switch", "props": {"label": "Open", "state_key": "open"}}}`
)

// TestPersistedStateLifecycle: the storage reset leaves the state; an update
// drops keys (and extensions) the new package no longer declares; retain
// keeps it over an uninstall, purge deletes it.
func TestPersistedStateLifecycle(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.User(t, "alice")
		instl := h.install(t, alice, stateFiles(t, "1.0.0", "retain"))
		inst := h.Instance(t, alice, instl)
		_, err := h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main", js(map[string]any{"city": "Chur", "unit": "kelvin"}))
		noErr(t, err)
		_, err = h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, inst.ID, "detail", js(map[string]any{"expanded": true}))
		noErr(t, err)
		state := func(ext string) string {
			t.Helper()
			ui, err := h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, ext)
			noErr(t, err)
			return string(ui.PersistedState)
		}

		_, err = h.Store.Reset(ctx, models.Caller{UserID: alice.ID}, inst.ID)
		noErr(t, err)
		if s := state("main"); s != `{"city":"Chur","unit":"kelvin"}` {
			t.Fatalf("after the storage reset: %s", s)
		}

		// 1.1.0 no longer declares unit, nor the detail extension's state.
		v2 := weather(t, "1.1.0", func(m map[string]any, f map[string][]byte) {
			m["data_policy"] = "retain"
			f["ui/main.json"] = []byte(mainV2)
			f["ui/detail.json"] = []byte(detailV2)
		})
		_, err = h.Life.Update(ctx, alice, instl.ID, h.pkg(t, v2))
		noErr(t, err)
		if s := state("main"); s != `{"city":"Chur"}` {
			t.Fatalf("after the update: main %s", s)
		}
		if s := state("detail"); s != `{}` {
			t.Fatalf("after the update: detail %s", s)
		}

		// Retain: the state comes back with the reinstall.
		noErr(t, h.Life.Uninstall(ctx, alice, instl.ID))
		if n := testenv.Count(t, h.DB.Read, "extension_states", "instance_id = ?", inst.ID); n != 2 {
			t.Fatalf("retain kept %d state rows, want 2", n)
		}
		v3 := weather(t, "1.2.0", func(m map[string]any, f map[string][]byte) {
			m["data_policy"] = "purge"
			f["ui/main.json"] = []byte(mainV2)
			f["ui/detail.json"] = []byte(detailV2)
		})
		_, err = h.Life.Install(ctx, alice, h.pkg(t, v3))
		noErr(t, err)
		if s := state("main"); s != `{"city":"Chur"}` {
			t.Fatalf("after the retained reinstall: %s", s)
		}

		// Purge (the policy of 1.2.0): the state and the configs are deleted.
		noErr(t, h.Life.Uninstall(ctx, alice, instl.ID))
		for _, table := range []string{"extension_states", "extension_configs"} {
			if n := testenv.Count(t, h.DB.Read, table, "installation_id = ?", instl.ID); n != 0 {
				t.Fatalf("purge left %d rows in %s", n, table)
			}
		}
	})
}

// TestPersistedStateConcurrentMerges: writers of different keys of the same
// extension's state never lose each other's values.
func TestPersistedStateConcurrentMerges(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.User(t, "alice")
		const n = 12
		state := map[string]any{"city": "Bern", "unit": "c", "favorites": []any{}}
		for i := 0; i < n; i++ {
			state[fmt.Sprintf("k%d", i)] = 0
		}
		instl := h.install(t, alice, weather(t, "1.0.0", func(m map[string]any, f map[string][]byte) {
			setState(t, f, "ui/main.json", state)
		}))
		inst := h.Instance(t, alice, instl)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main", js(map[string]any{fmt.Sprintf("k%d", i): i + 1}))
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			noErr(t, err)
		}
		ui, err := h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main")
		noErr(t, err)
		var got map[string]int
		json.Unmarshal(ui.PersistedState, &got)
		for i := 0; i < n; i++ {
			if got[fmt.Sprintf("k%d", i)] != i+1 {
				t.Fatalf("a concurrent merge was lost: %s", ui.PersistedState)
			}
		}
	})
}

// TestPersistedStateDuringUpdates: merges running while the package is
// updated all succeed (no deadlock between the update's pruning and a merge),
// and the state ends with the keys the last package declares.
func TestPersistedStateDuringUpdates(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.User(t, "alice")
		version := func(v string, withUnit bool) map[string][]byte {
			return weather(t, v, func(m map[string]any, f map[string][]byte) {
				if !withUnit {
					f["ui/main.json"] = []byte(mainV2)
					f["ui/detail.json"] = []byte(detailV2)
				}
			})
		}
		instl := h.install(t, alice, version("1.0.0", true))
		insts := []string{h.Instance(t, alice, instl).ID, h.Instance(t, alice, instl).ID}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 8; i++ {
					_, err := h.ext.SetState(ctx, models.Caller{UserID: alice.ID}, insts[(w+i)%2], "main", js(map[string]any{"city": fmt.Sprintf("c%d-%d", w, i)}))
					errs <- err
				}
			}()
		}
		for i, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
			_, err := h.Life.Update(ctx, alice, instl.ID, h.pkg(t, version(v, i != 2)))
			noErr(t, err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			noErr(t, err)
		}
		for _, id := range insts {
			ui, err := h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, id, "main")
			noErr(t, err)
			var s map[string]any
			json.Unmarshal(ui.PersistedState, &s)
			if _, ok := s["city"]; !ok || len(s) != 1 {
				t.Fatalf("state of %s after the updates = %s", id, ui.PersistedState)
			}
		}
	})
}
