package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pluginhost/internal/browser"
	"pluginhost/internal/testenv"
	"pluginhost/pluginbuild"
)

// offlineEnv is the environment of an author who has Go (or clang) and the
// pluginhost binary only: no module proxy, an empty module cache and GOPATH,
// the local Go toolchain, no workspace. The build cache stays: it holds
// the standard library, which Go brings.
func offlineEnv(t testing.TB) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOPROXY", "GOFLAGS", "GOMODCACHE", "GOPATH", "GOWORK", "GOTOOLCHAIN", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOSUMDB":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-modcacherw",
		"GOMODCACHE="+t.TempDir(), "GOPATH="+t.TempDir())
}

// author runs a command in dir as the author would, offline; a failure
// fails the test.
func author(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// screenURL is the screen pluginhost dev prints.
var screenURL = regexp.MustCompile(`its screen: (http://\S+)`)

// An author with only Go, or clang and wasi-libc, and the binary: pluginhost
// new makes a folder outside any checkout that passes its own tests, builds,
// validates, packages and runs offline (no module proxy, an empty module
// cache), and installs under pluginhost dev, where its screen and home card
// show the tool's answer.
func TestNewPluginOffline(t *testing.T) {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	srv := Start(t, b.DSN, t.TempDir())
	admin := &Client{URL: srv.URL, Token: Token(t, b.DSN, "author", true)}
	for _, lang := range []string{"go", "c"} {
		t.Run(lang, func(t *testing.T) {
			if lang == "c" {
				if _, err := exec.LookPath("clang"); err != nil {
					testenv.Missing(t, "clang (apt-get install "+pluginbuild.CPackages+")")
				}
			}
			env := offlineEnv(t)
			work := t.TempDir()
			dir := filepath.Join(work, lang+"notes")
			id := "com.example." + lang + "notes"
			author(t, work, env, binary, "new", "--dir", dir, "--lang", lang, "--id", id)
			if lang == "go" {
				author(t, dir, env, "go", "test", "./...")
			} else {
				author(t, dir, env, "clang", "-Wall", "-o", filepath.Join(work, "summary_test"), "test/summary_test.c")
				if out := author(t, dir, env, filepath.Join(work, "summary_test")); !strings.Contains(out, "ok") {
					t.Fatalf("the C test says %s", out)
				}
			}
			if out := author(t, dir, env, binary, "build"); !strings.Contains(out, "built "+lang+"notes.summary from src/summary into capabilities/summary.wasm") {
				t.Fatalf("build says %s", out)
			}
			author(t, dir, env, binary, "validate", ".")
			author(t, work, env, binary, "keygen", "--out", filepath.Join(work, "me"))
			author(t, dir, env, binary, "package", "--key", filepath.Join(work, "me.key"), "--out", filepath.Join(work, "notes.phpkg"))
			snapshot := filepath.Join(work, "snapshot.json")
			os.WriteFile(snapshot, []byte(`{"storage_revision": 2, "namespaces": {"notes": [
				{"key": "milk", "value": {"text": "buy milk"}, "revision": 1}, {"key": "call", "value": {"text": "call"}, "revision": 2}]}}`), 0o644)
			if out := author(t, dir, env, binary, "run", "--capability", lang+"notes.summary", "--storage", snapshot); !strings.Contains(out, `"summary": "2 notes, 3 words"`) {
				t.Fatalf("run says %s", out)
			}
			out := author(t, dir, env, binary, "dev", "--once", "--server", srv.URL, "--token", admin.Token)
			if !strings.Contains(out, "installed "+id+" 0.1.0-dev.1") {
				t.Fatalf("dev says %s", out)
			}
			screen := screenURL.FindStringSubmatch(out)
			if screen == nil {
				t.Fatalf("dev names no screen: %s", out)
			}
			p := openApp(t, admin, strings.TrimPrefix(screen[1], srv.URL))
			p.WaitFor(liveReady)
			waitText(p, "0 notes, 0 words")
			waitText(p, "No notes yet")
			if lang == "go" {
				home := openApp(t, admin, "/app")
				waitText(home, "Open Gonotes")
				waitText(home, "0 notes, 0 words")
			}
		})
	}
}

// devSession is a plugin made by pluginhost new, under pluginhost dev
// against a server, with its screen open in the browser.
type devSession struct {
	dir  string
	out  *testenv.Buffer
	page *browser.Page
}

func startDevSession(t testing.TB) *devSession {
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	srv := Start(t, b.DSN, t.TempDir())
	admin := &Client{URL: srv.URL, Token: Token(t, b.DSN, "author", true)}
	env := offlineEnv(t)
	work := t.TempDir()
	dir := filepath.Join(work, "loop")
	author(t, work, env, binary, "new", "--dir", dir, "--id", "com.example.loop")
	s := &devSession{dir: dir, out: &testenv.Buffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, "dev", "--dir", dir, "--server", srv.URL, "--token", admin.Token)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, s.out, s.out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pluginhost dev said:\n%s", s.out)
		}
	})
	var screen []string
	for deadline := time.Now().Add(2 * time.Minute); screen == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		screen = screenURL.FindStringSubmatch(s.out.String())
	}
	if screen == nil {
		t.Fatalf("pluginhost dev installed nothing:\n%s", s.out)
	}
	s.page = openApp(t, admin, strings.TrimPrefix(screen[1], srv.URL))
	s.page.WaitFor(liveReady)
	waitText(s.page, "0 notes, 0 words")
	return s
}

