package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
)

const (
	createQ = `mutation($i:ID!,$n:String,$k:String!,$v:JSON!){storageCreate(instanceId:$i,namespace:$n,key:$k,value:$v){summary data evidence{type instanceId namespace key revision}}}`
	updateQ = `mutation($i:ID!,$n:String,$k:String!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:$n,key:$k,value:$v,revision:$r){summary data}}`
	deleteQ = `mutation($i:ID!,$n:String,$k:String!,$r:Int!){storageDelete(instanceId:$i,namespace:$n,key:$k,revision:$r){summary data}}`
	getQ    = `query($i:ID!,$n:String,$k:String!){storageItem(instanceId:$i,namespace:$n,key:$k){summary data evidence{revision}}}`
	listQ   = `query($i:ID!,$n:String,$q:String,$l:Int,$c:String){storageItems(instanceId:$i,namespace:$n,query:$q,limit:$l,cursor:$c){summary data evidence{key revision}}}`
	invokeQ = `mutation($i:ID!,$c:String!,$a:JSON){invoke(instanceId:$i,capability:$c,arguments:$a){summary data}}`
)

type itemResult struct {
	Data struct {
		Namespace string `json:"namespace"`
		Item      struct {
			Key       string          `json:"key"`
			Value     json.RawMessage `json:"value"`
			Revision  int64           `json:"revision"`
			CreatedAt string          `json:"created_at"`
			UpdatedAt string          `json:"updated_at"`
		} `json:"item"`
		Items []struct {
			Key      string          `json:"key"`
			Value    json.RawMessage `json:"value"`
			Revision int64           `json:"revision"`
		} `json:"items"`
		HasMore    bool   `json:"has_more"`
		NextCursor string `json:"next_cursor"`
	} `json:"data"`
	Summary string `json:"summary"`
}

