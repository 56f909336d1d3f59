package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"pluginhost/gqlhttp"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// limitsHost is a wired server on SQLite behind a loopback listener, with a
// log the tests read, and a user who has one Instance with stored items.
type limitsHost struct {
	URL      string
	env      *fixture.Env
	log      *testenv.Buffer
	token    string // alice's
	instance string // alice's Instance
	users    map[string]string
}

func newLimitsHost(t testing.TB, limits gqlhttp.Limits) *limitsHost {
	t.Helper()
	backend := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/limits.db"}
	logs := &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := fixture.New(t, backend, fixture.Limits(limits), fixture.Log(log))
	srv := httptest.NewServer(env.Server.Handler)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	h := &limitsHost{URL: srv.URL, env: env, log: logs, users: map[string]string{}}
	h.token = h.user(t, "alice")
	alice, _ := h.env.Auth.Authenticate(context.Background(), h.token)
	inst := h.env.Instance(t, alice, h.env.Install(t, alice, fixture.Manifest("com.test.limits", fixture.NS("n", 256*1024))))
	h.instance = inst.ID
	for i := range 4 {
		value := fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 8000))
		if _, err := h.env.Store.Create(context.Background(), models.Caller{UserID: alice.ID}, inst.ID, "n", fmt.Sprint("k", i), models.JSON(value)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// user creates a user and returns its token.
func (h *limitsHost) user(t testing.TB, name string) string {
	t.Helper()
	token, _, err := h.env.Auth.CreateToken(context.Background(), name, false)
	if err != nil {
		t.Fatal(err)
	}
	h.users[name] = token
	return token
}

// reply is an HTTP answer to a GraphQL request.
type reply struct {
	Status int
	Type   string
	Raw    string
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	HasData bool
}

func (r reply) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	s, _ := r.Errors[0].Extensions["code"].(string)
	return s
}

func (r reply) reason() string {
	if len(r.Errors) == 0 {
		return ""
	}
	s, _ := r.Errors[0].Extensions["reason"].(string)
	return s
}

// post sends a raw body to /graphql with alice's token.
func (h *limitsHost) post(t testing.TB, body string, header ...string) reply {
	t.Helper()
	req, _ := http.NewRequest("POST", h.URL+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.token)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return h.do(t, req)
}

func (h *limitsHost) do(t testing.TB, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Type: resp.Header.Get("Content-Type"), Raw: string(raw)}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("status %d: not JSON: %.300s", resp.StatusCode, raw)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(raw, &keys)
	_, r.HasData = keys["data"]
	return r
}

// query sends an operation with variables.
func (h *limitsHost) query(t testing.TB, q string, vars map[string]any) reply {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	return h.post(t, string(b))
}

