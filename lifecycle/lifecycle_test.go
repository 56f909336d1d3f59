package lifecycle_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"pluginhost/bundle"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

var ctx = context.Background()

func js(v any) models.JSON { b, _ := json.Marshal(v); return b }

// notes returns a manifest of com.test.notes at a version and storage version,
// with the given migrations and namespaces notes (64 KiB) and tags (8 KiB).
func notes(version string, storageVersion int, policy string, migrations ...map[string]any) map[string]any {
	m := fixture.Manifest("com.test.notes", fixture.NS("notes", 65536), fixture.NS("tags", 8192))
	m["version"] = version
	m["data_policy"] = policy
	st := m["storage"].(map[string]any)
	st["version"] = storageVersion
	if len(migrations) > 0 {
		var a []any
		for _, mg := range migrations {
			a = append(a, mg)
		}
		st["migrations"] = a
	}
	return m
}

func rename(from int, ns string, pairs ...string) map[string]any {
	r := map[string]any{}
	for i := 0; i+1 < len(pairs); i += 2 {
		r[pairs[i]] = pairs[i+1]
	}
	return map[string]any{"from": from, "to": from + 1, "namespace": ns, "rename": r}
}

func del(from int, ns string, keys ...string) map[string]any {
	var a []any
	for _, k := range keys {
		a = append(a, k)
	}
	return map[string]any{"from": from, "to": from + 1, "namespace": ns, "delete": a}
}

// must returns v, failing the test on err: must(f())(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code models.Code, mention ...string) {
	t.Helper()
	if models.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Fatalf("%v does not mention %q", err, m)
		}
	}
}

func get(t *testing.T, e *fixture.Env, u *models.User, inst, ns, key string) (string, error) {
	t.Helper()
	res, err := e.Store.Get(ctx, models.Caller{UserID: u.ID}, inst, ns, key)
	if err != nil {
		return "", err
	}
	var d models.ItemData
	json.Unmarshal(res.Data, &d)
	return string(d.Item.Value), nil
}

func put(t *testing.T, e *fixture.Env, u *models.User, inst, ns, key string, v any) {
	t.Helper()
	if _, err := e.Store.Create(ctx, models.Caller{UserID: u.ID}, inst, ns, key, js(v)); err != nil {
		t.Fatal(err)
	}
}

// dump returns every stored row that an update could touch, for byte-for-byte
// comparison.
func dump(t *testing.T, e *fixture.Env) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT instance_id, namespace, item_key, installation_id, value, size, revision, created_at, updated_at FROM storage_items ORDER BY instance_id, namespace, item_key",
		"SELECT id, installation_id, user_id, name, enabled, grants, storage_revision, created_at FROM instances ORDER BY id",
		"SELECT id, user_id, plugin_id, name, version, publisher_key_id, generation, storage_version, data_policy, status, ai_consent, used_bytes, manifest, package_sha256, created_at, updated_at FROM installations ORDER BY id",
	} {
		rows, err := e.DB.Read.Raw(q).Rows()
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%v\x1f", v)
			}
			b.WriteString("\n")
		}
		rows.Close()
	}
	return b.String()
}

