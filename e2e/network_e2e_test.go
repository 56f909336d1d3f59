package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pluginhost/bundle"
	"pluginhost/database"
	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
	"pluginhost/weatherserver"
)

// weatherPlugin builds examples/weather and points it at the weather service
// (its port), as its walk-through does.
func weatherPlugin(t *testing.T, service *weatherserver.Server) (map[string]any, map[string]string) {
	t.Helper()
	dir := plugintest.Example(t, "../examples/weather")
	port := strings.TrimPrefix(service.URL, "https://localhost:")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(strings.ReplaceAll(string(raw), "localhost:8443", "localhost:"+port)), 0o644)
	folder, err := bundle.ReadPlugin(dir)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(folder.Files["manifest.json"], &m)
	files := map[string]string{}
	for name, b := range folder.Files {
		if name != "manifest.json" {
			files[name] = string(b)
		}
	}
	return m, files
}

// The weather example against the local weather service, through a server
// whose operator opened loopback and trusts the service's CA: a lookup
// needs the Instance's network grant; the forecast needs the API key
// connection, which the host attaches; the key shows nowhere else (logs,
// GraphQL answers, metrics, the audit trails, the module's request); every
// fetch is audited without its query; disconnect and uninstall delete the
// key.
func TestWeatherNetworkE2E(t *testing.T) {
	service, caFile := startWeather(t, "wk_e2e_")

	pub := NewPublisher(t)
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "weather.db")
	h := &host{Server: Start(t, dsn, pub.Dir, "--log-level", "debug", "--egress-allow-private", "127.0.0.0/8,::1", "--egress-ca", caFile), pub: pub}
	c := h.user(t, "alice", false)
	var answers []string // every GraphQL answer, for the secret's absence
	do := func(query string, vars map[string]any) (map[string]json.RawMessage, []GQLError) {
		data, errs := c.Do(t, query, vars)
		b, _ := json.Marshal(map[string]any{"data": data, "errors": errs})
		answers = append(answers, string(b))
		return data, errs
	}
	must := func(query string, vars map[string]any, v any) {
		t.Helper()
		data, errs := do(query, vars)
		if len(errs) > 0 {
			t.Fatalf("%s: %+v", query, errs)
		}
		if v != nil {
			b, _ := json.Marshal(data)
			json.Unmarshal(b, v)
		}
	}
	fail := func(reason, query string, vars map[string]any) GQLError {
		t.Helper()
		for range 100 { // the module may still be compiling
			_, errs := do(query, vars)
			if len(errs) == 1 && errs[0].Extensions["reason"] == "busy" {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if len(errs) != 1 || errs[0].Extensions["reason"] != reason {
				t.Fatalf("%s: %+v, want CAPABILITY_FAILED %s", query, errs, reason)
			}
			return errs[0]
		}
		t.Fatalf("%s: still busy", query)
		return GQLError{}
	}

	m, files := weatherPlugin(t, service)
	var inst struct {
		InstallPlugin struct{ ID string } `json:"installPlugin"`
	}
	must(installMutation, map[string]any{"p": pub.Sign(t, m, files)}, &inst)
	var created struct {
		CreateInstance struct{ ID string } `json:"createInstance"`
	}
	must(instanceMutation, map[string]any{"i": inst.InstallPlugin.ID, "n": "Home"}, &created)
	id := created.CreateInstance.ID
	must(`mutation($i:ID!,$v:JSON!){storageCreate(instanceId:$i,namespace:"settings",key:"service",value:$v){summary}}`,
		map[string]any{"i": id, "v": service.URL}, nil)
	const invoke = `mutation($i:ID!,$c:String!,$a:JSON){invoke(instanceId:$i,capability:$c,arguments:$a){summary data}}`
	lookup := map[string]any{"i": id, "c": "weather.lookup", "a": map[string]any{"city": "Oslo"}}

	// Without the grant, nothing is fetched; the refusal names the request
	// and its host.
	serviceHost := strings.TrimPrefix(service.URL, "https://")
	if e := fail("network_denied", invoke, lookup); !strings.Contains(e.Message, "network grant") || e.Extensions["request"] != "now" || e.Extensions["host"] != serviceHost {
		t.Fatalf("without the grant: %s %v", e.Message, e.Extensions)
	}
	must(`mutation($i:ID!){setInstanceGrant(instanceId:$i,permission:"network",granted:true){grants}}`, map[string]any{"i": id}, nil)
	var looked struct {
		Invoke struct {
			Summary string
			Data    struct {
				City        string
				Temperature float64
				Sky         string
			}
		}
	}
	for range 100 {
		data, errs := do(invoke, lookup)
		if len(errs) == 1 && errs[0].Extensions["reason"] == "busy" {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if len(errs) > 0 {
			t.Fatalf("lookup: %+v", errs)
		}
		b, _ := json.Marshal(data)
		json.Unmarshal(b, &looked)
		break
	}
	direct := fetchDirect(t, service, "/v1/current?city=Oslo", "")
	if looked.Invoke.Data.City != "Oslo" || looked.Invoke.Data.Temperature != direct["temperature"] || looked.Invoke.Data.Sky != direct["sky"] {
		t.Fatalf("lookup answered %+v; the service says %v", looked.Invoke, direct)
	}

	// The forecast needs the key: not connected, then a wrong key (the
	// service's 401 reaches the module), then the right one.
	forecast := map[string]any{"i": id, "c": "weather.forecast", "a": map[string]any{"city": "Oslo"}}
	if e := fail("connection_required", invoke, forecast); !strings.Contains(e.Message, "weatherkey") || e.Extensions["request"] != "forecast" || e.Extensions["host"] != serviceHost {
		t.Fatalf("not connected: %s %v", e.Message, e.Extensions)
	}
	const connect = `mutation($i:ID!,$k:String!){connectApiKey(instanceId:$i,connection:"weatherkey",key:$k){id manifestId connected account}}`
	must(connect, map[string]any{"i": id, "k": "wk_wrong"}, nil)
	fail("exit", invoke, forecast)
	must(connect, map[string]any{"i": id, "k": service.Key}, nil)
	var fc struct {
		Invoke struct {
			Summary string
			Data    struct{ Days []map[string]any }
		}
	}
	must(invoke, forecast, &fc)
	if len(fc.Invoke.Data.Days) != 3 || !strings.HasPrefix(fc.Invoke.Summary, "Oslo: ") {
		t.Fatalf("forecast: %+v", fc.Invoke)
	}

	// What the user sees of the connection and the fetches.
	var seen struct {
		Instance struct {
			Connections []struct {
				ManifestID string
				Connected  bool
			}
			Fetches struct {
				Nodes []struct {
					ID, Capability, Host, Method, Outcome string
					Status                                int
					Connection                            *string
				}
			}
		}
	}
	must(`query($i:ID!){instance(id:$i){connections{manifestId connected account expiresAt} fetches(first:10){nodes{id capability host method status outcome connection bytesSent bytesReceived durationMs at}}}}`,
		map[string]any{"i": id}, &seen)
	if len(seen.Instance.Connections) != 1 || !seen.Instance.Connections[0].Connected || seen.Instance.Connections[0].ManifestID != "weatherkey" {
		t.Fatalf("connections: %+v", seen.Instance.Connections)
	}
	host := strings.TrimPrefix(service.URL, "https://")
	if f := seen.Instance.Fetches.Nodes; len(f) != 3 || f[0].Capability != "weather.forecast" || f[0].Status != 200 || f[0].Connection == nil ||
		f[1].Status != 401 || f[2].Capability != "weather.lookup" || f[2].Host != host || f[2].Method != "GET" || f[2].Outcome != "ok" || f[2].Connection != nil {
		t.Fatalf("fetches: %+v", f)
	}
	var node struct {
		Node struct{ ID, Host string }
	}
	must(`query($n:ID!){node(id:$n){id ...on FetchRecord{host}}}`, map[string]any{"n": seen.Instance.Fetches.Nodes[2].ID}, &node)
	if node.Node.ID != seen.Instance.Fetches.Nodes[2].ID || node.Node.Host != host {
		t.Fatalf("node of a fetch record: %+v", node.Node)
	}

	// The key is nowhere but sealed in its row.
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metricsText), `pluginhost_capability_fetches_total{outcome="ok"} 3`) {
		t.Errorf("metrics do not count the 3 fetches")
	}
	db, err := database.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	for _, table := range []string{"storage_audit", "fetch_audit", "installation_credentials", "storage_items", "oauth_states"} {
		var rows []map[string]any
		db.Read.Table(table).Find(&rows)
		tables = append(tables, fmt.Sprint(rows))
	}
	for where, text := range map[string]string{
		"the server log": h.Log(), "a GraphQL answer": strings.Join(answers, "\n"), "/metrics": string(metricsText), "the database": strings.Join(tables, "\n"),
	} {
		if strings.Contains(text, service.Key) || strings.Contains(text, "wk_wrong") {
			t.Errorf("the API key shows in %s", where)
		}
		if where != "a GraphQL answer" && where != "the database" && strings.Contains(text, "city=Oslo") {
			t.Errorf("a fetch's query shows in %s", where)
		}
	}
	if n := testenv.Count(t, db.Read, "installation_credentials", "instance_id = ?", id); n != 1 {
		t.Fatalf("%d credentials, want 1", n)
	}

	// Disconnect deletes it; so does uninstall, after connecting again.
	must(`mutation($i:ID!){disconnect(instanceId:$i,connection:"weatherkey")}`, map[string]any{"i": id}, nil)
	if n := testenv.Count(t, db.Read, "installation_credentials", "instance_id = ?", id); n != 0 {
		t.Fatalf("%d credentials after disconnect", n)
	}
	fail("connection_required", invoke, forecast)
	must(connect, map[string]any{"i": id, "k": service.Key}, nil)
	must(`mutation($i:ID!){uninstallPlugin(installationId:$i)}`, map[string]any{"i": inst.InstallPlugin.ID}, nil)
	if n := testenv.Count(t, db.Read, "installation_credentials", "installation_id = ?", inst.InstallPlugin.ID); n != 0 {
		t.Fatalf("%d credentials after uninstall", n)
	}
}