// TestWalkthrough follows the README: keygen, package the example plugin,
// install it, create an Instance, write and read items, reset, and find the
// data again after a restart.
func TestWalkthrough(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		pub := NewPublisher(t)
		pkgFile := filepath.Join(t.TempDir(), "notes.phpkg")
		out := run(t, "package", "--dir", plugintest.Example(t, "../examples/notes"), "--key", pub.Prefix+".key", "--out", pkgFile)
		if !strings.Contains(out, "com.example.notes") {
			t.Fatalf("package output: %s", out)
		}
		pkg, _ := os.ReadFile(pkgFile)
		srv := Start(t, b.DSN, pub.Dir)
		alice := &Client{URL: srv.URL, Token: Token(t, b.DSN, "alice", false)}

		var viewer struct{ Viewer struct{ Name string } }
		alice.Must(t, `{viewer{name}}`, nil, &viewer)
		if viewer.Viewer.Name != "alice" {
			t.Fatalf("viewer = %+v", viewer)
		}
		var inst struct {
			InstallPlugin struct {
				ID, PluginID, Version, DataPolicy string
				Generation, StorageVersion        int
			} `json:"installPlugin"`
		}
		alice.Must(t, installMutation, map[string]any{"p": base64.StdEncoding.EncodeToString(pkg)}, &inst)
		if got := inst.InstallPlugin; got.PluginID != "com.example.notes" || got.Generation != 1 || got.StorageVersion != 1 || got.DataPolicy != "retain" {
			t.Fatalf("installed %+v", got)
		}
		var ci struct{ CreateInstance struct{ ID string } }
		alice.Must(t, instanceMutation, map[string]any{"i": inst.InstallPlugin.ID, "n": "Work"}, &ci)
		id := ci.CreateInstance.ID

		var created struct{ StorageCreate itemResult }
		alice.Must(t, createQ, map[string]any{"i": id, "n": "notes", "k": "groceries", "v": map[string]any{"text": "milk"}}, &created)
		if it := created.StorageCreate.Data.Item; it.Revision != 1 || string(it.Value) != `{"text":"milk"}` {
			t.Fatalf("created %+v", it)
		}
		var updated struct{ StorageUpdate itemResult }
		alice.Must(t, updateQ, map[string]any{"i": id, "n": "notes", "k": "groceries", "v": map[string]any{"text": "milk, eggs"}, "r": 1}, &updated)
		if updated.StorageUpdate.Data.Item.Revision != 2 {
			t.Fatalf("updated %+v", updated)
		}
		// invoke runs the same tool by id.
		var inv struct{ Invoke itemResult }
		alice.Must(t, invokeQ, map[string]any{"i": id, "c": "host.storage.get", "a": map[string]any{"namespace": "notes", "key": "groceries"}}, &inv)
		if string(inv.Invoke.Data.Item.Value) != `{"text":"milk, eggs"}` {
			t.Fatalf("invoke get = %+v", inv)
		}
		// The REST reset deletes the Instance's data.
		status, body := alice.REST(t, "DELETE", "/v1/plugin-instances/"+id+"/storage", nil)
		if status != http.StatusOK || body["instance_id"] != id || body["deleted_items"] != float64(1) {
			t.Fatalf("reset: %d %v", status, body)
		}
		alice.Fail(t, "PLUGIN_STORAGE_NOT_FOUND", getQ, map[string]any{"i": id, "n": "notes", "k": "groceries"})
		alice.Must(t, createQ, map[string]any{"i": id, "n": "notes", "k": "after-reset", "v": []any{1, "two", 3.5, true, nil}}, nil)

		// Restoration after restart.
		srv.Stop(t)
		srv = Start(t, b.DSN, pub.Dir)
		alice.URL = srv.URL
		var got struct{ StorageItem itemResult }
		alice.Must(t, getQ, map[string]any{"i": id, "n": "notes", "k": "after-reset"}, &got)
		if string(got.StorageItem.Data.Item.Value) != `[1,"two",3.5,true,null]` || got.StorageItem.Data.Item.Revision != 1 {
			t.Fatalf("after restart: %+v", got.StorageItem.Data.Item)
		}
		var listed struct{ StorageItems itemResult }
		alice.Must(t, listQ, map[string]any{"i": id, "n": "notes"}, &listed)
		if len(listed.StorageItems.Data.Items) != 1 {
			t.Fatalf("list after restart: %+v", listed)
		}
	})
}

func TestAuthentication(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	anon := &Client{URL: h.URL}
	bad := &Client{URL: h.URL, Token: "ph_not-a-real-token"}
	for _, c := range []*Client{anon, bad} {
		req, _ := http.NewRequest("POST", h.URL+"/graphql", strings.NewReader(`{"query":"{viewer{id}}"}`))
		req.Header.Set("Content-Type", "application/json")
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 401 || errorCode(body) != "UNAUTHENTICATED" || body["data"] != nil {
			t.Fatalf("graphql with token %q: %d %v", c.Token, resp.StatusCode, body)
		}
		status, body := c.REST(t, "DELETE", "/v1/plugin-instances/inst_x/storage", nil)
		if status != 401 || errorCode(body) != "UNAUTHENTICATED" {
			t.Fatalf("REST with token %q: %d %v", c.Token, status, body)
		}
	}
	// Health and metrics need no token.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(h.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", p, resp.StatusCode, err)
		}
		resp.Body.Close()
	}
	// GET /graphql serves queries, never mutations.
	req, _ := http.NewRequest("GET", h.URL+"/graphql?query="+strings.ReplaceAll("{viewer{name}}", "{", "%7B"), nil)
	req.Header.Set("Authorization", "Bearer "+alice.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if fmt.Sprint(got["data"]) != "map[viewer:map[name:alice]]" {
		t.Fatalf("GET query: %v", got)
	}
	req, _ = http.NewRequest("GET", h.URL+"/graphql?query=mutation%7BresetInstanceStorage(instanceId:%22x%22)%7D", nil)
	req.Header.Set("Authorization", "Bearer "+alice.Token)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Fatal("GET ran a mutation")
	}
	// The playground is for admins.
	admin := h.user(t, "root", true)
	for _, tc := range []struct {
		token  string
		status int
	}{{"", 401}, {alice.Token, 403}, {admin.Token, 200}} {
		req, _ := http.NewRequest("GET", h.URL+"/playground", nil)
		if tc.token != "" {
			req.SetBasicAuth("any", tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("playground with %q: %d, want %d", tc.token, resp.StatusCode, tc.status)
		}
	}
	// Logs never hold a token.
	if strings.Contains(h.Log(), alice.Token) || strings.Contains(h.Log(), admin.Token) {
		t.Fatal("a token appears in the server log")
	}
}

