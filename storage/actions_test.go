package storage_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"pluginhost/access"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

func capManifest() map[string]any {
	m := fixture.Manifest("com.test.runner", fixture.NS("notes", 4096), fixture.NS("other", 4096))
	m["capabilities"] = []any{
		map[string]any{"id": "notes.sync", "kind": "background"},
		map[string]any{"id": "notes.tool", "kind": "tool"},
		map[string]any{"id": "notes.skill", "kind": "skill"},
		map[string]any{"id": "notes.feed", "kind": "data"},
	}
	return m
}

func result(actions ...map[string]any) models.JSON {
	a := make([]any, len(actions))
	for i, x := range actions {
		a[i] = x
	}
	return js(map[string]any{"summary": "done", "data": map[string]any{"host_actions": a}, "evidence": []any{}})
}

func set(ns, key string, v any, rev ...int) map[string]any {
	m := map[string]any{"type": "plugin_storage_set", "namespace": ns, "key": key, "value": v}
	if len(rev) > 0 {
		m["revision"] = rev[0]
	}
	return m
}

func remove(ns, key string, rev int) map[string]any {
	return map[string]any{"type": "plugin_storage_delete", "namespace": ns, "key": key, "revision": rev}
}

func TestHostActions(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		instl := e.Install(t, alice, capManifest())
		inst := e.Instance(t, alice, instl)
		host := func(capability string) models.Caller {
			return models.Caller{UserID: alice.ID, Generation: instl.Generation, Actor: models.ActorHost, Capability: capability}
		}
		ui := models.Caller{UserID: alice.ID}
		e.Store.Create(ctx, ui, inst.ID, "notes", "existing", js("v1"))
		e.Store.Create(ctx, ui, inst.ID, "notes", "doomed", js("x"))

		res, err := e.Store.ApplyCapabilityResult(ctx, host("notes.sync"), inst.ID, "notes.sync",
			result(set("notes", "new", map[string]any{"a": 1}), set("notes", "existing", "v2", 1), remove("notes", "doomed", 1), set("", "default-ns", true)))
		if err != nil {
			t.Fatal(err)
		}
		var ev []string
		for _, x := range res.Evidence {
			ev = append(ev, fmt.Sprintf("%s/%s@%d", x.Namespace, x.Key, x.Revision))
		}
		if strings.Join(ev, " ") != "notes/new@1 notes/existing@2 notes/doomed@1 notes/default-ns@1" {
			t.Fatalf("evidence = %v", ev)
		}
		for _, capability := range []string{"notes.tool", "notes.skill"} {
			if _, err := e.Store.ApplyCapabilityResult(ctx, host(capability), inst.ID, capability, result(set("other", capability, 1))); err != nil {
				t.Fatalf("%s: %v", capability, err)
			}
		}
		// A result without host actions changes nothing and is fine.
		if res, err := e.Store.ApplyCapabilityResult(ctx, host("notes.sync"), inst.ID, "notes.sync", js(map[string]any{"summary": "x", "data": map[string]any{}})); err != nil || len(res.Evidence) != 0 {
			t.Fatalf("no actions: %v %v", res, err)
		}

		snap, err := e.Store.Snapshot(ctx, ui, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Generation != 1 || len(snap.Namespaces) != 2 || snap.Namespaces[0].ID != "notes" || len(snap.Namespaces[0].Items) != 3 || snap.StorageRevision != 8 {
			raw, _ := json.Marshal(snap)
			t.Fatalf("snapshot = %s", raw)
		}

		// One bad entry among ten: nothing is applied.
		before, _ := e.Store.Snapshot(ctx, ui, inst.ID)
		good := func() []map[string]any {
			var a []map[string]any
			for i := 0; i < 9; i++ {
				a = append(a, set("other", fmt.Sprintf("batch%d", i), i))
			}
			return a
		}
		for _, tc := range []struct {
			name string
			bad  map[string]any
			code models.Code
		}{
			{"stale revision", set("notes", "existing", "v3", 1), models.ErrConflict},
			{"create over an existing key", set("notes", "existing", "v3"), models.ErrConflict},
			{"delete of a missing key", remove("notes", "ghost", 1), models.ErrNotFound},
			{"credential key", set("notes", "apiKey", "x"), models.ErrInvalid},
			{"undeclared namespace", set("nope", "k", 1), models.ErrPermissionDenied},
			{"over the namespace quota", set("notes", "big", strings.Repeat("x", 4100)), models.ErrQuotaExceeded},
			{"unknown action type", map[string]any{"type": "plugin_storage_drop", "key": "k"}, models.ErrInvalid},
			{"unknown field", map[string]any{"type": "plugin_storage_set", "key": "k", "value": 1, "instance_id": "x"}, models.ErrInvalid},
			{"delete without revision", map[string]any{"type": "plugin_storage_delete", "key": "existing"}, models.ErrInvalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				actions := good()
				actions = append(actions[:5], append([]map[string]any{tc.bad}, actions[5:]...)...)
				_, err := e.Store.ApplyCapabilityResult(ctx, host("notes.sync"), inst.ID, "notes.sync", result(actions...))
				if models.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), "host_actions[5]") {
					t.Fatalf("got %v, want %s at host_actions[5]", err, tc.code)
				}
				after, _ := e.Store.Snapshot(ctx, ui, inst.ID)
				a, _ := json.Marshal(after)
				bb, _ := json.Marshal(before)
				if string(a) != string(bb) {
					t.Fatalf("a refused result changed storage:\n%s\n%s", bb, a)
				}
			})
		}
		for _, tc := range []struct {
			name       string
			c          models.Caller
			capability string
			code       models.Code
		}{
			{"undeclared capability", host("notes.other"), "notes.other", models.ErrPermissionDenied},
			{"data capability", host("notes.feed"), "notes.feed", models.ErrPermissionDenied},
			{"stale generation", models.Caller{UserID: alice.ID, Generation: 7, Actor: models.ActorHost}, "notes.sync", models.ErrConflict},
			{"another user", models.Caller{UserID: e.User(t, "mallory").ID, Generation: 1, Actor: models.ActorHost}, "notes.sync", models.ErrPermissionDenied},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.Store.ApplyCapabilityResult(ctx, tc.c, inst.ID, tc.capability, result(set("other", "z", 1)))
				if models.ErrorCode(err) != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
			})
		}
		// Two runners race on one key at the same revision: one wins.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.Store.ApplyCapabilityResult(ctx, host("notes.sync"), inst.ID, "notes.sync", result(set("notes", "existing", fmt.Sprint("runner", i), 2)))
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch models.ErrorCode(err) {
			case "":
				won++
			case models.ErrConflict:
			default:
				t.Fatalf("race: %v", err)
			}
		}
		got, _ := e.Store.Get(ctx, ui, inst.ID, "notes", "existing")
		_, it := item(t, got)
		if won != 1 || it.Revision != 3 {
			t.Fatalf("%d runners won; the key is at revision %d", won, it.Revision)
		}
		// Host actions are in the audit trail, refusals included.
		trail, _ := e.Store.Audit(ctx, alice.ID, storage.AuditQuery{Actor: models.ActorHost, Page: models.PageArgs{First: new(100)}})
		entries := trail.Nodes()
		okN, refused := 0, 0
		for _, en := range entries {
			if en.Outcome == "ok" {
				okN++
			} else {
				refused++
			}
		}
		// 7 changes; refused: 9 bad entries, 3 bad capabilities or generations, 1
		// lost race (the other user's attempt is in that user's own trail).
		if okN != 7 || refused != 13 {
			t.Fatalf("audit: %d changes, %d refusals", okN, refused)
		}
	})
}

