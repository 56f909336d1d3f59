package e2e

import (
	"bufio"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// scrape reads /metrics into series ("name{labels}") and values.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// idLike finds an id of the host in a label value.
var idLike = regexp.MustCompile(`"(usr|inst|instl|tok)_[a-z0-9]{10,}"`)

// TestOperatorMetrics: after real operations, /metrics counts them with
// bounded labels: websockets and subscriptions open, storage operations by
// operation and code, quota and permission refusals by who asked, image proxy
// outcomes by reason, AI calls, the database pools and the build.
func TestOperatorMetrics(t *testing.T) {
	h := newHost(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	// Before anything happens, the families are there at zero.
	fresh := scrape(t, h.URL)
	for _, series := range []string{
		`pluginhost_storage_operations_total{code="OK",operation="create"}`,
		`pluginhost_image_proxy_requests_total{outcome="ok"}`,
		`pluginhost_capability_runs_total{kind="tool",outcome="ok"}`,
		`pluginhost_capability_memory_bytes`,
		`pluginhost_capability_instances_replaced_total`,
	} {
		if v, ok := fresh[series]; !ok || v != 0 {
			t.Errorf("a fresh server's %s = %v (present %v), want 0", series, v, ok)
		}
	}
	alice, bob := h.user(t, "alice", false), h.user(t, "bob", false)
	withNet := manifest("com.test.metrics", ns("n", 64))
	withNet["permissions"] = []any{"storage", "network"}
	_, ids := h.install(t, alice, withNet, 2)
	create := `mutation($i:ID!,$k:String!,$v:JSON!){storageCreate(instanceId:$i,namespace:"n",key:$k,value:$v){summary}}`
	alice.Must(t, create, map[string]any{"i": ids[0], "k": "a", "v": 1}, nil)
	alice.Fail(t, "PLUGIN_STORAGE_CONFLICT", create, map[string]any{"i": ids[0], "k": "a", "v": 2})
	alice.Fail(t, "PLUGIN_STORAGE_QUOTA_EXCEEDED", create, map[string]any{"i": ids[0], "k": "big", "v": strings.Repeat("x", 100)})
	bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", create, map[string]any{"i": ids[0], "k": "b", "v": 1})
	alice.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", `mutation{aiInvoke(handle:"aih1_forged",arguments:{}){summary}}`, nil)
	path := "/v1/plugin-instances/" + ids[0] + "/ui-images:fetch"
	if status, _ := alice.REST(t, "POST", path, map[string]any{"url": "https://example.com/x.png"}); status != 403 {
		t.Fatalf("image without a grant: %d", status)
	}
	alice.Must(t, `mutation($i:ID!){setInstanceGrant(instanceId:$i,permission:"network",granted:true){grants}}`, map[string]any{"i": ids[0]}, nil)
	if status, _ := alice.REST(t, "POST", path, map[string]any{"url": "http://example.com/x.png"}); status != 422 {
		t.Fatalf("http image: %d", status)
	}
	ws := DialWS(t, h.URL, transportWS)
	ws.Init(alice.Token)
	ws.Subscribe("s", ids[1])
	ws.Change("s")

	m := scrape(t, h.URL)
	for _, tt := range []struct {
		series string
		want   float64
	}{
		{`pluginhost_storage_operations_total{code="OK",operation="create"}`, 1},
		{`pluginhost_storage_operations_total{code="PLUGIN_STORAGE_CONFLICT",operation="create"}`, 1},
		{`pluginhost_storage_operations_total{code="PLUGIN_STORAGE_QUOTA_EXCEEDED",operation="create"}`, 1},
		{`pluginhost_storage_operations_total{code="PLUGIN_STORAGE_PERMISSION_DENIED",operation="create"}`, 1},
		{`pluginhost_refusals_total{by="user",kind="quota"}`, 1},
		{`pluginhost_refusals_total{by="user",kind="permission"}`, 1},
		{`pluginhost_refusals_total{by="ai",kind="permission"}`, 1},
		{`pluginhost_refusals_total{by="image_proxy",kind="permission"}`, 1},
		{`pluginhost_ai_calls_total{code="PLUGIN_STORAGE_PERMISSION_DENIED",tool="other"}`, 1},
		{`pluginhost_image_proxy_requests_total{outcome="not_https"}`, 1},
		{`pluginhost_websocket_connections`, 1},
		{`pluginhost_subscriptions`, 1},
		{`go_sql_max_open_connections{db_name="write"}`, -1}, // present
		{`go_sql_open_connections{db_name="write"}`, -1},
	} {
		got, ok := m[tt.series]
		if !ok || tt.want >= 0 && got != tt.want {
			t.Errorf("%s = %v (present: %t), want %v", tt.series, got, ok, tt.want)
		}
	}
	build := ""
	for s, v := range m {
		if strings.HasPrefix(s, "pluginhost_build_info{") && v == 1 {
			build = s
		}
		if strings.HasPrefix(s, "pluginhost_") && idLike.MatchString(s) {
			t.Errorf("a label holds an id: %s", s)
		}
	}
	if !strings.Contains(build, `version="`+models.HostVersion+`"`) || !strings.Contains(build, `goversion="go`) || !strings.Contains(build, `revision="`) {
		t.Errorf("build info %q", build)
	}

	ws.Stop("s")
	ws.conn.Close()
	for i := 0; ; i++ { // the server notices the close asynchronously
		m = scrape(t, h.URL)
		if m["pluginhost_websocket_connections"] == 0 && m["pluginhost_subscriptions"] == 0 {
			break
		}
		if i == 500 {
			t.Fatalf("after the client left: %v websockets, %v subscriptions", m["pluginhost_websocket_connections"], m["pluginhost_subscriptions"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
