package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"pluginhost/access"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/storage"
)

var ctx = context.Background()

// world is two users with Installations and Instances of test plugins.
type world struct {
	env        *fixture.Env
	alice, bob *models.User
	a          models.Caller // alice
	notes      *models.Instance
	notes2     *models.Instance // a second Instance of the same Installation
	withDef    *models.Instance // declares other, default
	legacy     *models.Instance // schema 1 compatibility namespace
	noStorage  *models.Instance
	bobNotes   *models.Instance
	instlNotes *models.Installation
}

func newWorld(t *testing.T, b testenv.Backend) *world {
	e := fixture.New(t, b)
	w := &world{env: e, alice: e.User(t, "alice"), bob: e.User(t, "bob")}
	w.a = models.Caller{UserID: w.alice.ID}
	notesManifest := fixture.Manifest("com.test.notes", fixture.NS("notes", 1024), fixture.NS("tiny", 20), fixture.NS("big", 131072),
		fixture.NS("list", 65536), fixture.NS("blobs", 262144))
	w.instlNotes = e.Install(t, w.alice, notesManifest)
	w.notes = e.Instance(t, w.alice, w.instlNotes)
	w.notes2 = e.Instance(t, w.alice, w.instlNotes)
	w.withDef = e.Instance(t, w.alice, e.Install(t, w.alice, fixture.Manifest("com.test.def", fixture.NS("other", 100), fixture.NS("default", 100))))
	w.legacy = e.Instance(t, w.alice, e.Install(t, w.alice, map[string]any{
		"id": "com.test.legacy", "name": "Legacy", "version": "1.0.0", "schema_version": 1, "permissions": []any{"storage"},
	}))
	w.noStorage = e.Instance(t, w.alice, e.Install(t, w.alice, map[string]any{
		"id": "com.test.nostorage", "name": "No storage", "version": "1.0.0", "schema_version": 2, "permissions": []any{},
	}))
	w.bobNotes = e.Instance(t, w.bob, e.Install(t, w.bob, notesManifest))
	return w
}

// replica returns another storage service on the world's database, as
// another replica of a fleet runs one: it shares nothing in memory with
// w.env.Store. It is closed when the test ends.
func (w *world) replica(t *testing.T) *storage.Service {
	s := &storage.Service{DB: w.env.DB, Bus: w.env.Store.Bus, Gate: &access.Gate{DB: w.env.DB}, Log: slog.New(slog.DiscardHandler)}
	t.Cleanup(s.Close)
	return s
}

func wantCode(t *testing.T, err error, code models.Code) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if models.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	if models.ErrorMessage(err) == "" {
		t.Fatal("error without a message")
	}
}