func TestSavedEntities(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		inst := e.Instance(t, alice, e.Install(t, alice, fixture.Manifest("com.test.saved", fixture.NS("saved_entities", 65536), fixture.NS("notes", 1000))))
		c := models.Caller{UserID: alice.ID}
		valid := func() map[string]any {
			return map[string]any{"type": "place", "title": "Café", "subtitle": "Paris", "description": "Nice", "url": "https://example.com/cafe",
				"image_url": "https://example.com/cafe.png", "favorite": true, "data": map[string]any{"rating": 4.5}, "source_capability": "places.search"}
		}
		if _, err := e.Store.Create(ctx, c, inst.ID, "saved_entities", "e1", js(valid())); err != nil {
			t.Fatal(err)
		}
		deep := map[string]any{}
		cur := deep
		for i := 0; i < 8; i++ {
			next := map[string]any{}
			cur["d"] = next
			cur = next
		}
		wide := map[string]any{}
		for i := 0; i < 65; i++ {
			wide[fmt.Sprint("k", i)] = i
		}
		for _, tc := range []struct {
			name   string
			change func(m map[string]any)
		}{
			{"type missing", func(m map[string]any) { delete(m, "type") }},
			{"title missing", func(m map[string]any) { delete(m, "title") }},
			{"title empty", func(m map[string]any) { m["title"] = "  " }},
			{"title not a string", func(m map[string]any) { m["title"] = 5 }},
			{"title too long", func(m map[string]any) { m["title"] = strings.Repeat("t", 201) }},
			{"type too long", func(m map[string]any) { m["type"] = strings.Repeat("t", 65) }},
			{"subtitle too long", func(m map[string]any) { m["subtitle"] = strings.Repeat("s", 201) }},
			{"description too long", func(m map[string]any) { m["description"] = strings.Repeat("d", 4001) }},
			{"http url", func(m map[string]any) { m["url"] = "http://example.com" }},
			{"relative url", func(m map[string]any) { m["url"] = "/cafe" }},
			{"javascript url", func(m map[string]any) { m["url"] = "javascript:alert(1)" }},
			{"http image_url", func(m map[string]any) { m["image_url"] = "http://example.com/x.png" }},
			{"url with user info", func(m map[string]any) { m["url"] = "https://user:pw@example.com" }},
			{"favorite not boolean", func(m map[string]any) { m["favorite"] = "yes" }},
			{"data too deep", func(m map[string]any) { m["data"] = deep }},
			{"data too wide", func(m map[string]any) { m["data"] = wide }},
			{"data too large", func(m map[string]any) { m["data"] = strings.Repeat("x", 16*1024) }},
			{"source_capability unsafe", func(m map[string]any) { m["source_capability"] = "../tool" }},
			{"unknown field", func(m map[string]any) { m["price"] = 3 }},
			{"not an object", func(m map[string]any) {}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var v any = valid()
				tc.change(v.(map[string]any))
				if tc.name == "not an object" {
					v = []any{1}
				}
				_, err := e.Store.Create(ctx, c, inst.ID, "saved_entities", "bad", js(v))
				if models.ErrorCode(err) != models.ErrInvalid {
					t.Fatalf("got %v, want %s", err, models.ErrInvalid)
				}
			})
		}
		// The rules hold on update and through invoke too; other namespaces are free.
		_, err := e.Store.Update(ctx, c, inst.ID, "saved_entities", "e1", js(map[string]any{"title": "no type"}), 1)
		if models.ErrorCode(err) != models.ErrInvalid {
			t.Fatalf("update: %v", err)
		}
		_, err = e.Store.Invoke(ctx, c, inst.ID, models.ToolCreate, js(map[string]any{"namespace": "saved_entities", "key": "x", "value": map[string]any{"type": "a"}}))
		if models.ErrorCode(err) != models.ErrInvalid {
			t.Fatalf("invoke: %v", err)
		}
		if _, err := e.Store.Create(ctx, c, inst.ID, "notes", "free", js(map[string]any{"anything": 1})); err != nil {
			t.Fatal(err)
		}
		// Favourites filter and toggle.
		plain := valid()
		delete(plain, "favorite")
		e.Store.Create(ctx, c, inst.ID, "saved_entities", "e2", js(plain))
		favs, _ := e.Store.SavedEntities(ctx, c, inst.ID, true, models.PageArgs{})
		if got := favs.Nodes(); len(got) != 1 || got[0].Key != "e1" {
			t.Fatalf("favourites = %+v", got)
		}
		res, err := e.Store.ToggleFavorite(ctx, c, inst.ID, "e2", 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, it := item(t, res); it.Revision != 2 || !strings.Contains(string(it.Value), `"favorite":true`) {
			t.Fatalf("toggled = %+v", it)
		}
		_, err = e.Store.ToggleFavorite(ctx, c, inst.ID, "e2", 1)
		if models.ErrorCode(err) != models.ErrConflict {
			t.Fatalf("stale toggle: %v", err)
		}
		favs, _ = e.Store.SavedEntities(ctx, c, inst.ID, true, models.PageArgs{})
		if got := favs.Nodes(); len(got) != 2 {
			t.Fatalf("favourites after toggle = %+v", got)
		}
	})
}

