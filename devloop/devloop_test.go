package devloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/capability"
	"pluginhost/database"
	"pluginhost/devloop"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
	"pluginhost/sandbox"
)

type world struct {
	env   *fixture.Env
	url   string
	admin string // an admin's token
	user  *models.User
}

func newWorld(t *testing.T) *world {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/dev.db"})
	srv := httptest.NewServer(env.Server.Handler)
	t.Cleanup(srv.Close)
	token, user, err := env.Auth.CreateToken(context.Background(), "author", true)
	if err != nil {
		t.Fatal(err)
	}
	return &world{env: env, url: srv.URL, admin: token, user: user}
}

// copyExample copies examples/notes out of the repository, without its
// built modules.
func copyExample(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "notes")
	if err := os.CopyFS(dir, os.DirFS("../examples/notes")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "capabilities"))
	return dir
}

func newEngine(t *testing.T) *sandbox.Engine {
	e, err := sandbox.New(context.Background(), t.TempDir(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// waitFor waits until the output holds want after the offset from, and
// returns the offset past it.
func waitFor(t *testing.T, out *testenv.Buffer, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		s := out.String()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the loop never printed %q; it printed:\n%s", want, out.String()[from:])
	return 0
}

// edit rewrites a file of the folder with old replaced by new, with a later
// modification time than any before.
func edit(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not hold %q", file, old)
	}
	if err := os.WriteFile(file, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sink keeps the changes the bus delivers.
type sink struct {
	mu   sync.Mutex
	seen []models.StorageChange
}

func (s *sink) Deliver(c models.StorageChange) {
	s.mu.Lock()
	s.seen = append(s.seen, c)
	s.mu.Unlock()
}

// wait returns the first change of the operation delivered.
func (s *sink) wait(t *testing.T, op string) models.StorageChange {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		for _, c := range s.seen {
			if c.Operation == op {
				s.mu.Unlock()
				return c
			}
		}
		s.mu.Unlock()
	}
	t.Fatalf("no %s change was delivered", op)
	return models.StorageChange{}
}

// instance is the id of the development Instance.
func (w *world) instance(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	installs, err := w.env.Life.Installations(ctx, w.user)
	if err != nil || len(installs) != 1 {
		t.Fatalf("installations: %+v %v", installs, err)
	}
	instances, err := w.env.Life.Instances(ctx, installs[0].ID)
	if err != nil || len(instances) != 1 {
		t.Fatalf("instances: %+v %v", instances, err)
	}
	return instances[0].ID
}

// summary invokes notes.summary on the development Instance.
func (w *world) summary(t *testing.T) string {
	t.Helper()
	res, err := w.env.Runs.Run(context.Background(), capability.Call{Caller: models.Caller{UserID: w.user.ID}, InstanceID: w.instance(t),
		Capability: "notes.summary", Arguments: models.JSON(`{}`), Trigger: sandbox.TriggerInvoke})
	if err != nil {
		t.Fatalf("invoke notes.summary: %v", err)
	}
	return res.Summary
}

// run runs the loop until the test ends.
func run(t *testing.T, l *devloop.Loop) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the loop ended with %v", err)
		}
	})
}

// The author's loop: the folder is built, validated, signed with a
// development key the server is asked to trust, and installed with an
// Instance; a change that breaks the build or the validation is shown with
// its cause (a config's JSON Pointer) and the last good version keeps
// running; a good change updates the plugin, as a higher dev version and a
// new generation.
func TestLoop(t *testing.T) {
	w := newWorld(t)
	dir := copyExample(t)
	out := &testenv.Buffer{}
	run(t, &devloop.Loop{Dir: dir, Server: w.url, Token: w.admin, Engine: newEngine(t), Out: out})

	at := waitFor(t, out, 0, "the server trusts the development key")
	at = waitFor(t, out, at, "installed com.example.notes 1.0.0-dev.1 (generation 1)")
	at = waitFor(t, out, at, "its screen: "+w.url+"/app/inst_")
	if _, err := os.Stat(filepath.Join(dir, devloop.StateDir, "dev.key")); err != nil {
		t.Fatalf("no development key: %v", err)
	}
	if got := w.summary(t); got != "0 notes, 0 words" {
		t.Fatalf("the installed summary says %q", got)
	}
	// The open pages of the Instance hear about changes that fail.
	notices := &sink{}
	w.env.Bus.Watch(w.instance(t), notices)

	// A source that does not compile: the error, and 1.0.0-dev.1 keeps running.
	src := filepath.Join(dir, "src", "summary", "main.go")
	edit(t, src, `"%d notes, %d words"`, `"%d notes, %d words", undefinedName`)
	at = waitFor(t, out, at, "NOT UPDATED: build:")
	at = waitFor(t, out, at, "the server keeps running com.example.notes 1.0.0-dev.1; fix the folder and save again")
	if !strings.Contains(out.String(), "undefined: undefinedName") {
		t.Fatalf("the compiler's message is not shown:\n%s", out.String())
	}
	if c := notices.wait(t, models.OpDevelopment); c.Message == nil || !strings.Contains(*c.Message, "undefined: undefinedName") {
		t.Fatalf("the open pages were told %+v", c)
	}
	if got := w.summary(t); got != "0 notes, 0 words" {
		t.Fatalf("after a broken change the summary says %q", got)
	}

	// A config that breaks a rule: shown with its file and pointer. (The
	// config is broken before the source is fixed: a try between the two
	// saves fails too.)
	config := filepath.Join(dir, "ui", "main.json")
	edit(t, config, `"type"`, `"typo"`)
	edit(t, src, `"%d notes, %d words", undefinedName`, `"%d notes and %d words"`)
	at = waitFor(t, out, at, "error   ui/main.json /")
	at = waitFor(t, out, at, "the server keeps running com.example.notes 1.0.0-dev.1")

	// Fixed: updated, as the next dev version and a new generation.
	edit(t, config, `"typo"`, `"type"`)
	at = waitFor(t, out, at, "updated com.example.notes 1.0.0-dev.2 (generation 2)")
	if got := w.summary(t); got != "0 notes and 0 words" {
		t.Fatalf("after the update the summary says %q", got)
	}
	_ = at
}