// TestTransitions walks every row of the specification's table of lifecycle
// moves, with two users and two Instances each.
func TestTransitions(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice, bob := e.User(t, "alice"), e.User(t, "bob")
		type world struct {
			instl *models.Installation
			a, b  *models.Instance
		}
		setup := func(t *testing.T, u *models.User, m map[string]any) world {
			instl := must(e.Life.Install(ctx, u, e.Package(t, m, nil)))(t)
			w := world{instl, e.Instance(t, u, instl), e.Instance(t, u, instl)}
			put(t, e, u, w.a.ID, "notes", "n", u.Name+"-a")
			put(t, e, u, w.b.ID, "notes", "n", u.Name+"-b")
			return w
		}

		t.Run("enabled Instance, disable: data kept, every read and write blocked", func(t *testing.T) {
			al := setup(t, alice, notes("1.0.0", 1, "retain"))
			must(e.Life.SetInstanceEnabled(ctx, alice, al.a.ID, false))(t)
			_, err := get(t, e, alice, al.a.ID, "notes", "n")
			wantCode(t, err, models.ErrPermissionDenied, "disabled")
			_, err = e.Store.Create(ctx, models.Caller{UserID: alice.ID}, al.a.ID, "notes", "x", js(1))
			wantCode(t, err, models.ErrPermissionDenied)
			if v, err := get(t, e, alice, al.b.ID, "notes", "n"); err != nil || v != `"alice-a"` && v != `"alice-b"` {
				t.Fatalf("the other Instance: %s %v", v, err)
			}
			must(e.Life.SetInstanceEnabled(ctx, alice, al.a.ID, true))(t)
			if v, err := get(t, e, alice, al.a.ID, "notes", "n"); err != nil || v != `"alice-a"` {
				t.Fatalf("re-enabled: %s %v", v, err)
			}
			noErr(t, e.Life.Uninstall(ctx, alice, al.instl.ID))
		})
		t.Run("Instance with data, reset: only that Instance's data goes", func(t *testing.T) {
			al, bo := setup(t, alice, notes("1.0.0", 1, "retain")), setup(t, bob, notes("1.0.0", 1, "retain"))
			n := must(e.Store.Reset(ctx, models.Caller{UserID: alice.ID}, al.a.ID))(t)
			if n != 1 {
				t.Fatalf("reset deleted %d", n)
			}
			_, err := get(t, e, alice, al.a.ID, "notes", "n")
			wantCode(t, err, models.ErrNotFound)
			for _, c := range []struct {
				u    *models.User
				inst string
				want string
			}{{alice, al.b.ID, `"alice-b"`}, {bob, bo.a.ID, `"bob-a"`}, {bob, bo.b.ID, `"bob-b"`}} {
				if v, err := get(t, e, c.u, c.inst, "notes", "n"); err != nil || v != c.want {
					t.Fatalf("%s: %s %v", c.inst, v, err)
				}
			}
			noErr(t, e.Life.Uninstall(ctx, alice, al.instl.ID))
			noErr(t, e.Life.Uninstall(ctx, bob, bo.instl.ID))
		})
		t.Run("data_policy purge, uninstall: storage deleted; reinstall starts empty", func(t *testing.T) {
			al, bo := setup(t, alice, notes("1.0.0", 1, "purge")), setup(t, bob, notes("1.0.0", 1, "purge"))
			noErr(t, e.Life.Uninstall(ctx, alice, al.instl.ID))
			if n := testenv.Count(t, e.DB.Read, "storage_items", "installation_id = ?", al.instl.ID); n != 0 {
				t.Fatalf("%d items left after purge", n)
			}
			if n := testenv.Count(t, e.DB.Read, "instances", "installation_id = ?", al.instl.ID); n != 0 {
				t.Fatalf("%d instances left after purge", n)
			}
			_, err := get(t, e, alice, al.a.ID, "notes", "n")
			wantCode(t, err, models.ErrPermissionDenied)
			// Bob's Installation of the same plugin is untouched.
			if v, err := get(t, e, bob, bo.a.ID, "notes", "n"); err != nil || v != `"bob-a"` {
				t.Fatalf("bob: %s %v", v, err)
			}
			again := must(e.Life.Install(ctx, alice, e.Package(t, notes("1.0.0", 1, "purge"), nil)))(t)
			if again.ID == al.instl.ID || again.Generation != 1 {
				t.Fatalf("reinstall after purge = %s gen %d", again.ID, again.Generation)
			}
			if insts := must(e.Life.Instances(ctx, again.ID))(t); len(insts) != 0 {
				t.Fatalf("reinstall after purge has %d Instances", len(insts))
			}
			noErr(t, e.Life.Uninstall(ctx, alice, again.ID))
			noErr(t, e.Life.Uninstall(ctx, bob, bo.instl.ID))
		})
		t.Run("data_policy retain, uninstall then reinstall: same id, data restored", func(t *testing.T) {
			al, bo := setup(t, alice, notes("1.0.0", 1, "retain")), setup(t, bob, notes("1.0.0", 1, "retain"))
			noErr(t, e.Life.Uninstall(ctx, alice, al.instl.ID))
			// While uninstalled, nothing reaches the data.
			_, err := get(t, e, alice, al.a.ID, "notes", "n")
			wantCode(t, err, models.ErrPermissionDenied)
			if l := must(e.Life.Installations(ctx, alice))(t); len(l) != 0 {
				t.Fatalf("uninstalled plugin listed: %+v", l)
			}
			// Bob installing the same plugin never gets Alice's data.
			if v, err := get(t, e, bob, bo.a.ID, "notes", "n"); err != nil || v != `"bob-a"` {
				t.Fatalf("bob: %s %v", v, err)
			}
			_, err = get(t, e, bob, al.a.ID, "notes", "n")
			wantCode(t, err, models.ErrPermissionDenied)
			back := must(e.Life.Install(ctx, alice, e.Package(t, notes("1.0.0", 1, "retain"), nil)))(t)
			if back.ID != al.instl.ID || back.Generation != al.instl.Generation+1 {
				t.Fatalf("reinstall = %s gen %d, want %s gen %d", back.ID, back.Generation, al.instl.ID, al.instl.Generation+1)
			}
			for inst, want := range map[string]string{al.a.ID: `"alice-a"`, al.b.ID: `"alice-b"`} {
				if v, err := get(t, e, alice, inst, "notes", "n"); err != nil || v != want {
					t.Fatalf("restored %s: %s %v", inst, v, err)
				}
			}
			noErr(t, e.Life.Uninstall(ctx, bob, bo.instl.ID))
			// A reinstall cannot bring data under another publisher.
			noErr(t, e.Life.Uninstall(ctx, alice, back.ID))
			other := otherPublisher(t, e)
			_, err = e.Life.Install(ctx, alice, other.sign(t, notes("1.0.0", 1, "retain")))
			wantCode(t, err, models.ErrPackageRejected, "publisher")
		})
		t.Run("installed at N, update: N+1 one step at a time, data kept, migrations applied", func(t *testing.T) {
			al := setup(t, alice, notes("1.0.0", 1, "retain"))
			put(t, e, alice, al.a.ID, "notes", "old", "moved")
			put(t, e, alice, al.a.ID, "notes", "gone", 1)
			put(t, e, alice, al.b.ID, "tags", "t", "tag")
			sub := e.Changes(t, alice, al.a.ID)
			staleAI := models.Caller{UserID: alice.ID, Generation: al.instl.Generation}
			up := notes("1.1.0", 3, "retain", rename(1, "notes", "old", "new"), del(2, "notes", "gone"), rename(2, "tags", "t", "tag"))
			got := must(e.Life.Update(ctx, alice, al.instl.ID, e.Package(t, up, nil)))(t)
			if got.Version != "1.1.0" || got.StorageVersion != 3 || got.Generation != al.instl.Generation+1 || got.ID != al.instl.ID {
				t.Fatalf("updated = %+v", got)
			}
			if v, err := get(t, e, alice, al.a.ID, "notes", "new"); err != nil || v != `"moved"` {
				t.Fatalf("renamed: %s %v", v, err)
			}
			for _, k := range []string{"old", "gone"} {
				_, err := get(t, e, alice, al.a.ID, "notes", k)
				wantCode(t, err, models.ErrNotFound)
			}
			if v, err := get(t, e, alice, al.b.ID, "tags", "tag"); err != nil || v != `"tag"` {
				t.Fatalf("second Instance renamed: %s %v", v, err)
			}
			if v, err := get(t, e, alice, al.a.ID, "notes", "n"); err != nil || v != `"alice-a"` {
				t.Fatalf("kept: %s %v", v, err)
			}
			c, ok := sub.Next(ctx)
			if !ok || c.Operation != models.OpMigrate || c.InstanceID != al.a.ID {
				t.Fatalf("migrate event = %+v", c)
			}
			// A caller issued for the previous generation is stale.
			_, err := e.Store.Get(ctx, staleAI, al.a.ID, "notes", "n")
			wantCode(t, err, models.ErrConflict, "generation")
			noErr(t, e.Life.Uninstall(ctx, alice, al.instl.ID))
		})
		t.Run("security lifecycle: credentials, OAuth state and pending actions go on every uninstall", func(t *testing.T) {
			for _, policy := range []string{"retain", "purge"} {
				m := notes("1.0.0", 1, policy)
				m["id"] = "com.test.secure." + policy
				al := setup(t, alice, m)
				now := time.Now().UnixMicro()
				for _, q := range []string{
					"INSERT INTO installation_credentials (id, installation_id, name, secret, created_at) VALUES (?, ?, 'oauth', ?, " + fmt.Sprint(now) + ")",
					"INSERT INTO oauth_states (state, installation_id, user_id, created_at, expires_at) VALUES (?, ?, 'u', 0, 0)",
					"INSERT INTO pending_actions (id, installation_id, instance_id, kind, payload, created_at) VALUES (?, ?, 'i', 'k', '{}', 0)",
				} {
					args := []any{models.NewID("x_"), al.instl.ID}
					if strings.Contains(q, "secret") {
						args = append(args, []byte("s3cr3t"))
					}
					if err := e.DB.Write.Exec(q, args...).Error; err != nil {
						t.Fatal(err)
					}
				}
				noErr(t, e.Life.Uninstall(ctx, alice, al.instl.ID))
				for _, table := range []string{"installation_credentials", "oauth_states", "pending_actions"} {
					if n := testenv.Count(t, e.DB.Read, table, "installation_id = ?", al.instl.ID); n != 0 {
						t.Fatalf("%s: %d rows left after uninstall with %s", table, n, policy)
					}
				}
				if policy == "retain" {
					back := must(e.Life.Install(ctx, alice, e.Package(t, m, nil)))(t)
					noErr(t, e.Life.Uninstall(ctx, alice, back.ID))
				}
			}
		})
	})
}

