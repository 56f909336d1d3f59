package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"pluginhost/bundle"
	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
)

// binary is the pluginhost binary built once for all tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pluginhost-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "pluginhost")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "..")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build pluginhost:", err)
		os.Exit(2)
	}
	// Every server of the tests shares one compilation cache, so that a
	// module is compiled once, as replicas of one machine may share it.
	os.Setenv("PLUGINHOST_COMPILE_CACHE", filepath.Join(dir, "wazero-cache"))
	code := m.Run()
	browser.CloseShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the binary and returns its stdout; a failure fails the test.
func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := runErr(args...)
	if err != nil {
		t.Fatalf("pluginhost %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(args ...string) (string, error) {
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// Server is a running pluginhost serve process.
type Server struct {
	URL  string
	DSN  string
	Keys string // the --trusted-keys folder
	cmd  *exec.Cmd
	log  *testenv.Buffer
	done chan struct{}
}

// servingLine finds the listen address in a text or JSON log line.
var servingLine = regexp.MustCompile(`msg="pluginhost serving" addr=(\S+)|"msg":"pluginhost serving","addr":"([^"]+)"`)

// Start starts a server on a free port with the database and trusted keys
// folder; it is stopped when the test ends.
func Start(t testing.TB, dsn, keys string, extra ...string) *Server {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dsn, "--trusted-keys", keys, "--data-dir", keys}, extra...)
	cmd := exec.Command(binary, args...)
	stderr, _ := cmd.StderrPipe()
	s := &Server{DSN: dsn, Keys: keys, cmd: cmd, log: &testenv.Buffer{}, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.log.Write([]byte(line + "\n"))
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1] + m[2]:
				default:
				}
			}
		}
		cmd.Wait()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.done:
		t.Fatalf("server exited before serving:\n%s", s.log)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("server did not start:\n%s", s.log)
	}
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("server log:\n%s", s.log)
		}
	})
	return s
}

// Stop shuts the server down gracefully.
func (s *Server) Stop(t testing.TB) {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("server did not stop within 30 s of SIGTERM")
		<-s.done
	}
}

// Kill ends the server at once, as a crash would.
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// Log returns what the server logged.
func (s *Server) Log() string { return s.log.String() }

// Publisher is a publisher key pair in a folder that servers trust.
type Publisher struct {
	Dir    string
	Prefix string
	Key    ed25519.PrivateKey
}

// NewPublisher generates a key pair with pluginhost keygen in a fresh folder.
func NewPublisher(t testing.TB) *Publisher {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "publisher")
	run(t, "keygen", "--out", prefix)
	key, err := bundle.LoadPrivateKey(prefix + ".key")
	if err != nil {
		t.Fatal(err)
	}
	return &Publisher{Dir: dir, Prefix: prefix, Key: key}
}

// Sign builds a signed package of a manifest and extra files.
func (p *Publisher) Sign(t testing.TB, manifest any, files map[string]string) string {
	t.Helper()
	raw, _ := json.Marshal(manifest)
	all := map[string][]byte{"manifest.json": raw}
	for k, v := range files {
		all[k] = []byte(v)
	}
	pkg, err := bundle.Build(all, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pkg)
}

// Token creates a user's token with the CLI, against the server's database.
func Token(t testing.TB, dsn, user string, admin bool) string {
	args := []string{"token", "create", "--user", user, "--db", dsn}
	if admin {
		args = append(args, "--admin")
	}
	return strings.TrimSpace(run(t, args...))
}

// Client is an authenticated API client.
type Client struct {
	URL   string
	Token string
}

// GQLError is a GraphQL error.
type GQLError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// Code returns extensions.code.
func (e GQLError) Code() string { s, _ := e.Extensions["code"].(string); return s }

var httpClient = &http.Client{Timeout: 60 * time.Second}

// Do posts a GraphQL operation and returns data and errors.
func (c *Client) Do(t testing.TB, query string, vars map[string]any) (map[string]json.RawMessage, []GQLError) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", c.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []GQLError                 `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("status %d, body %s: %v", resp.StatusCode, raw, err)
	}
	return out.Data, out.Errors
}

// Send posts an operation and ignores its outcome (for a request whose server
// is about to be killed).
func (c *Client) Send(query string, vars map[string]any) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", c.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if resp, err := httpClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// Must runs an operation that must succeed and decodes its data into v.
func (c *Client) Must(t testing.TB, query string, vars map[string]any, v any) {
	t.Helper()
	data, errs := c.Do(t, query, vars)
	if len(errs) > 0 {
		t.Fatalf("%s: %+v", query, errs)
	}
	if v != nil {
		raw, _ := json.Marshal(data)
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
}

// Fail runs an operation that must fail with the code, and returns the error.
func (c *Client) Fail(t testing.TB, code, query string, vars map[string]any) GQLError {
	t.Helper()
	_, errs := c.Do(t, query, vars)
	if len(errs) == 0 {
		t.Fatalf("%s: succeeded, want %s", query, code)
	}
	if errs[0].Code() != code || errs[0].Message == "" {
		t.Fatalf("%s: got %s %q, want %s", query, errs[0].Code(), errs[0].Message, code)
	}
	return errs[0]
}

// REST sends a request and returns the status and decoded JSON body.
func (c *Client) REST(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, c.URL+path, rd)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// errorCode returns error.code of a REST error body.
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// host is a started server with a trusted publisher.
type host struct {
	*Server
	pub *Publisher
}

// newHost starts a server on the backend with a trusted publisher.
func newHost(t *testing.T, b testenv.Backend) *host {
	pub := NewPublisher(t)
	return &host{Server: Start(t, b.DSN, pub.Dir), pub: pub}
}

// user creates a user and returns its client.
func (h *host) user(t *testing.T, name string, admin bool) *Client {
	return &Client{URL: h.URL, Token: Token(t, h.DSN, name, admin)}
}

const (
	installMutation  = `mutation($p:String!){installPlugin(package:$p){id pluginId version generation storageVersion dataPolicy instances{id}}}`
	instanceMutation = `mutation($i:ID!,$n:String){createInstance(installationId:$i,name:$n){id name enabled storageRevision}}`
)

// install installs a manifest and creates n Instances; it returns the
// Installation id and the Instance ids.
func (h *host) install(t *testing.T, c *Client, manifest any, n int) (string, []string) {
	t.Helper()
	return installApp(t, h, c, manifest, nil, n)
}

func manifest(id string, namespaces ...map[string]any) map[string]any {
	ns := make([]any, len(namespaces))
	for i, n := range namespaces {
		ns[i] = n
	}
	return map[string]any{
		"id": id, "name": id, "version": "1.0.0", "schema_version": 2, "permissions": []any{"storage"},
		"data_policy": "retain", "storage": map[string]any{"version": 1, "namespaces": ns},
	}
}

func ns(id string, maxBytes int) map[string]any {
	return map[string]any{"id": id, "max_bytes": maxBytes}
}

// nodeWith returns the node command, once the npm packages of the folder dir
// (among them pkg) are installed; without them the test is skipped (or fails
// where services are required).
func nodeWith(t *testing.T, dir, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node")
	}
	if _, err := os.Stat(dir + "/node_modules/" + pkg); err != nil {
		testenv.Missing(t, "the npm packages of e2e/"+dir+" (run npm ci in e2e/"+dir+")")
	}
	return node
}