// Every way an editor saves is seen, watched (inotify, on Linux) or
// polled: a file written in place, written in several writes, replaced by
// another renamed over it, and a file in a folder made after the loop
// started; dot files (an editor's swap files) are not changes. What is
// installed is the folder as it was saved last.
func TestLoopSaves(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "polled"}[poll], func(t *testing.T) {
			w := newWorld(t)
			dir := copyExample(t)
			out := &testenv.Buffer{}
			run(t, &devloop.Loop{Dir: dir, Server: w.url, Token: w.admin, Engine: newEngine(t), Poll: poll, Out: out})
			at := waitFor(t, out, 0, "1.0.0-dev.1 (generation 1)")
			config := filepath.Join(dir, "ui", "main.json")
			notes := filepath.Join(dir, "notes")
			for i, save := range []struct {
				name   string
				config bool // the save is of the config, whose description is installed
				save   func(t *testing.T, description string)
			}{
				{"in place", true, func(t *testing.T, description string) {
					if err := os.WriteFile(config, described(t, config, description), 0o644); err != nil {
						t.Fatal(err)
					}
				}},
				{"in several writes", true, func(t *testing.T, description string) {
					b := described(t, config, description)
					f, err := os.OpenFile(config, os.O_WRONLY|os.O_TRUNC, 0)
					if err != nil {
						t.Fatal(err)
					}
					for len(b) > 0 {
						k := min(len(b), 64)
						if _, err := f.Write(b[:k]); err != nil {
							t.Fatal(err)
						}
						b = b[k:]
					}
					if err := f.Close(); err != nil {
						t.Fatal(err)
					}
				}},
				{"renamed over", true, func(t *testing.T, description string) {
					tmp := filepath.Join(filepath.Dir(config), ".main.json.tmp")
					if err := os.WriteFile(tmp, described(t, config, description), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, config); err != nil {
						t.Fatal(err)
					}
				}},
				{"in a new folder", false, func(t *testing.T, description string) {
					if err := os.Mkdir(notes, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(notes, "todo.md"), []byte(description), 0o644); err != nil {
						t.Fatal(err)
					}
				}},
				{"in that folder", false, func(t *testing.T, description string) {
					// Seen only when the folder made after the loop started is
					// watched too.
					if err := os.WriteFile(filepath.Join(notes, "todo.md"), []byte(description), 0o644); err != nil {
						t.Fatal(err)
					}
				}},
			} {
				// A dot file alone is no change.
				if err := os.WriteFile(filepath.Join(dir, "ui", ".main.json.swp"), []byte(save.name), 0o644); err != nil {
					t.Fatal(err)
				}
				description := "Saved " + save.name
				save.save(t, description)
				n := i + 2
				at = waitFor(t, out, at, fmt.Sprintf("updated com.example.notes 1.0.0-dev.%d (generation %d)", n, n))
				if got := w.config(t); save.config && !strings.Contains(got, description) {
					t.Fatalf("saved %s, the installed config is %s", save.name, got)
				}
			}
		})
	}
}