func item(t *testing.T, res *models.ExtensionResult) (string, models.ItemJSON) {
	t.Helper()
	var d models.ItemData
	if err := json.Unmarshal(res.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.Namespace, d.Item
}

func list(t *testing.T, res *models.ExtensionResult) models.ListData {
	t.Helper()
	var d models.ListData
	if err := json.Unmarshal(res.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func js(v any) models.JSON {
	b, _ := json.Marshal(v)
	return b
}

func TestStorageRules(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		s := w.env.Store
		run := func(name string, f func(t *testing.T)) { t.Run(name, f) }

		run("namespace omitted uses default when declared, else the first", func(t *testing.T) {
			res, err := s.Create(ctx, w.a, w.notes.ID, "", "k", js(1))
			wantCode(t, err, "")
			if ns, _ := item(t, res); ns != "notes" {
				t.Fatalf("namespace = %s, want notes (first declared)", ns)
			}
			res, err = s.Create(ctx, w.a, w.withDef.ID, "", "k", js(1))
			wantCode(t, err, "")
			if ns, _ := item(t, res); ns != "default" {
				t.Fatalf("namespace = %s, want default", ns)
			}
		})
		run("schema 1 compatibility namespace default of 128 KiB", func(t *testing.T) {
			res, err := s.Create(ctx, w.a, w.legacy.ID, "", "k", js(strings.Repeat("x", 32000)))
			wantCode(t, err, "")
			if ns, _ := item(t, res); ns != "default" {
				t.Fatalf("namespace = %s", ns)
			}
			for i := 0; i < 3; i++ {
				_, err = s.Create(ctx, w.a, w.legacy.ID, "default", fmt.Sprint("k", i), js(strings.Repeat("x", 32000)))
				wantCode(t, err, "")
			}
			_, err = s.Create(ctx, w.a, w.legacy.ID, "default", "k9", js(strings.Repeat("x", 32000)))
			wantCode(t, err, models.ErrQuotaExceeded)
		})
		run("undeclared namespace", func(t *testing.T) {
			_, err := s.Create(ctx, w.a, w.notes.ID, "secretstuff", "k", js(1))
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.List(ctx, w.a, w.notes.ID, storage.ListQuery{Namespace: "default"})
			wantCode(t, err, models.ErrPermissionDenied)
		})
		run("plugin without the storage permission", func(t *testing.T) {
			_, err := s.List(ctx, w.a, w.noStorage.ID, storage.ListQuery{})
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Create(ctx, w.a, w.noStorage.ID, "", "k", js(1))
			wantCode(t, err, models.ErrPermissionDenied)
		})
		run("another user's Instance and an unknown one look the same", func(t *testing.T) {
			_, err1 := s.Get(ctx, w.a, w.bobNotes.ID, "notes", "k")
			wantCode(t, err1, models.ErrPermissionDenied)
			_, err2 := s.Get(ctx, w.a, "inst_doesnotexist", "notes", "k")
			wantCode(t, err2, models.ErrPermissionDenied)
			if strings.Replace(err1.Error(), w.bobNotes.ID, "X", 1) != strings.Replace(err2.Error(), "inst_doesnotexist", "X", 1) {
				t.Fatalf("messages differ: %q vs %q", err1, err2)
			}
			_, err := s.Create(ctx, w.a, w.bobNotes.ID, "notes", "k", js(1))
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Reset(ctx, w.a, w.bobNotes.ID)
			wantCode(t, err, models.ErrPermissionDenied)
		})
		run("isolation: the same key in two Instances and two users", func(t *testing.T) {
			for i, c := range []struct {
				caller models.Caller
				inst   string
			}{{w.a, w.notes.ID}, {w.a, w.notes2.ID}, {models.Caller{UserID: w.bob.ID}, w.bobNotes.ID}} {
				_, err := s.Create(ctx, c.caller, c.inst, "notes", "shared", js(i))
				wantCode(t, err, "")
			}
			for i, c := range []struct {
				caller models.Caller
				inst   string
			}{{w.a, w.notes.ID}, {w.a, w.notes2.ID}, {models.Caller{UserID: w.bob.ID}, w.bobNotes.ID}} {
				res, err := s.Get(ctx, c.caller, c.inst, "notes", "shared")
				wantCode(t, err, "")
				if _, it := item(t, res); string(it.Value) != fmt.Sprint(i) {
					t.Fatalf("instance %d sees %s", i, it.Value)
				}
			}
		})
		run("keys", func(t *testing.T) {
			k80 := strings.Repeat("ключ", 20)
			for _, tc := range []struct {
				key  string
				code models.Code
			}{
				{k80, ""},
				{k80 + "x", models.ErrInvalid},
				{"", models.ErrInvalid},
				{"line\nbreak", models.ErrInvalid},
				{"nul\x00", models.ErrInvalid},
				{"tokenizer", ""},
				{"secretary", ""},
				{"password", models.ErrInvalid},
				{"db_password", models.ErrInvalid},
				{"apiKey", models.ErrInvalid},
				{"API_KEY", models.ErrInvalid},
				{"refresh-token", models.ErrInvalid},
				{"accessToken", models.ErrInvalid},
				{"client_secret", models.ErrInvalid},
				{"credentials", models.ErrInvalid},
				{"private_key", models.ErrInvalid},
			} {
				_, err := s.Create(ctx, w.a, w.notes2.ID, "big", tc.key, js(true))
				if tc.code == "" && err != nil || tc.code != "" && models.ErrorCode(err) != tc.code {
					t.Errorf("create key %q: %v, want %q", tc.key, err, tc.code)
				}
			}
			// Every write path refuses credential keys.
			_, err := s.Update(ctx, w.a, w.notes2.ID, "big", "api_key", js(1), 1)
			wantCode(t, err, models.ErrInvalid)
			_, err = s.Delete(ctx, w.a, w.notes2.ID, "big", "api_key", 1)
			wantCode(t, err, models.ErrInvalid)
			_, err = s.Invoke(ctx, w.a, w.notes2.ID, models.ToolCreate, js(map[string]any{"namespace": "big", "key": "Secret", "value": 1}))
			wantCode(t, err, models.ErrInvalid)
		})
		run("values", func(t *testing.T) {
			// 32 KiB of compact JSON: a string of n characters has n+2 bytes.
			atLimit := js(strings.Repeat("a", models.MaxValueBytes-2))
			overLimit := js(strings.Repeat("a", models.MaxValueBytes-1))
			for i, tc := range []struct {
				value models.JSON
				code  models.Code
			}{
				{js("text"), ""}, {js(3.25), ""}, {js(-7), ""}, {js(true), ""}, {models.JSON("null"), ""},
				{js(map[string]any{"a": []any{1, "b", nil}}), ""}, {js([]any{}), ""},
				{atLimit, ""},
				{overLimit, models.ErrQuotaExceeded},
				{models.JSON("1e400"), models.ErrInvalid},
				{models.JSON(`{"n":-1E999}`), models.ErrInvalid},
				{models.JSON(`{"a":`), models.ErrInvalid},
				{models.JSON(`NaN`), models.ErrInvalid},
				{models.JSON("\"\xff\""), models.ErrInvalid},
				{nil, models.ErrInvalid},
			} {
				_, err := s.Create(ctx, w.a, w.notes2.ID, "big", fmt.Sprint("v", i), tc.value)
				if tc.code == "" && err != nil || tc.code != "" && models.ErrorCode(err) != tc.code {
					t.Errorf("value %d (%.40s): %v, want %q", i, tc.value, err, tc.code)
				}
			}
			// A value is kept as compact JSON.
			res, err := s.Create(ctx, w.a, w.notes2.ID, "big", "spaced", models.JSON(`{ "a" : [ 1 , 2 ] }`))
			wantCode(t, err, "")
			if _, it := item(t, res); string(it.Value) != `{"a":[1,2]}` {
				t.Fatalf("value = %s", it.Value)
			}
		})
		run("revisions, create never overwrites, not found", func(t *testing.T) {
			inst := w.notes.ID
			res, err := s.Create(ctx, w.a, inst, "notes", "rev", js("v1"))
			wantCode(t, err, "")
			_, it := item(t, res)
			if it.Revision != 1 {
				t.Fatalf("revision after create = %d", it.Revision)
			}
			for _, ts := range []string{it.CreatedAt, it.UpdatedAt} {
				if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "+00:00") {
					t.Fatalf("timestamp %q is not ISO 8601 with offset", ts)
				}
			}
			_, err = s.Create(ctx, w.a, inst, "notes", "rev", js("again"))
			wantCode(t, err, models.ErrConflict)
			res, err = s.Update(ctx, w.a, inst, "notes", "rev", js("v2"), 1)
			wantCode(t, err, "")
			if _, it := item(t, res); it.Revision != 2 || string(it.Value) != `"v2"` {
				t.Fatalf("after update: %+v", it)
			}
			_, err = s.Update(ctx, w.a, inst, "notes", "rev", js("lost"), 1)
			wantCode(t, err, models.ErrConflict)
			_, err = s.Update(ctx, w.a, inst, "notes", "rev", js("x"), 0)
			wantCode(t, err, models.ErrInvalid)
			_, err = s.Update(ctx, w.a, inst, "notes", "missing", js("x"), 1)
			wantCode(t, err, models.ErrNotFound)
			_, err = s.Delete(ctx, w.a, inst, "notes", "rev", 1)
			wantCode(t, err, models.ErrConflict)
			_, err = s.Delete(ctx, w.a, inst, "notes", "missing", 1)
			wantCode(t, err, models.ErrNotFound)
			res, err = s.Delete(ctx, w.a, inst, "notes", "rev", 2)
			wantCode(t, err, "")
			if len(res.Evidence) != 1 || res.Evidence[0].Revision != 2 {
				t.Fatalf("delete evidence = %+v", res.Evidence)
			}
			_, err = s.Get(ctx, w.a, inst, "notes", "rev")
			wantCode(t, err, models.ErrNotFound)
			// A re-created key starts again at revision 1.
			res, err = s.Create(ctx, w.a, inst, "notes", "rev", js("v1"))
			wantCode(t, err, "")
			if _, it := item(t, res); it.Revision != 1 {
				t.Fatalf("re-created revision = %d", it.Revision)
			}
		})
		run("namespace max_bytes at the limit and one past", func(t *testing.T) {
			// tiny holds 20 bytes: key "k" (1) + a string of 17 chars (19) = 20.
			_, err := s.Create(ctx, w.a, w.notes.ID, "tiny", "k", js(strings.Repeat("x", 17)))
			wantCode(t, err, "")
			_, err = s.Create(ctx, w.a, w.notes.ID, "tiny", "j", js(1))
			wantCode(t, err, models.ErrQuotaExceeded)
			if !strings.Contains(err.Error(), "max_bytes of 20") || !strings.Contains(err.Error(), "now 20 bytes") {
				t.Fatalf("message lacks the limit and usage: %v", err)
			}
			_, err = s.Update(ctx, w.a, w.notes.ID, "tiny", "k", js(strings.Repeat("x", 18)), 1)
			wantCode(t, err, models.ErrQuotaExceeded)
			_, err = s.Update(ctx, w.a, w.notes.ID, "tiny", "k", js("short"), 1)
			wantCode(t, err, "")
			_, err = s.Create(ctx, w.a, w.notes.ID, "tiny", "j", js(1))
			wantCode(t, err, "")
		})
		run("256 keys per namespace, 257th refused", func(t *testing.T) {
			for i := 0; i < models.MaxKeysPerNamespace; i++ {
				_, err := s.Create(ctx, w.a, w.notes.ID, "big", fmt.Sprintf("key%03d", i), js(i))
				wantCode(t, err, "")
			}
			_, err := s.Create(ctx, w.a, w.notes.ID, "big", "key256", js(1))
			wantCode(t, err, models.ErrQuotaExceeded)
			if !strings.Contains(err.Error(), "256") {
				t.Fatalf("message lacks the limit: %v", err)
			}
		})
		run("list limits, order, cursor, query", func(t *testing.T) {
			inst := w.notes2.ID
			keys := []string{"b", "a", "Z", "é", "ab", "日本"}
			for i, k := range keys {
				_, err := s.Create(ctx, w.a, inst, "list", k, js(map[string]any{"n": i, "text": "Hello " + k}))
				wantCode(t, err, "")
			}
			one, hundred, zero, over := 1, 100, 0, 101
			_, err := s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Limit: &zero})
			wantCode(t, err, models.ErrInvalid)
			_, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Limit: &over})
			wantCode(t, err, models.ErrInvalid)
			res, err := s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Limit: &hundred})
			wantCode(t, err, "")
			d := list(t, res)
			var got []string
			for _, it := range d.Items {
				got = append(got, it.Key)
			}
			if strings.Join(got, ",") != "Z,a,ab,b,é,日本" || d.HasMore || len(res.Evidence) != 6 {
				t.Fatalf("list = %v has_more=%v", got, d.HasMore)
			}
			// Page by one with the cursor: every key once, in order.
			var paged []string
			cursor := ""
			for i := 0; i < 10; i++ {
				res, err := s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Limit: &one, Cursor: cursor})
				wantCode(t, err, "")
				d := list(t, res)
				for _, it := range d.Items {
					paged = append(paged, it.Key)
				}
				if !d.HasMore {
					break
				}
				cursor = d.NextCursor
			}
			if strings.Join(paged, ",") != strings.Join(got, ",") {
				t.Fatalf("paged = %v", paged)
			}
			_, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Cursor: "!!"})
			wantCode(t, err, models.ErrInvalid)
			// query: case-insensitive in keys and values.
			res, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Query: "HELLO A"})
			wantCode(t, err, "")
			if d := list(t, res); len(d.Items) != 2 || d.Items[0].Key != "a" || d.Items[1].Key != "ab" {
				t.Fatalf("query = %+v", d.Items)
			}
			res, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Query: "本"})
			wantCode(t, err, "")
			if d := list(t, res); len(d.Items) != 1 {
				t.Fatalf("query 本 = %+v", d.Items)
			}
			res, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Query: "nothing matches"})
			wantCode(t, err, "")
			if d := list(t, res); len(d.Items) != 0 || d.HasMore {
				t.Fatalf("no match = %+v", d)
			}
			_, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "list", Query: strings.Repeat("q", storage.MaxQueryLength+1)})
			wantCode(t, err, models.ErrInvalid)
		})
		run("list is cut by the response size cap", func(t *testing.T) {
			inst := w.notes.ID
			n := 8 // 8 values of ~31 KiB: 248 KiB in the namespace, over the 128 KiB cap
			for i := 0; i < n; i++ {
				_, err := s.Create(ctx, w.a, inst, "blobs", fmt.Sprintf("blob%d", i), js(strings.Repeat("b", 31*1024)))
				wantCode(t, err, "")
			}
			var seen int
			cursor := ""
			pages := 0
			for {
				res, err := s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "blobs", Query: "bbb", Cursor: cursor})
				wantCode(t, err, "")
				d := list(t, res)
				pages++
				size := 0
				for _, it := range d.Items {
					size += len(it.Key) + len(it.Value)
				}
				if size > storage.MaxListResponseBytes {
					t.Fatalf("page of %d bytes over the cap", size)
				}
				seen += len(d.Items)
				if !d.HasMore {
					break
				}
				cursor = d.NextCursor
			}
			if seen != n || pages < 2 {
				t.Fatalf("saw %d items in %d pages", seen, pages)
			}
		})
		run("Invoke arguments", func(t *testing.T) {
			for _, tc := range []struct {
				tool string
				args string
				code models.Code
			}{
				{models.ToolCreate, `{"namespace":"notes","key":"inv","value":{"x":1}}`, ""},
				{models.ToolGet, `{"key":"inv"}`, ""},
				{models.ToolList, `{"limit":100}`, ""},
				{models.ToolList, `null`, ""},
				{models.ToolUpdate, `{"key":"inv","value":2,"revision":1}`, ""},
				{models.ToolDelete, `{"key":"inv","revision":2}`, ""},
				{"host.storage.drop", `{}`, models.ErrInvalid},
				{models.ToolGet, `{"key":"inv","instance_id":"inst_x"}`, models.ErrInvalid},
				{models.ToolGet, `{"key":"inv","extra":1}`, models.ErrInvalid},
				{models.ToolGet, `{"key":5}`, models.ErrInvalid},
				{models.ToolGet, `{}`, models.ErrInvalid},
				{models.ToolGet, `[1]`, models.ErrInvalid},
				{models.ToolCreate, `{"key":"nv"}`, models.ErrInvalid},
				{models.ToolUpdate, `{"key":"inv","value":1}`, models.ErrInvalid},
				{models.ToolUpdate, `{"key":"inv","value":1,"revision":1.5}`, models.ErrInvalid},
				{models.ToolList, `{"limit":"10"}`, models.ErrInvalid},
				{models.ToolList, `{"limit":0}`, models.ErrInvalid},
				{models.ToolList, `{"limit":101}`, models.ErrInvalid},
				{models.ToolList, `{"namespace":""}`, models.ErrInvalid},
			} {
				_, err := s.Invoke(ctx, w.a, w.notes2.ID, tc.tool, models.JSON(tc.args))
				if tc.code == "" && err != nil || tc.code != "" && models.ErrorCode(err) != tc.code {
					t.Errorf("%s %s: %v, want %q", tc.tool, tc.args, err, tc.code)
				}
			}
		})
		run("a disabled Instance neither reads nor writes; re-enabled it has its data", func(t *testing.T) {
			inst := w.withDef.ID
			_, err := s.Create(ctx, w.a, inst, "other", "kept", js("yes"))
			wantCode(t, err, "")
			if _, err := w.env.Life.SetInstanceEnabled(ctx, w.alice, inst, false); err != nil {
				t.Fatal(err)
			}
			_, err = s.List(ctx, w.a, inst, storage.ListQuery{Namespace: "other"})
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Get(ctx, w.a, inst, "other", "kept")
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Create(ctx, w.a, inst, "other", "new", js(1))
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Update(ctx, w.a, inst, "other", "kept", js(1), 1)
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Delete(ctx, w.a, inst, "other", "kept", 1)
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Reset(ctx, w.a, inst)
			wantCode(t, err, models.ErrPermissionDenied)
			_, err = s.Invoke(ctx, w.a, inst, models.ToolList, nil)
			wantCode(t, err, models.ErrPermissionDenied)
			if _, err := w.env.Life.SetInstanceEnabled(ctx, w.alice, inst, true); err != nil {
				t.Fatal(err)
			}
			res, err := s.Get(ctx, w.a, inst, "other", "kept")
			wantCode(t, err, "")
			if _, it := item(t, res); string(it.Value) != `"yes"` || it.Revision != 1 {
				t.Fatalf("after re-enable: %+v", it)
			}
		})
	})
}