// edit rewrites a file of the folder with old replaced by new.
func (s *devSession) edit(t testing.TB, file, old, new string) {
	t.Helper()
	path := filepath.Join(s.dir, file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not hold %q", file, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shows waits until the open page shows text, and returns how long it took.
func (s *devSession) shows(t testing.TB, text string, begun time.Time) time.Duration {
	t.Helper()
	expr := fmt.Sprintf(`document.body.innerText.indexOf(%q) >= 0`, text)
	for deadline := begun.Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s.page.EvalBool(expr) {
			return time.Since(begun)
		}
	}
	t.Fatalf("the page never showed %q; it shows %q", text, pageText(s.page))
	return 0
}

// The author's loop on a new plugin: a screen edit and a Go edit each reach
// the open page in place, keeping what the user typed; a change that does
// not build keeps the page and says why, in the terminal and as an info
// toast; the fix updates the page quietly.
func TestDevLoopOnTheOpenPage(t *testing.T) {
	s := startDevSession(t)
	p := s.page
	p.TypeInto(`input[data-ph-commit]`, "half a note")
	p.WaitFor(`window.pluginhostPreview.state().draft === "half a note"`)

	s.edit(t, "ui/main.json", `"style": "title_medium"}},`, `"style": "title_medium"}}, {"type": "text", "props": {"text": "Edited screen"}},`)
	t.Logf("a screen edit reached the page in %v", s.shows(t, "Edited screen", time.Now()))
	s.edit(t, "src/summary/main.go", `"%s, %s"`, `"%s and %s"`)
	t.Logf("a Go edit reached the page in %v", s.shows(t, "0 notes and 0 words", time.Now()))
	if !p.EvalBool(`window.pluginhostPreview.state().draft === "half a note" && document.querySelector("input[data-ph-commit]").value === "half a note"`) {
		t.Fatalf("the updates lost what was typed: %s", p.EvalString(`JSON.stringify(window.pluginhostPreview.state())`))
	}

	s.edit(t, "src/summary/main.go", `words += len(strings.Fields(note.Text))`, `words += len(strings.Fields(note.Text)) +`)
	p.WaitFor(`!!document.querySelector('[data-ph-toast="not_installed"][role="status"]')`)
	waitText(p, "Your latest change was not installed")
	waitText(p, "syntax error")
	if !strings.Contains(s.out.String(), "NOT UPDATED: build:") || !strings.Contains(s.out.String(), "fix the folder and save again") {
		t.Fatalf("the terminal does not say why:\n%s", s.out)
	}
	if p.EvalBool(`!!document.querySelector('[data-ph-notice], .ph-retry[role="alert"]')`) {
		t.Fatal("a broken change shows an alert on the page")
	}
	waitText(p, "0 notes and 0 words") // the last good version
	s.edit(t, "src/summary/main.go", `words += len(strings.Fields(note.Text)) +`, `words += len(strings.Fields(note.Text))`)
	p.WaitFor(`!!document.querySelector('[data-ph-toast="updated"]')`)
	screenshot(t, p, "dev-loop-updated")
}

// BenchmarkDevLoop measures the author's loop on a new plugin under
// pluginhost dev, from the saved file to the open page showing it: ui-ms is
// a screen edit, go-ms a Go edit of the tool (go build of the changed
// source, pre-initialization, signing, the server's install, which makes
// the new module ready in its interpreter, the page's reload of the config
// and the tool's run).
//
//	go test -run '^$' -bench DevLoop -benchtime 5x ./e2e
func BenchmarkDevLoop(b *testing.B) {
	s := startDevSession(b)
	var ui, goEdit time.Duration
	for i := range b.N {
		begun := time.Now()
		s.edit(b, "ui/main.json", `"title_medium"}},`, fmt.Sprintf(`"title_medium"}}, {"type": "text", "props": {"text": "UI edit %d"}},`, i))
		ui += s.shows(b, fmt.Sprintf("UI edit %d", i), begun)
		old := "note"
		if i > 0 {
			old = fmt.Sprintf("item%d", i-1)
		}
		begun = time.Now()
		s.edit(b, "src/summary/main.go", `plural(len(notes), "`+old+`")`, fmt.Sprintf(`plural(len(notes), "item%d")`, i))
		goEdit += s.shows(b, fmt.Sprintf("0 item%ds, 0 words", i), begun)
	}
	b.ReportMetric(float64(ui.Milliseconds())/float64(b.N), "ui-ms/op")
	b.ReportMetric(float64(goEdit.Milliseconds())/float64(b.N), "go-ms/op")
}