// Folders made and removed at once in a watched folder are no reason to
// stop watching it; the folder itself moved away and back can no longer
// be watched: the loop says so and polls it, and goes on updating the
// plugin.
func TestLoopFolderMoved(t *testing.T) {
	w := newWorld(t)
	dir := copyExample(t)
	out := &testenv.Buffer{}
	run(t, &devloop.Loop{Dir: dir, Server: w.url, Token: w.admin, Engine: newEngine(t), Out: out})
	at := waitFor(t, out, 0, "1.0.0-dev.1 (generation 1)")
	if !strings.Contains(out.String(), "watching "+dir+";") {
		t.Skipf("the folder is polled here:\n%s", out.String())
	}
	config := filepath.Join(dir, "ui", "main.json")
	for i := range 20 {
		tmp := filepath.Join(dir, fmt.Sprint("tmp", i))
		if err := os.MkdirAll(filepath.Join(tmp, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(tmp); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(config, described(t, config, "Saved after folders came and went"), 0o644); err != nil {
		t.Fatal(err)
	}
	at = waitFor(t, out, at, "updated com.example.notes 1.0.0-dev.2 (generation 2)")
	if strings.Contains(out.String(), "can no longer be watched") {
		t.Fatalf("folders made and removed stopped the watch:\n%s", out.String())
	}

	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	at = waitFor(t, out, at, "can no longer be watched")
	if err := os.WriteFile(config, described(t, config, "Saved after the move"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, at, "updated com.example.notes 1.0.0-dev.3 (generation 3)")
}

// described is the config with its description set.
func described(t *testing.T, config, description string) []byte {
	t.Helper()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c["description"] = description
	b, err = json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// config is the installed config of the development Instance's screen.
func (w *world) config(t *testing.T) string {
	t.Helper()
	var rows []database.ExtensionConfigRow
	if err := w.env.DB.Read.Order("generation DESC").Find(&rows).Error; err != nil || len(rows) == 0 {
		t.Fatalf("extension configs: %v %v", rows, err)
	}
	return rows[0].Config
}

// Without an admin's token the key cannot be trusted: the install is
// refused, and the loop names the step that trusts the key (not "fix the
// folder"); done as printed, the next try installs.
func TestLoopUntrustedKey(t *testing.T) {
	w := newWorld(t)
	token, _, err := w.env.Auth.CreateToken(context.Background(), "author2", false)
	if err != nil {
		t.Fatal(err)
	}
	out := &testenv.Buffer{}
	dir := copyExample(t)
	l := &devloop.Loop{Dir: dir, Server: w.url, Token: token, Engine: newEngine(t), Out: out}
	if err := l.Once(context.Background()); err == nil {
		t.Fatalf("installed with an untrusted key:\n%s", out.String())
	}
	said := out.String()
	for _, want := range []string{"cannot make the server trust the development key (admins only)",
		"NOT UPDATED: the server refused com.example.notes 1.0.0-dev.1: PACKAGE_REJECTED", "nothing of it is installed yet",
		"The server does not trust the development key", "curl -sS " + w.url + "/graphql -H 'Authorization: Bearer ADMIN_TOKEN'",
		`trustPublisherKey(publicKey: \"ed25519:`, filepath.Join(dir, devloop.StateDir, "dev.pub") + " to the server's --trusted-keys folder"} {
		if !strings.Contains(said, want) {
			t.Errorf("the loop did not say %q:\n%s", want, said)
		}
	}
	if strings.Contains(said, "fix the folder") {
		t.Errorf("the loop blames the folder for the server's trust:\n%s", said)
	}
	// The step as printed, by an admin: the body after --data.
	_, body, ok := strings.Cut(said, "--data '")
	body, _, _ = strings.Cut(body, "'\n")
	if !ok {
		t.Fatalf("no --data in:\n%s", said)
	}
	req, _ := http.NewRequest(http.MethodPost, w.url+"/graphql", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+w.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(answer), `"trustPublisherKey":"`) {
		t.Fatalf("the printed step failed: %s", answer)
	}
	if err := l.Once(context.Background()); err != nil {
		t.Fatalf("not installed once the key is trusted: %v\n%s", err, out.String())
	}
}

// The loop applies the build's path rules before it reads or writes
// anything: a module path out of the folder, and a key folder that is a
// symbolic link out of it, are refused, and nothing is written outside.
func TestLoopStaysInTheFolder(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, dir, outside string)
		want   string
	}{
		{"a module two levels up", func(t *testing.T, dir, outside string) {
			edit(t, filepath.Join(dir, "manifest.json"), `"capabilities/summary.wasm"`, `"capabilities/../../x.wasm"`)
		}, `/capabilities/0/module: "capabilities/../../x.wasm" is not a clean relative path`},
		{"a source out of the folder", func(t *testing.T, dir, outside string) {
			edit(t, filepath.Join(dir, "manifest.json"), `"src/summary"`, `"../x"`)
		}, `/capabilities/0/source: "../x" is not a clean relative path`},
		{"a key folder that is a symbolic link out", func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, devloop.StateDir)); err != nil {
				t.Fatal(err)
			}
		}, ".pluginhost is a symbolic link out of the plugin folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyExample(t)
			outside := filepath.Join(t.TempDir(), "outside")
			os.MkdirAll(outside, 0o755)
			tt.change(t, dir, outside)
			out := &testenv.Buffer{}
			l := &devloop.Loop{Dir: dir, Server: w.url, Token: w.admin, Engine: newEngine(t), Out: out}
			err := l.Once(context.Background())
			if err == nil || !strings.Contains(err.Error()+out.String(), tt.want) {
				t.Fatalf("got %v, want an error saying %q:\n%s", err, tt.want, out.String())
			}
			if entries, _ := os.ReadDir(outside); len(entries) > 0 {
				t.Fatalf("the loop wrote %s outside the folder", entries[0].Name())
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(dir)), "x.wasm")); err == nil {
				t.Fatal("the loop wrote a module two levels up")
			}
		})
	}
}