func TestInstallationQuota(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		c := models.Caller{UserID: alice.ID}
		instl := e.Install(t, alice, fixture.Manifest("com.test.full", fixture.NS("a", 262144), fixture.NS("b", 262144)))
		one, two := e.Instance(t, alice, instl), e.Instance(t, alice, instl)
		// Fill instance one to exactly 512 KiB: 16 items of 32 KiB per namespace.
		for _, ns := range []string{"a", "b"} {
			for i := 0; i < 16; i++ {
				key := fmt.Sprintf("k%02d", i)                                    // 3 bytes
				value := js(strings.Repeat("x", models.MaxNamespaceBytes/16-3-2)) // with quotes: 16381 bytes
				if _, err := e.Store.Create(ctx, c, one.ID, ns, key, value); err != nil {
					t.Fatalf("fill %s/%s: %v", ns, key, err)
				}
			}
		}
		instlNow, _ := e.Life.Installation(ctx, alice, instl.ID)
		if instlNow.UsedBytes != models.MaxInstallationBytes {
			t.Fatalf("used bytes = %d, want %d", instlNow.UsedBytes, models.MaxInstallationBytes)
		}
		// Another Instance of the same Installation may not add a single byte.
		_, err := e.Store.Create(ctx, c, two.ID, "a", "k", js(1))
		wantCode(t, err, models.ErrQuotaExceeded)
		if !strings.Contains(err.Error(), "524288") {
			t.Fatalf("message lacks the limit: %v", err)
		}
		// Freeing a key makes room again; the reset gives the bytes back.
		if _, err := e.Store.Reset(ctx, c, one.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.Create(ctx, c, two.ID, "a", "k", js(1)); err != nil {
			t.Fatalf("after reset: %v", err)
		}
		instlNow, _ = e.Life.Installation(ctx, alice, instl.ID)
		if instlNow.UsedBytes != 2 {
			t.Fatalf("used bytes after reset = %d, want 2", instlNow.UsedBytes)
		}
	})
}

