package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pluginhost/sandbox"
)

// TestAccessLog: with --log-format json every log line is a JSON object, every
// request gets one access line (method, route pattern, status, duration, user,
// request id) whose request id is the X-Request-Id of its response, and
// nothing of the run's log holds the token or a stored value, whichever way
// they travelled (header, body, query string). The log also says how kept
// capability instances are restored on this system.
func TestAccessLog(t *testing.T) {
	pub := NewPublisher(t)
	dsn := "sqlite:" + t.TempDir() + "/ph.db"
	h := &host{Server: Start(t, dsn, pub.Dir, "--log-format", "json"), pub: pub}
	alice := h.user(t, "alice", false)
	_, ids := h.install(t, alice, manifest("com.test.logs", ns("n", 4096)), 1)
	const stored = "stored-value-7f3a9c"
	alice.Must(t, `mutation($i:ID!,$v:JSON!){storageCreate(instanceId:$i,namespace:"n",key:"k",value:$v){summary}}`,
		map[string]any{"i": ids[0], "v": map[string]any{"text": stored}}, nil)
	var viewer struct{ Viewer struct{ ID string } }
	alice.Must(t, `{viewer{id}}`, nil, &viewer)

	// A query whose variables hold the value travels in the URL.
	q := url.Values{"query": {`query($i:ID!,$q:String){storageItems(instanceId:$i,namespace:"n",query:$q){summary}}`},
		"variables": {`{"i":"` + ids[0] + `","q":"` + stored + `"}`}}
	get, _ := http.NewRequest("GET", h.URL+"/graphql?"+q.Encode(), nil)
	get.Header.Set("Authorization", "Bearer "+alice.Token)
	get.Header.Set("X-Request-Id", "trace-from-proxy.1")
	resp, err := httpClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "trace-from-proxy.1" {
		t.Fatalf("GET /graphql: status %d, X-Request-Id %q; want 200 and the proxy's id echoed", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	// A request id that is not a plain token is replaced.
	bad, _ := http.NewRequest("GET", h.URL+"/healthz", nil)
	bad.Header.Set("X-Request-Id", "forged\" line="+stored)
	resp, err = httpClient.Do(bad)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	badID := resp.Header.Get("X-Request-Id")
	if badID == "" || strings.Contains(badID, "forged") {
		t.Fatalf("X-Request-Id %q: want a fresh id", badID)
	}
	// Unauthenticated and REST requests.
	if code, _ := (&Client{URL: h.URL, Token: "ph_not-a-token"}).REST(t, "DELETE", "/v1/plugin-instances/"+ids[0]+"/storage", nil); code != 401 {
		t.Fatalf("bad token: status %d", code)
	}
	if code, _ := alice.REST(t, "DELETE", "/v1/plugin-instances/"+ids[0]+"/storage", nil); code != 200 {
		t.Fatalf("reset: status %d", code)
	}
	h.Stop(t)

	log := h.Log()
	for _, secret := range []string{alice.Token, strings.TrimPrefix(alice.Token, "ph_"), stored} {
		if strings.Contains(log, secret) {
			t.Fatalf("the log holds %q:\n%s", secret, log)
		}
	}
	type line struct {
		Msg       string  `json:"msg"`
		Method    string  `json:"method"`
		Route     string  `json:"route"`
		Status    int     `json:"status"`
		Duration  float64 `json:"duration"`
		User      string  `json:"user"`
		RequestID string  `json:"request_id"`
		Restore   string  `json:"restore"`
	}
	var access []line
	restore := ""
	for _, raw := range strings.Split(strings.TrimSpace(log), "\n") {
		var l line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("not a JSON log line: %s", raw)
		}
		if l.Msg == "request" {
			access = append(access, l)
		}
		if l.Restore != "" {
			restore = l.Restore
		}
	}
	// The operator learns how kept capability instances are restored here.
	if mode, why := sandbox.RestoreMode(); restore != mode {
		t.Errorf("the log says instances are restored by %q; this system restores by %q (%s)", restore, mode, why)
	}
	want := []struct {
		method  string
		route   string
		status  int
		user    string
		request string
	}{
		{"POST", "/graphql", 200, viewer.Viewer.ID, ""},
		{"GET", "/graphql", 200, viewer.Viewer.ID, "trace-from-proxy.1"},
		{"GET", "GET /healthz", 200, "-", badID},
		{"DELETE", "DELETE /v1/plugin-instances/{instance_id}/storage", 401, "-", ""},
		{"DELETE", "DELETE /v1/plugin-instances/{instance_id}/storage", 200, viewer.Viewer.ID, ""},
	}
	for _, w := range want {
		found := false
		for _, l := range access {
			if l.Route == w.route && l.Status == w.status && l.User == w.user && (w.request == "" || l.RequestID == w.request) &&
				l.Method == w.method && l.RequestID != "" && l.Duration > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("no access line for %s %s %d by %s (request id %q) in:\n%+v", w.method, w.route, w.status, w.user, w.request, access)
		}
	}
}

// TestLogFormatRefused: a log format other than text or json stops the start,
// naming the flag or its environment twin.
func TestLogFormatRefused(t *testing.T) {
	dsn := "sqlite:" + t.TempDir() + "/ph.db"
	out, err := runErr("serve", "--addr", "127.0.0.1:0", "--db", dsn, "--log-format", "xml")
	if err == nil || !strings.Contains(out, "log-format") {
		t.Fatalf("--log-format xml: %v\n%s", err, out)
	}
}