// A snapshot holds every declared namespace in the manifest's order, each
// with its items in key order, empty ones as empty lists, and nothing of a
// namespace the manifest does not declare (data kept from an earlier
// version) or of another Instance.
func TestSnapshotHoldsTheDeclaredNamespaces(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		instl := e.Install(t, alice, fixture.Manifest("com.test.snap", fixture.NS("zeta", 4096), fixture.NS("alpha", 4096), fixture.NS("empty", 4096)))
		inst, other := e.Instance(t, alice, instl), e.Instance(t, alice, instl)
		ui := models.Caller{UserID: alice.ID}
		read := func() string {
			t.Helper()
			snap, err := e.Store.Snapshot(ctx, ui, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "rev %d", snap.StorageRevision)
			for _, ns := range snap.Namespaces {
				fmt.Fprintf(&b, " %s[", ns.ID)
				for _, it := range ns.Items {
					fmt.Fprintf(&b, " %s=%s@%d", it.Key, it.Value, it.Revision)
				}
				b.WriteString(" ]")
			}
			return b.String()
		}
		if got, want := read(), "rev 0 zeta[ ] alpha[ ] empty[ ]"; got != want {
			t.Fatalf("an Instance without items: %s, want %s", got, want)
		}
		for _, kv := range [][2]string{{"zeta", "b"}, {"alpha", "z"}, {"zeta", "a"}, {"alpha", "m"}} {
			if _, err := e.Store.Create(ctx, ui, inst.ID, kv[0], kv[1], js(kv[0]+"/"+kv[1])); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Store.Create(ctx, ui, other.ID, "alpha", "elsewhere", js(1)); err != nil {
			t.Fatal(err)
		}
		if err := e.DB.Write.Exec("INSERT INTO storage_items (instance_id, namespace, item_key, installation_id, value, size, revision, created_at, updated_at) VALUES (?, 'retired', 'old', ?, '1', 4, 1, 1, 1)",
			inst.ID, instl.ID).Error; err != nil {
			t.Fatal(err)
		}
		if got, want := read(), `rev 4 zeta[ a="zeta/a"@1 b="zeta/b"@1 ] alpha[ m="alpha/m"@1 z="alpha/z"@1 ] empty[ ]`; got != want {
			t.Fatalf("snapshot:\n got %s\nwant %s", got, want)
		}

		// A capability's request reads the same contents, without the
		// items' times.
		target, err := e.Store.Gate.Open(ctx, ui, inst.ID, access.Use)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := e.Store.SnapshotOf(ctx, ui, target)
		if err != nil {
			t.Fatal(err)
		}
		contents, err := e.Store.ContentsOf(ctx, ui, target)
		if err != nil {
			t.Fatal(err)
		}
		for i, ns := range snap.Namespaces {
			for j, it := range ns.Items {
				if it.CreatedAt == "" || it.UpdatedAt == "" {
					t.Errorf("snapshot item %s/%s has no times: %+v", ns.ID, it.Key, it)
				}
				it.CreatedAt, it.UpdatedAt = "", ""
				snap.Namespaces[i].Items[j] = it
			}
		}
		if !reflect.DeepEqual(contents, snap) {
			a, _ := json.Marshal(contents)
			b, _ := json.Marshal(snap)
			t.Fatalf("contents:\n%s\nsnapshot without times:\n%s", a, b)
		}
	})
}