// fetchDirect asks the weather service itself, trusting its CA.
func fetchDirect(t *testing.T, s *weatherserver.Server, path, key string) map[string]any {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfigFor(s)}}
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	if key != "" {
		req.Header.Set(weatherserver.KeyHeader, key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

func tlsConfigFor(s *weatherserver.Server) *tls.Config {
	return &tls.Config{RootCAs: s.CA.Pool()}
}

// Connecting from the web host: a screen whose source needs the key shows
// why it failed and the host's own connect banner; the key typed there is
// saved, the source runs again, and the page never holds the key after.
// /app/{instance} leads to the first screen (where an OAuth provider's
// return lands).
func TestWeatherConnectInBrowser(t *testing.T) {
	testenv.Chromium(t)
	service, caFile := startWeather(t, "wk_browser_")
	pub := NewPublisher(t)
	h := &host{Server: Start(t, "sqlite:"+filepath.Join(t.TempDir(), "weather.db"), pub.Dir,
		"--egress-allow-private", "127.0.0.0/8,::1", "--egress-ca", caFile), pub: pub}
	// An admin: the page API that reads events, state and context is an
	// admin's (runtime.js), as the inspector is.
	c := h.user(t, "alice", true)
	m, files := weatherPlugin(t, service)
	_, ids := installApp(t, h, c, m, files, 1)
	id := ids[0]
	c.Must(t, `mutation($i:ID!,$v:JSON!){storageCreate(instanceId:$i,namespace:"settings",key:"service",value:$v){summary}}`, map[string]any{"i": id, "v": service.URL}, nil)
	c.Must(t, `mutation($i:ID!){setInstanceGrant(instanceId:$i,permission:"network",granted:true){grants}}`, map[string]any{"i": id}, nil)
	if _, errs := retryWhileCompiling(t, c, `mutation($i:ID!){invoke(instanceId:$i,capability:"weather.lookup",arguments:{city:"Bern"}){summary}}`,
		map[string]any{"i": id}); len(errs) > 0 {
		t.Fatalf("lookup: %+v", errs)
	}

	p := openApp(t, c, "/app/"+id+"/week")
	p.Eval(`window.samePage = true`, nil)
	// The screen that needs the key says so in words, with the way to give it.
	waitText(p, "Connect Weather service key to use everything this plugin offers.")
	p.WaitFor(`window.pluginhostPreview.context().errors.days !== null`)
	if v := p.EvalString(`JSON.stringify(window.pluginhostPreview.context().connections)`); v != `{"weatherkey":{"connected":false,"label":"Weather service key","account":null}}` {
		t.Fatalf("context.connections: %s", v)
	}
	if strings.Contains(pageText(p), "CAPABILITY_FAILED") {
		t.Fatalf("a code in the page:\n%s", pageText(p))
	}

	// A wrong key: the provider refuses it, and the page says so where the
	// key was typed, with the field to type another; nothing else changed.
	p.TypeInto(`[data-ph-connect-key="weatherkey"]`, "wk_wrong")
	p.Click(`[data-ph-connect="weatherkey"]`)
	waitText(p, "Weather service key refused the key (HTTP 401). Enter a new key.")
	if n := p.EvalString(`String(document.body.innerText.split("refused the key").length - 1)`); n != "1" {
		t.Fatalf("the refusal is said %s times", n)
	}
	p.WaitFor(`document.querySelector('[data-ph-connect-key="weatherkey"]').getAttribute("aria-invalid") === "true"`)
	p.WaitFor(`document.activeElement === document.querySelector('[data-ph-connect-key="weatherkey"]')`)
	screenshot(t, p, "weather-key-refused")
	var conns struct {
		Instance struct {
			Connections []struct {
				Connected     bool
				RefusedStatus *int
			}
		}
	}
	c.Must(t, `query($i:ID!){instance(id:$i){connections{connected refusedStatus}}}`, map[string]any{"i": id}, &conns)
	if cs := conns.Instance.Connections; len(cs) != 1 || !cs[0].Connected || cs[0].RefusedStatus == nil || *cs[0].RefusedStatus != 401 {
		t.Fatalf("the refusal is not the connection's: %+v", cs)
	}
	// The right key, typed where the focus is, and Enter.
	p.Do("Input.insertText", map[string]any{"text": service.Key})
	p.Press("Enter", false)
	waitText(p, "Bern: ")
	waitUntil(p, `!document.querySelector('[data-ph-connection]') && !document.querySelector('[data-ph-retry]')`, 15*time.Second)
	if !p.EvalBool(`window.pluginhostPreview.context().connected === true && window.samePage === true`) {
		t.Fatal("context.connected is not true after connecting, or the page reloaded")
	}
	c.Must(t, `query($i:ID!){instance(id:$i){connections{connected refusedStatus}}}`, map[string]any{"i": id}, &conns)
	if cs := conns.Instance.Connections; cs[0].RefusedStatus != nil {
		t.Fatalf("the right key is still marked refused: %+v", cs)
	}
	if html := p.EvalString(`document.documentElement.outerHTML + JSON.stringify(window.pluginhostPreview.events())`); strings.Contains(html, service.Key) || strings.Contains(html, "wk_wrong") {
		t.Fatal("the page still holds a key")
	}
	screenshot(t, p, "weather-connected")

	// /app/{instance} leads to its first screen, with the query.
	p.Do("Page.navigate", map[string]any{"url": c.URL + "/app/" + id + "?connected=weatherkey"})
	waitUntil(p, `location.pathname === "/app/`+id+`/main" && location.search === "?connected=weatherkey"`, 15*time.Second)
}

// startWeather starts the example weather service on loopback with a fresh
// API key (keyPrefix and a time), until the test ends; it returns the
// service and the file of its CA, for --egress-ca.
func startWeather(t *testing.T, keyPrefix string) (*weatherserver.Server, string) {
	t.Helper()
	service, err := weatherserver.Start("127.0.0.1:0", keyPrefix+fmt.Sprint(time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { service.Close() })
	caFile := filepath.Join(t.TempDir(), "weather-ca.pem")
	if err := os.WriteFile(caFile, service.CA.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return service, caFile
}