type publisher struct {
	e   *fixture.Env
	key ed25519.PrivateKey
}

// otherPublisher returns a second trusted publisher.
func otherPublisher(t *testing.T, e *fixture.Env) *publisher {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	pub := key.Public().(ed25519.PublicKey)
	e.Life.TrustedKeys[bundle.KeyID(pub)] = pub
	return &publisher{e, key}
}

func (p *publisher) sign(t *testing.T, m map[string]any) []byte {
	raw, _ := json.Marshal(m)
	pkg, err := bundle.Build(map[string][]byte{"manifest.json": raw}, p.key)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

// TestUpdateRefusals: each refused update names its reason and changes nothing.
func TestUpdateRefusals(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		instl := must(e.Life.Install(ctx, alice, e.Package(t, notes("1.0.0", 2, "retain"), nil)))(t)
		inst := e.Instance(t, alice, instl)
		put(t, e, alice, inst.ID, "notes", "a", strings.Repeat("x", 1000))
		put(t, e, alice, inst.ID, "notes", "b", 2)
		put(t, e, alice, inst.ID, "tags", "t", strings.Repeat("y", 4000))
		put(t, e, alice, inst.ID, "tags", "u", strings.Repeat("y", 4000))
		before := dump(t, e)
		other := otherPublisher(t, e)
		smaller := notes("1.1.0", 3, "retain", del(2, "notes", "zzz"))
		smaller["storage"].(map[string]any)["namespaces"] = []any{fixture.NS("notes", 65536), fixture.NS("tags", 5000)}
		for _, tc := range []struct {
			name    string
			pkg     []byte
			code    models.Code
			mention string
		}{
			{"same version", e.Package(t, notes("1.0.0", 2, "retain"), nil), models.ErrPackageRejected, "not newer"},
			{"older version", e.Package(t, notes("0.9.0", 2, "retain"), nil), models.ErrPackageRejected, "not newer"},
			{"another plugin id", e.Package(t, fixture.Manifest("com.test.other", fixture.NS("notes", 100)), nil), models.ErrPackageRejected, "plugin id"},
			{"another publisher", other.sign(t, notes("1.1.0", 2, "retain")), models.ErrPackageRejected, "publisher"},
			{"storage version down", e.Package(t, notes("1.1.0", 1, "retain"), nil), models.ErrMigrationFailed, "go down"},
			{"missing step", e.Package(t, notes("1.1.0", 4, "retain", rename(3, "notes", "a", "c")), nil), models.ErrMigrationFailed, "from storage version 2 to 3"},
			{"rename collides", e.Package(t, notes("1.1.0", 3, "retain", rename(2, "notes", "a", "b")), nil), models.ErrMigrationFailed, `"a" to "b"`},
			{"namespace over its new max_bytes", e.Package(t, smaller, nil), models.ErrMigrationFailed, `"tags"`},
			{"invalid package", e.Package(t, map[string]any{"id": "com.test.notes"}, nil), models.ErrPackageRejected, "invalid"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.Life.Update(ctx, alice, instl.ID, tc.pkg)
				wantCode(t, err, tc.code, tc.mention)
				if after := dump(t, e); after != before {
					t.Fatalf("a refused update changed the database")
				}
			})
		}
		// Simultaneous renames are not collisions: a→b with b→c moves both.
		got := must(e.Life.Update(ctx, alice, instl.ID, e.Package(t, notes("1.2.0", 3, "retain", rename(2, "notes", "a", "b", "b", "c")), nil)))(t)
		if v, err := get(t, e, alice, inst.ID, "notes", "c"); err != nil || v != "2" || got.Generation != 2 {
			t.Fatalf("swap: %s %v gen %d", v, err, got.Generation)
		}
		// A namespace the new manifest drops keeps its data, unreachable.
		drop := notes("1.3.0", 3, "retain")
		drop["storage"].(map[string]any)["namespaces"] = []any{fixture.NS("notes", 65536)}
		must(e.Life.Update(ctx, alice, instl.ID, e.Package(t, drop, nil)))(t)
		_, err := get(t, e, alice, inst.ID, "tags", "t")
		wantCode(t, err, models.ErrPermissionDenied, "not declared")
		must(e.Life.Update(ctx, alice, instl.ID, e.Package(t, notes("1.4.0", 3, "retain"), nil)))(t)
		if v, err := get(t, e, alice, inst.ID, "tags", "t"); err != nil || len(v) != 4002 {
			t.Fatalf("re-declared namespace lost its data: %d %v", len(v), err)
		}
	})
}