func TestPackagesAndTrust(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	h := newHost(t, b)
	alice := h.user(t, "alice", false)
	admin := h.user(t, "root", true)
	good := manifest("com.test.pkg", ns("n", 100))

	// Invalid manifests are refused with every problem listed.
	bad := manifest("com.test.bad", ns("n", 300000), ns("N", 1))
	bad["data_policy"] = "keep"
	e := alice.Fail(t, "PACKAGE_REJECTED", installMutation, map[string]any{"p": h.pub.Sign(t, bad, nil)})
	problems, _ := e.Extensions["problems"].([]any)
	var paths []string
	for _, p := range problems {
		m := p.(map[string]any)
		paths = append(paths, fmt.Sprint(m["path"], " ", m["code"]))
	}
	want := "/data_policy enum,/storage/namespaces/0/max_bytes range,/storage/namespaces/1/id format"
	if strings.Join(paths, ",") != want {
		t.Fatalf("problems = %v, want %s", paths, want)
	}
	// An untrusted key is refused until an admin trusts it.
	stranger := NewPublisher(t)
	pkg := stranger.Sign(t, good, nil)
	e = alice.Fail(t, "PACKAGE_REJECTED", installMutation, map[string]any{"p": pkg})
	if !strings.Contains(e.Message, "not trusted") {
		t.Fatalf("message: %s", e.Message)
	}
	pubText, _ := os.ReadFile(stranger.Prefix + ".pub")
	alice.Fail(t, "FORBIDDEN", `mutation($k:String!){trustPublisherKey(publicKey:$k)}`, map[string]any{"k": string(pubText)})
	admin.Fail(t, "BAD_USER_INPUT", `mutation($k:String!){trustPublisherKey(publicKey:$k)}`, map[string]any{"k": "ed25519:nope"})
	var trusted struct{ TrustPublisherKey string }
	admin.Must(t, `mutation($k:String!){trustPublisherKey(publicKey:$k)}`, map[string]any{"k": string(pubText)}, &trusted)
	if len(trusted.TrustPublisherKey) != 32 {
		t.Fatalf("key id = %q", trusted.TrustPublisherKey)
	}
	alice.Must(t, installMutation, map[string]any{"p": pkg}, nil)
	alice.Fail(t, "BAD_USER_INPUT", installMutation, map[string]any{"p": pkg})
	// Tampered and unsigned packages, and garbage.
	alice.Fail(t, "PACKAGE_REJECTED", installMutation, map[string]any{"p": base64.StdEncoding.EncodeToString([]byte("PK not a zip"))})
	alice.Fail(t, "BAD_USER_INPUT", installMutation, map[string]any{"p": "%%%"})
}

