package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/testenv"
)

const (
	updateMutation    = `mutation($i:ID!,$p:String!){updatePlugin(installationId:$i,package:$p){id version generation storageVersion}}`
	uninstallMutation = `mutation($i:ID!){uninstallPlugin(installationId:$i)}`
)

func versioned(m map[string]any, version string, storageVersion int, migrations ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	st := map[string]any{}
	for k, v := range m["storage"].(map[string]any) {
		st[k] = v
	}
	st["version"] = storageVersion
	if len(migrations) > 0 {
		st["migrations"] = migrations
	}
	out["storage"] = st
	out["version"] = version
	return out
}

// TestUpdateOverGraphQL: an update migrates; a colliding one is MIGRATION_FAILED;
// uninstall with retain and reinstall restore the data.
func TestUpdateOverGraphQL(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.user(t, "alice", false)
		base := manifest("com.test.up", ns("n", 10000))
		instl, ids := h.install(t, alice, base, 1)
		alice.Must(t, createQ, map[string]any{"i": ids[0], "k": "a", "v": "A"}, nil)
		alice.Must(t, createQ, map[string]any{"i": ids[0], "k": "b", "v": "B"}, nil)
		bad := versioned(base, "1.1.0", 2, map[string]any{"from": 1, "to": 2, "namespace": "n", "rename": map[string]any{"a": "b"}})
		e := alice.Fail(t, "MIGRATION_FAILED", updateMutation, map[string]any{"i": instl, "p": h.pub.Sign(t, bad, nil)})
		if !strings.Contains(e.Message, ids[0]) || !strings.Contains(e.Message, `"a" to "b"`) {
			t.Fatalf("message: %s", e.Message)
		}
		good := versioned(base, "1.1.0", 2, map[string]any{"from": 1, "to": 2, "namespace": "n", "rename": map[string]any{"a": "c"}})
		var up struct {
			UpdatePlugin struct {
				Version                    string
				Generation, StorageVersion int
			}
		}
		alice.Must(t, updateMutation, map[string]any{"i": instl, "p": h.pub.Sign(t, good, nil)}, &up)
		if up.UpdatePlugin.Version != "1.1.0" || up.UpdatePlugin.Generation != 2 || up.UpdatePlugin.StorageVersion != 2 {
			t.Fatalf("update = %+v", up)
		}
		alice.Must(t, getQ, map[string]any{"i": ids[0], "k": "c"}, nil)
		var un struct{ UninstallPlugin bool }
		alice.Must(t, uninstallMutation, map[string]any{"i": instl}, &un)
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", getQ, map[string]any{"i": ids[0], "k": "c"})
		var back struct{ InstallPlugin struct{ ID string } }
		alice.Must(t, installMutation, map[string]any{"p": h.pub.Sign(t, good, nil)}, &back)
		if back.InstallPlugin.ID != instl {
			t.Fatalf("reinstall id %s, want %s", back.InstallPlugin.ID, instl)
		}
		alice.Must(t, getQ, map[string]any{"i": ids[0], "k": "c"}, nil)
	})
}

// TestCrashDuringMigration kills the server (SIGKILL) while a large update
// migration runs; after a restart the Installation is entirely at the old
// version or entirely at the new one.
func TestCrashDuringMigration(t *testing.T) {
	const instances, keys = 8, 120
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.user(t, "alice", false)
		base := manifest("com.test.crash", ns("n", 65536))
		instl, ids := h.install(t, alice, base, instances)
		rename := map[string]any{}
		for k := 0; k < keys; k++ {
			rename[fmt.Sprintf("old%03d", k)] = fmt.Sprintf("new%03d", k)
		}
		for _, id := range ids {
			for k := 0; k < keys; k++ {
				alice.Must(t, invokeQ, map[string]any{"i": id, "c": "host.storage.create",
					"a": map[string]any{"key": fmt.Sprintf("old%03d", k), "value": map[string]any{"k": k, "pad": strings.Repeat("p", 100)}}}, nil)
			}
		}
		up := versioned(base, "2.0.0", 2, map[string]any{"from": 1, "to": 2, "namespace": "n", "rename": rename})
		pkg := h.pub.Sign(t, up, nil)
		go alice.Send(updateMutation, map[string]any{"i": instl, "p": pkg}) // its answer never comes
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(h.Log(), "storage migration progress") {
			if time.Now().After(deadline) {
				t.Fatalf("the migration never started:\n%s", h.Log())
			}
			time.Sleep(time.Millisecond)
		}
		h.Kill()
		finished := strings.Contains(h.Log(), "plugin updated")
		srv := Start(t, b.DSN, h.Keys)
		alice.URL = srv.URL
		var list struct {
			Installations []struct {
				Version    string
				Generation int
			}
		}
		alice.Must(t, `{installations{version generation}}`, nil, &list)
		if len(list.Installations) != 1 {
			t.Fatalf("installations = %+v", list)
		}
		got := list.Installations[0]
		prefix := "old"
		switch {
		case got.Version == "1.0.0" && got.Generation == 1:
		case got.Version == "2.0.0" && got.Generation == 2:
			prefix = "new"
		default:
			t.Fatalf("installation between versions: %+v", got)
		}
		for _, id := range ids {
			var items struct{ StorageItems itemResult }
			alice.Must(t, listQ, map[string]any{"i": id, "l": 100}, &items)
			var page2 struct{ StorageItems itemResult }
			alice.Must(t, listQ, map[string]any{"i": id, "l": 100, "c": items.StorageItems.Data.NextCursor}, &page2)
			all := append(items.StorageItems.Data.Items, page2.StorageItems.Data.Items...)
			if len(all) != keys {
				t.Fatalf("instance %s holds %d keys after the crash, want %d", id, len(all), keys)
			}
			for _, it := range all {
				if !strings.HasPrefix(it.Key, prefix) {
					t.Fatalf("instance %s holds %q at version %s: a half-applied migration", id, it.Key, got.Version)
				}
			}
		}
		t.Logf("killed mid-migration; after restart the Installation is at %s (the update had logged completion: %v)", got.Version, finished)
	})
}