// TestCollisionInLastInstanceChangesNothing: an Installation with several
// Instances and hundreds of keys; one colliding rename in the last Instance
// fails the update, and all storage is byte-for-byte as before.
func TestCollisionInLastInstanceChangesNothing(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		m := notes("1.0.0", 1, "retain")
		m["storage"].(map[string]any)["namespaces"] = []any{fixture.NS("notes", 65536)}
		instl := must(e.Life.Install(ctx, alice, e.Package(t, m, nil)))(t)
		var insts []*models.Instance
		for i := 0; i < 4; i++ {
			inst := e.Instance(t, alice, instl)
			insts = append(insts, inst)
			for k := 0; k < 200; k++ {
				put(t, e, alice, inst.ID, "notes", fmt.Sprintf("k%03d", k), map[string]any{"i": i, "k": k})
			}
		}
		last := insts[len(insts)-1]
		put(t, e, alice, last.ID, "notes", "r199", "in the way")
		before := dump(t, e)
		var pairs []string
		for k := 0; k < 200; k++ {
			pairs = append(pairs, fmt.Sprintf("k%03d", k), fmt.Sprintf("r%03d", k))
		}
		up := notes("2.0.0", 2, "retain", rename(1, "notes", pairs...))
		up["storage"].(map[string]any)["namespaces"] = []any{fixture.NS("notes", 65536)}
		_, err := e.Life.Update(ctx, alice, instl.ID, e.Package(t, up, nil))
		wantCode(t, err, models.ErrMigrationFailed, last.ID, `"notes"`, "1→2", `"k199" to "r199"`)
		if after := dump(t, e); after != before {
			t.Fatal("storage changed after a failed update")
		}
		now := must(e.Life.Installation(ctx, alice, instl.ID))(t)
		if now.Version != "1.0.0" || now.Generation != 1 || now.StorageVersion != 1 {
			t.Fatalf("installation after failed update: %+v", now)
		}
	})
}