func TestResetAndChangeEvents(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		s := w.env.Store
		sub := w.env.Changes(t, w.alice, w.notes.ID)
		other := w.env.Changes(t, w.alice, w.notes2.ID)
		bobC := models.Caller{UserID: w.bob.ID}
		mustOK := func(_ *models.ExtensionResult, err error) { t.Helper(); wantCode(t, err, "") }
		mustOK(s.Create(ctx, w.a, w.notes.ID, "notes", "a", js(1)))
		mustOK(s.Update(ctx, w.a, w.notes.ID, "notes", "a", js(2), 1))
		mustOK(s.Create(ctx, w.a, w.notes.ID, "big", "b", js(3)))
		mustOK(s.Create(ctx, w.a, w.notes2.ID, "notes", "a", js(1)))
		mustOK(s.Create(ctx, bobC, w.bobNotes.ID, "notes", "a", js(1)))
		_, err := s.Create(ctx, w.a, w.notes.ID, "notes", "a", js(1)) // refused: publishes nothing
		wantCode(t, err, models.ErrConflict)
		n, err := s.Reset(ctx, w.a, w.notes.ID)
		if err != nil || n != 2 {
			t.Fatalf("reset = %d, %v", n, err)
		}
		mustOK(s.Delete(ctx, w.a, w.notes2.ID, "notes", "a", 1))

		want := []string{"1 notes a create 1", "2 notes a update 2", "3 big b create 1", "4   reset"}
		for i, wnt := range want {
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, ok := sub.Next(tctx)
			cancel()
			if !ok {
				t.Fatalf("event %d missing", i)
			}
			got := fmt.Sprintf("%d %s %s %s", c.StorageRevision, c.Namespace, deref(c.Key), c.Operation)
			if c.ItemRevision != nil {
				got += fmt.Sprintf(" %d", *c.ItemRevision)
			}
			if got != wnt || c.InstanceID != w.notes.ID || c.UserID != w.alice.ID {
				t.Fatalf("event %d = %q (%+v), want %q", i, got, c, wnt)
			}
		}
		// Reset touched only its own Instance: the other Instance and Bob keep theirs.
		if _, err := s.Get(ctx, bobC, w.bobNotes.ID, "notes", "a"); err != nil {
			t.Fatalf("bob's item after alice's reset: %v", err)
		}
		for i, wnt := range []string{"1 create", "2 delete"} {
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, ok := other.Next(tctx)
			cancel()
			if got := fmt.Sprintf("%d %s", c.StorageRevision, c.Operation); !ok || got != wnt {
				t.Fatalf("other event %d = %q", i, got)
			}
		}
		inst, err := w.env.Life.Instance(ctx, w.alice, w.notes.ID)
		if err != nil || inst.StorageRevision != 4 {
			t.Fatalf("storage revision = %d, %v", inst.StorageRevision, err)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