// TestClientMistakesAreBadUserInput: a body the server cannot take is the
// client's mistake: BAD_USER_INPUT with a 4xx status (413 when too large),
// never INTERNAL, never a panic, and the body is not logged.
func TestClientMistakesAreBadUserInput(t *testing.T) {
	const maxBody, depth = 4096, 8
	h := newLimitsHost(t, gqlhttp.Limits{MaxBodyBytes: maxBody, MaxJSONDepth: depth})
	const secret = "s3cret-stored-value"
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	pad := func(total int) string {
		head := `{"query":"{viewer{id}}","variables":{"s":"` + secret
		return head + strings.Repeat("x", total-len(head)-3) + `"}}`
	}
	for _, tc := range []struct {
		name   string
		body   string
		header []string
		status int
		reason string
	}{
		{"a batch array", `[{"query":"{viewer{id}}"},{"query":"{viewer{id}}"}]`, nil, 400, "BATCH_NOT_SUPPORTED"},
		{"a trailing comma", `{"query":"{viewer{id}}", "variables": {"v":"` + secret + `",}}`, nil, 400, "INVALID_JSON"},
		{"NaN in variables", `{"query":"{viewer{id}}","variables":{"v":NaN}}`, nil, 400, "INVALID_JSON"},
		{"JSON nested at the depth limit", `{"query":"{viewer{id}}","variables":{"v":` + nest(depth-2) + `}}`, nil, 200, ""},
		{"JSON nested one past the depth limit", `{"query":"{viewer{id}}","variables":{"v":` + nest(depth-1) + `}}`, nil, 400, "JSON_TOO_DEEP"},
		{"JSON nested past the decoder's depth", `{"query":"{viewer{id}}","variables":{"v":` + nest(20000) + `}}`, nil, 413, "BODY_TOO_LARGE"},
		{"a body at the size limit", pad(maxBody), nil, 200, ""},
		{"a body one byte past the size limit", pad(maxBody + 1), nil, 413, "BODY_TOO_LARGE"},
		{"an empty body", ``, nil, 400, "MISSING_BODY"},
		{"no query", `{"variables":{}}`, nil, 400, "MISSING_QUERY"},
		{"a query that is not a string", `{"query":{"a":1}}`, nil, 400, "INVALID_PARAMETER"},
		{"variables that are not an object", `{"query":"{viewer{id}}","variables":[1]}`, nil, 400, "INVALID_PARAMETER"},
		{"two JSON values", `{"query":"{viewer{id}}"}{"query":"{viewer{id}}"}`, nil, 400, "INVALID_JSON"},
		{"no content type", `{"query":"{viewer{id}}"}`, []string{"Content-Type", ""}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"a form body", `query={viewer{id}}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"an Accept the server cannot answer", `{"query":"{viewer{id}}"}`, []string{"Accept", "text/html"}, 406, "NOT_ACCEPTABLE"},
		{"an integer literal past 64 bits", `{"query":"{storageItems(instanceId:\"x\", limit: 123456789012345678901234567890){summary}}"}`, nil, 200, "NUMBER_OUT_OF_RANGE"},
		{"a float literal past float64", `{"query":"{validateManifest(manifest: 1e400){valid}}"}`, nil, 200, "NUMBER_OUT_OF_RANGE"},
		{"a float literal past float64 in a list", `{"query":"{validateManifest(manifest: [1e400, -1e400]){valid}}"}`, nil, 200, "NUMBER_OUT_OF_RANGE"},
		{"the largest float literal", `{"query":"{validateManifest(manifest: 1.7976931348623157e308){valid}}"}`, nil, 200, ""},
		{"the largest integer literal", `{"query":"{validateManifest(manifest: {a: 9223372036854775807}){valid}}"}`, nil, 200, ""},
		{"an integer one past int64", `{"query":"{validateManifest(manifest: {a: 9223372036854775808}){valid}}"}`, nil, 200, "NUMBER_OUT_OF_RANGE"},
		{"a float past float64 in variables", `{"query":"query($m:JSON!){validateManifest(manifest:$m){valid}}","variables":{"m":1e400}}`, nil, 200, ""},
		{"an integer past 64 bits in an Int variable", `{"query":"query($l:Int){storageItems(instanceId:\"x\",limit:$l){summary}}","variables":{"l":123456789012345678901234567890}}`, nil, 200, "GRAPHQL_VALIDATION_FAILED"},
		{"an integer literal past 64 bits in a JSON argument", `{"query":"{validateManifest(manifest: {a: 123456789012345678901234567890}){valid}}"}`, nil, 200, "NUMBER_OUT_OF_RANGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.post(t, tc.body, tc.header...)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tc.status, r.Raw)
			}
			if tc.status == 200 && tc.reason == "" {
				if r.code() == string(models.ErrInternal) {
					t.Fatalf("INTERNAL: %.300s", r.Raw)
				}
				return
			}
			if r.code() != string(models.ErrBadUserInput) || r.reason() != tc.reason {
				t.Fatalf("code %s reason %s, want BAD_USER_INPUT %s: %.300s", r.code(), r.reason(), tc.reason, r.Raw)
			}
			if strings.Contains(r.Raw, secret) {
				t.Errorf("the answer quotes the body: %.300s", r.Raw)
			}
		})
	}
	logs := h.log.String()
	for _, bad := range []string{secret, "panic", "level=ERROR", "INTERNAL"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the log holds %q:\n%.2000s", bad, logs)
		}
	}
}

// aliases returns a selection of n aliased copies of field.
func aliases(n int, field string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d:%s ", i, field)
	}
	return b.String()
}

// TestQueryBounds: each bound on an operation holds at its limit and refuses
// one past it with BAD_USER_INPUT and the limit's reason, before the
// operation runs.
func TestQueryBounds(t *testing.T) {
	const (
		maxBytes  = 2000
		maxTokens = 300
		maxFields = 40
		maxCost   = 1200
	)
	h := newLimitsHost(t, gqlhttp.Limits{MaxQueryBytes: maxBytes, MaxQueryTokens: maxTokens, MaxQueryFields: maxFields, MaxQueryCost: maxCost})
	padTo := func(q string, n int) string { return q + strings.Repeat(" ", n-len(q)) }
	// {validateManifest(manifest:[]){valid}} is 12 tokens (the end of the
	// document is not counted), each list item one more.
	tokens := func(n int) string {
		return "{validateManifest(manifest:[" + strings.Repeat("1 ", n-12) + "]){valid}}"
	}
	fields := func(n int) string { return "{viewer{" + aliases(n-1, "id") + "}}" }
	// Via a fragment spread twice, the same fields count twice.
	fragments := func(n int) string {
		return "{viewer{...F ...F}} fragment F on User{" + aliases(n/2-1, "id") + "}"
	}
	// installations (20 assumed) of instances (10 assumed): 20*(1+10*(1+usage 16)) = 3420;
	// with limit arguments the cost follows them.
	for _, tc := range []struct {
		name, query, reason string
	}{
		{"a document at the length limit", padTo("{viewer{id}}", maxBytes), ""},
		{"a document one byte past the length limit", padTo("{viewer{id}}", maxBytes+1), "QUERY_TOO_LARGE"},
		{"a document at the token limit", tokens(maxTokens), ""},
		{"a document one token past the limit", tokens(maxTokens + 1), "QUERY_TOO_MANY_TOKENS"},
		{"an operation at the field limit", fields(maxFields), ""},
		{"an operation one field past the limit", fields(maxFields + 1), "QUERY_TOO_MANY_FIELDS"},
		{"fragments expanded past the field limit", fragments(maxFields + 2), "QUERY_TOO_MANY_FIELDS"},
		{"a list nested in a list, within the cost", "{installations{id instances{id}}}", ""}, // 20*(1+10) = 220
		{"lists nested five deep", "{installations{instances{installation{instances{installation{instances{installation{instances{id}}}}}}}}}", "QUERY_TOO_COSTLY"},
		// storageItems weighs 8+2*limit (100 by default), plus its result
		// object and evidence (limit entries): 309 each.
		{"storageItems within the cost limit", fmt.Sprintf(`{%s}`, aliases(maxCost/309, `storageItems(instanceId:"x"){summary evidence{key}}`)), ""},
		{"storageItems past the cost limit", fmt.Sprintf(`{%s}`, aliases(maxCost/309+1, `storageItems(instanceId:"x"){summary evidence{key}}`)), "QUERY_TOO_COSTLY"},
		{"storageItems with a small limit, many times", fmt.Sprintf(`{%s}`, aliases(10, `storageItems(instanceId:"x",limit:1){summary}`)), ""},
		{"storageItems with a variable limit", `query($l:Int){a:storageItems(instanceId:"x",limit:$l){summary} b:storageItems(instanceId:"x",limit:$l){summary}}`, ""},
		// A connection's edges and nodes are lists of first entries (20
		// by default): 1+first*(1+1+20 actions).
		{"a connection's page within the cost", `{notifications(first:50){edges{node{actions{id}}}}}`, ""},
		{"a connection's page past the cost", `{notifications(first:100){edges{node{actions{id}}}}}`, "QUERY_TOO_COSTLY"},
		{"a connection's default page", `{a:notifications{nodes{actions{id}}} b:notifications{edges{node{actions{id}}}}}`, ""},
		{"pluginStorageSnapshot twice", `{a:pluginStorageSnapshot(instanceId:"x") b:pluginStorageSnapshot(instanceId:"x")}`, ""},
		{"pluginStorageSnapshot three times", `{a:pluginStorageSnapshot(instanceId:"x") b:pluginStorageSnapshot(instanceId:"x") c:pluginStorageSnapshot(instanceId:"x")}`, "QUERY_TOO_COSTLY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.query(t, tc.query, nil)
			if tc.reason == "" {
				if r.reason() != "" && strings.HasPrefix(r.reason(), "QUERY_") {
					t.Fatalf("refused: %.300s", r.Raw)
				}
				return
			}
			if r.code() != string(models.ErrBadUserInput) || r.reason() != tc.reason {
				t.Fatalf("got %s %s, want BAD_USER_INPUT %s: %.300s", r.code(), r.reason(), tc.reason, r.Raw)
			}
		})
	}
}

// TestResponseBudget: an operation whose results would pass
// MaxResponseBytes is answered one error and no data; one within it runs.
func TestResponseBudget(t *testing.T) {
	// alice's Instance holds 4 items of about 8 KB: a snapshot is ~32 KB.
	const budget = 80 << 10
	h := newLimitsHost(t, gqlhttp.Limits{MaxResponseBytes: budget})
	snap := fmt.Sprintf(`pluginStorageSnapshot(instanceId:%q)`, h.instance)
	for _, tc := range []struct {
		name   string
		copies int
		refuse bool
	}{
		{"two snapshots, within the budget", 2, false},
		{"three snapshots, past the budget", 3, true},
		{"ten snapshots", 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.query(t, "{"+aliases(tc.copies, snap)+"}", nil)
			if !tc.refuse {
				if len(r.Errors) > 0 || len(r.Data) < 2*32000 {
					t.Fatalf("status %d: %.300s", r.Status, r.Raw)
				}
				return
			}
			if r.reason() != "RESPONSE_TOO_LARGE" || len(r.Errors) != 1 || r.HasData && string(r.Data) != "null" {
				t.Fatalf("got %s, %d errors: %.300s", r.reason(), len(r.Errors), r.Raw)
			}
			if len(r.Raw) > 4096 {
				t.Fatalf("the refusal has %d bytes", len(r.Raw))
			}
		})
	}
}

// stall opens a GraphQL POST with the token whose body announces length
// bytes and sends only its first bytes; the server holds it until the body
// read deadline. It returns the connection and a function that reads the
// server's answer's status line.
func (h *limitsHost) stall(t testing.TB, token string, length int) (net.Conn, func() string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	requests, bytes := h.env.Server.GraphQL.Limiter().InFlight()
	start := `{"query":`
	if len(start) >= length {
		start = start[:length-1]
	}
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", token, length, start)
	// Wait until the server holds it: admitted, its body's bytes reserved.
	for {
		r, b := h.env.Server.GraphQL.Limiter().InFlight()
		if r > requests && b >= bytes+int64(length) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return conn, func() string {
		conn.SetReadDeadline(time.Now().Add(time.Minute)) // a safety net, not a measure
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return "no answer: " + err.Error()
		}
		return strings.TrimSpace(line)
	}
}

// TestBodyReadDeadline: a client that sends its body slower than the read
// deadline gets 408 and its connection is closed; it cannot hold it open.
func TestBodyReadDeadline(t *testing.T) {
	h := newLimitsHost(t, gqlhttp.Limits{BodyReadTimeout: 200 * time.Millisecond})
	conn, answer := h.stall(t, h.token, 1000)
	// One byte at a time, as the attack did, until the server answers.
	done := make(chan string, 1)
	go func() { done <- answer() }()
	sent := 0
	var status string
trickle:
	for ; sent < 900; sent++ {
		select {
		case status = <-done:
			break trickle
		case <-time.After(20 * time.Millisecond):
			conn.Write([]byte(" "))
		}
	}
	if status == "" {
		status = <-done
	}
	if !strings.Contains(status, "408") {
		t.Fatalf("answer %q, want 408", status)
	}
	if sent >= 900 {
		t.Fatalf("the server waited for the whole body")
	}
	// A body sent in time is served.
	if r := h.query(t, "{viewer{id}}", nil); r.Status != 200 || len(r.Errors) > 0 {
		t.Fatalf("a normal request: %d %.200s", r.Status, r.Raw)
	}
}

// TestInFlightBounds: a user holds at most MaxInFlightPerUser requests at
// once (one past: 429), the server MaxInFlight (one past: 503), and the
// bodies held at once at most MaxInFlightBodyBytes (past: 503); another
// user is served while one user waits on its own bound.
func TestInFlightBounds(t *testing.T) {
	h := newLimitsHost(t, gqlhttp.Limits{MaxInFlightPerUser: 2, MaxInFlight: 4, InFlightWait: 100 * time.Millisecond,
		BodyReadTimeout: time.Minute, MaxBodyBytes: 8192, MaxInFlightBodyBytes: 3 * 8192})
	bob := h.user(t, "bob")
	carol := h.user(t, "carol")
	as := func(token string) reply {
		req, _ := http.NewRequest("POST", h.URL+"/graphql", strings.NewReader(`{"query":"{viewer{id}}"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		return h.do(t, req)
	}
	expect := func(step string, r reply, status int, reason string) {
		t.Helper()
		if r.Status != status || r.reason() != reason {
			t.Fatalf("%s: %d %s, want %d %s: %.200s", step, r.Status, r.reason(), status, reason, r.Raw)
		}
	}
	h.stall(t, h.token, 100)
	expect("alice at her limit", as(h.token), 200, "")
	h.stall(t, h.token, 100)
	expect("alice one past her limit", as(h.token), 429, "TOO_MANY_REQUESTS")
	expect("bob while alice waits", as(bob), 200, "")
	h.stall(t, bob, 100)
	expect("carol at the server's limit", as(carol), 200, "")
	h.stall(t, carol, 100)
	expect("carol one past the server's limit", as(carol), 503, "SERVER_BUSY")
}

// TestInFlightBodyBytes: bodies announced past the in-flight byte budget wait
// for it, then get 503; within it they are served.
func TestInFlightBodyBytes(t *testing.T) {
	h := newLimitsHost(t, gqlhttp.Limits{InFlightWait: 100 * time.Millisecond, BodyReadTimeout: time.Minute,
		MaxBodyBytes: 8192, MaxInFlightBodyBytes: 2 * 8192})
	bob := h.user(t, "bob")
	body := `{"query":"{viewer{id}}"}`
	// Its text and its decoded form: 3 values (object, key, string) of 64 bytes.
	need := len(body) + 3*64
	if r := h.post(t, `{"query":"{viewer{id}}","variables":{"v":[`+strings.Repeat("1,", 1000)+`1]}}`); r.Status != 413 || r.reason() != "BODY_TOO_LARGE" {
		t.Fatalf("a body whose decoded values pass the budget: %d %.200s", r.Status, r.Raw)
	}
	h.stall(t, h.token, 8192)
	h.stall(t, bob, 2*8192-8192-need)
	if r := h.post(t, body); r.Status != 200 {
		t.Fatalf("at the budget: %d %.200s", r.Status, r.Raw)
	}
	h.stall(t, bob, 1)
	if r := h.post(t, body); r.Status != 503 || r.reason() != "SERVER_BUSY" {
		t.Fatalf("one byte past the budget: %d %.200s", r.Status, r.Raw)
	}
}

// persisted sends an automatic persisted query: the hash, and the query
// text unless it is empty.
func (h *limitsHost) persisted(t testing.TB, query, hash string) reply {
	t.Helper()
	body := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}}
	if query != "" {
		body["query"] = query
	}
	b, _ := json.Marshal(body)
	return h.post(t, string(b))
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestAutomaticPersistedQueries: Apollo's convention, over POST and GET,
// with a cache bounded by bytes: an entry is cost 64 + hash + query.
func TestAutomaticPersistedQueries(t *testing.T) {
	q1 := "query One {viewer{id}}" + strings.Repeat(" ", 200)
	q2 := "query Two {viewer{name}}" + strings.Repeat(" ", 200)
	q3 := "query Three {viewer{admin}}"
	cost := func(q string) int64 { return int64(64 + 64 + len(q)) }
	h := newLimitsHost(t, gqlhttp.Limits{APQCacheBytes: cost(q1) + cost(q2)})
	ok := func(step string, r reply) {
		t.Helper()
		if r.Status != 200 || len(r.Errors) > 0 || !strings.Contains(string(r.Data), "viewer") {
			t.Fatalf("%s: %d %.300s", step, r.Status, r.Raw)
		}
	}
	notFound := func(step string, r reply) {
		t.Helper()
		if len(r.Errors) != 1 || r.Errors[0].Message != "PersistedQueryNotFound" || r.reason() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Fatalf("%s: %d %.300s", step, r.Status, r.Raw)
		}
	}
	notFound("an unknown hash", h.persisted(t, "", sha(q1)))
	ok("the query with its hash", h.persisted(t, q1, sha(q1)))
	ok("the hash alone, once known", h.persisted(t, "", sha(q1)))
	ext := url.QueryEscape(`{"persistedQuery":{"version":1,"sha256Hash":"` + sha(q1) + `"}}`)
	req, _ := http.NewRequest("GET", h.URL+"/graphql?extensions="+ext, nil)
	req.Header.Set("Authorization", "Bearer "+h.token)
	ok("the hash alone over GET", h.do(t, req))
	if r := h.persisted(t, q1, sha(q2)); r.reason() != "PERSISTED_QUERY_HASH_MISMATCH" {
		t.Fatalf("a hash that is not the query's: %.300s", r.Raw)
	}
	if r := h.persisted(t, "", "abc"); r.reason() != "PERSISTED_QUERY_INVALID" {
		t.Fatalf("a malformed hash: %.300s", r.Raw)
	}
	// The cache at its bound holds both queries; one more drops the least
	// recently used.
	ok("a second query", h.persisted(t, q2, sha(q2)))
	ok("the first, at the bound", h.persisted(t, "", sha(q1)))
	ok("the second, at the bound", h.persisted(t, "", sha(q2)))
	ok("a third query, past the bound", h.persisted(t, q3, sha(q3)))
	notFound("the least recently used, dropped", h.persisted(t, "", sha(q1)))
	ok("the most recently used, kept", h.persisted(t, "", sha(q3)))
	// A query refused by the bounds is not kept.
	long := "{viewer{id}}" + strings.Repeat(" ", gqlhttp.DefaultMaxQueryBytes)
	if r := h.persisted(t, long, sha(long)); r.reason() != "QUERY_TOO_LARGE" {
		t.Fatalf("a query past the length bound: %.300s", r.Raw)
	}
	notFound("the refused query", h.persisted(t, "", sha(long)))
}

// TestUserWorkRate: while another user is at work, a user spends work (10 a
// request, a unit a KiB of body, each operation's cost) within a burst, then
// waits for the rate, and is refused with 429 past InFlightWait; the other
// user is not held back. A user alone at work is not held back, nor charged.
func TestUserWorkRate(t *testing.T) {
	// A burst of 2*100 + 1024/1024 + 10 = 211 units, refilled at 1 a second.
	h := newLimitsHost(t, gqlhttp.Limits{UserWorkPerSecond: 1, MaxQueryCost: 100, MaxBodyBytes: 1024, InFlightWait: 50 * time.Millisecond})
	alice, bob := h.token, h.user(t, "bob")
	// 10 + 0 + 40 units: installations (20 assumed) of one object each, twice.
	body := `{"query":"{a:installations{id} b:installations{id}}"}`
	for i := range 8 { // 400 units, alone: past the burst, never held back
		if r := h.post(t, body); r.Status != 200 || len(r.Errors) > 0 {
			t.Fatalf("request %d alone: %d %.200s", i+1, r.Status, r.Raw)
		}
	}
	h.token = bob
	if r := h.post(t, body); r.Status != 200 || len(r.Errors) > 0 {
		t.Fatalf("another user: %d %.200s", r.Status, r.Raw)
	}
	h.token = alice // what she spent alone was not charged: a whole burst, then 429
	for i := range 4 {
		if r := h.post(t, body); r.Status != 200 || len(r.Errors) > 0 {
			t.Fatalf("request %d within the burst, bob at work: %d %.200s", i+1, r.Status, r.Raw)
		}
	}
	if r := h.post(t, body); r.Status != 429 || r.reason() != "TOO_MANY_REQUESTS" {
		t.Fatalf("past the burst with another user at work: %d %.200s", r.Status, r.Raw)
	}
	h.token = bob
	for i := range 3 { // bob's burst is his own
		if r := h.post(t, body); r.Status != 200 || len(r.Errors) > 0 {
			t.Fatalf("bob's request %d within his burst: %d %.200s", i+2, r.Status, r.Raw)
		}
	}
	if r := h.post(t, body); r.Status != 429 || r.reason() != "TOO_MANY_REQUESTS" {
		t.Fatalf("bob past his burst while alice is at work: %d %.200s", r.Status, r.Raw)
	}
}