func TestStorageErrorsOverGraphQL(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.user(t, "alice", false), h.user(t, "bob", false)
		_, ids := h.install(t, alice, manifest("com.test.err", ns("n", 64), ns("m", 1000)), 2)
		_, bobIDs := h.install(t, bob, manifest("com.test.err", ns("n", 64)), 1)
		a, a2 := ids[0], ids[1]
		alice.Must(t, createQ, map[string]any{"i": a, "k": "k", "v": 1}, nil)
		for _, tc := range []struct {
			name, code, q string
			vars          map[string]any
		}{
			{"duplicate create", "PLUGIN_STORAGE_CONFLICT", createQ, map[string]any{"i": a, "k": "k", "v": 2}},
			{"stale update", "PLUGIN_STORAGE_CONFLICT", updateQ, map[string]any{"i": a, "k": "k", "v": 2, "r": 7}},
			{"update missing", "PLUGIN_STORAGE_NOT_FOUND", updateQ, map[string]any{"i": a, "k": "nope", "v": 2, "r": 1}},
			{"delete missing", "PLUGIN_STORAGE_NOT_FOUND", deleteQ, map[string]any{"i": a, "k": "nope", "r": 1}},
			{"get missing", "PLUGIN_STORAGE_NOT_FOUND", getQ, map[string]any{"i": a, "k": "nope"}},
			{"credential key", "PLUGIN_STORAGE_INVALID", createQ, map[string]any{"i": a, "k": "refreshToken", "v": 1}},
			{"81-character key", "PLUGIN_STORAGE_INVALID", createQ, map[string]any{"i": a, "k": strings.Repeat("k", 81), "v": 1}},
			{"value over namespace", "PLUGIN_STORAGE_QUOTA_EXCEEDED", createQ, map[string]any{"i": a, "k": "big", "v": strings.Repeat("x", 80)}},
			{"value over 32 KiB", "PLUGIN_STORAGE_QUOTA_EXCEEDED", createQ, map[string]any{"i": a, "n": "m", "k": "big", "v": strings.Repeat("x", 32767)}},
			{"undeclared namespace", "PLUGIN_STORAGE_PERMISSION_DENIED", createQ, map[string]any{"i": a, "n": "other", "k": "x", "v": 1}},
			{"another user's Instance", "PLUGIN_STORAGE_PERMISSION_DENIED", getQ, map[string]any{"i": bobIDs[0], "k": "k"}},
			{"unknown Instance", "PLUGIN_STORAGE_PERMISSION_DENIED", getQ, map[string]any{"i": "inst_nope", "k": "k"}},
			{"limit 0", "PLUGIN_STORAGE_INVALID", listQ, map[string]any{"i": a, "l": 0}},
			{"limit 101", "PLUGIN_STORAGE_INVALID", listQ, map[string]any{"i": a, "l": 101}},
			{"scope in invoke arguments", "PLUGIN_STORAGE_INVALID", invokeQ, map[string]any{"i": a, "c": "host.storage.get", "a": map[string]any{"key": "k", "instance_id": bobIDs[0]}}},
			{"not a storage tool", "PLUGIN_STORAGE_INVALID", invokeQ, map[string]any{"i": a, "c": "weather.lookup", "a": map[string]any{}}},
			{"wrong argument type", "BAD_USER_INPUT", updateQ, map[string]any{"i": a, "k": "k", "v": 1, "r": "one"}},
		} {
			t.Run(tc.name, func(t *testing.T) { alice.Fail(t, tc.code, tc.q, tc.vars) })
		}
		// An error is never an empty list: a foreign Instance's list fails.
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", listQ, map[string]any{"i": bobIDs[0]})
		// REST reset of another user's Instance and of an unknown one: the same 403.
		for _, id := range []string{bobIDs[0], "inst_nope"} {
			status, body := alice.REST(t, "DELETE", "/v1/plugin-instances/"+id+"/storage", nil)
			if status != 403 || errorCode(body) != "PLUGIN_STORAGE_PERMISSION_DENIED" {
				t.Fatalf("reset %s: %d %v", id, status, body)
			}
		}
		// A disabled Instance: every path is refused, REST included; the data stays.
		alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:false){enabled}}`, map[string]any{"i": a}, nil)
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", getQ, map[string]any{"i": a, "k": "k"})
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", listQ, map[string]any{"i": a})
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", updateQ, map[string]any{"i": a, "k": "k", "v": 2, "r": 1})
		alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", invokeQ, map[string]any{"i": a, "c": "host.storage.list"})
		status, body := alice.REST(t, "DELETE", "/v1/plugin-instances/"+a+"/storage", nil)
		if status != 403 || errorCode(body) != "PLUGIN_STORAGE_PERMISSION_DENIED" {
			t.Fatalf("reset disabled: %d %v", status, body)
		}
		alice.Must(t, `mutation($i:ID!){setInstanceEnabled(instanceId:$i,enabled:true){enabled}}`, map[string]any{"i": a}, nil)
		alice.Must(t, getQ, map[string]any{"i": a, "k": "k"}, nil)
		// The second Instance never saw the first one's key.
		alice.Fail(t, "PLUGIN_STORAGE_NOT_FOUND", getQ, map[string]any{"i": a2, "k": "k"})
	})
}

// TestConcurrentWritersOverHTTP: 32 clients read-modify-write one counter over
// HTTP, retrying on CONFLICT, and 32 clients race creates against a quota.
func TestConcurrentWritersOverHTTP(t *testing.T) {
	const clients, increments = 32, 4
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.user(t, "alice", false)
		_, ids := h.install(t, alice, manifest("com.test.conc", ns("c", 100), ns("q", 2000)), 1)
		id := ids[0]
		alice.Must(t, createQ, map[string]any{"i": id, "n": "c", "k": "counter", "v": 0}, nil)
		var wg sync.WaitGroup
		var conflicts atomic.Int64
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done := 0; done < increments; {
					var got struct{ StorageItem itemResult }
					data, errs := alice.Do(t, getQ, map[string]any{"i": id, "n": "c", "k": "counter"})
					if len(errs) > 0 {
						t.Errorf("get: %+v", errs)
						return
					}
					raw, _ := json.Marshal(data)
					json.Unmarshal(raw, &got)
					var n int
					json.Unmarshal(got.StorageItem.Data.Item.Value, &n)
					_, errs = alice.Do(t, updateQ, map[string]any{"i": id, "n": "c", "k": "counter", "v": n + 1, "r": got.StorageItem.Data.Item.Revision})
					switch {
					case len(errs) == 0:
						done++
					case errs[0].Code() == "PLUGIN_STORAGE_CONFLICT":
						conflicts.Add(1)
					default:
						t.Errorf("update: %+v", errs)
						return
					}
				}
			}()
		}
		wg.Wait()
		var got struct{ StorageItem itemResult }
		alice.Must(t, getQ, map[string]any{"i": id, "n": "c", "k": "counter"}, &got)
		if string(got.StorageItem.Data.Item.Value) != fmt.Sprint(clients*increments) {
			t.Fatalf("counter = %s, want %d (%d conflicts retried)", got.StorageItem.Data.Item.Value, clients*increments, conflicts.Load())
		}
		// Racing creates: 2000 bytes hold 19 items of 103 bytes (3-byte key, 100-byte value).
		var ok, refused atomic.Int64
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs := alice.Do(t, createQ, map[string]any{"i": id, "n": "q", "k": fmt.Sprintf("k%02d", w), "v": strings.Repeat("v", 98)})
				switch {
				case len(errs) == 0:
					ok.Add(1)
				case errs[0].Code() == "PLUGIN_STORAGE_QUOTA_EXCEEDED":
					refused.Add(1)
				default:
					t.Errorf("create: %+v", errs)
				}
			}()
		}
		wg.Wait()
		var listed struct{ StorageItems itemResult }
		alice.Must(t, listQ, map[string]any{"i": id, "n": "q"}, &listed)
		if ok.Load() != 19 || len(listed.StorageItems.Data.Items) != 19 || refused.Load() != clients-19 {
			t.Fatalf("%d created, %d refused, %d stored; want 19 within 2000 bytes", ok.Load(), refused.Load(), len(listed.StorageItems.Data.Items))
		}
	})
}
