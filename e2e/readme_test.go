//go:build linux

package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"pluginhost/internal/testenv"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestReadmeWalkthrough pastes the README's walk-through, line by line, into
// an interactive bash on a terminal, as a person would (history expansion
// on, no error exit), in a copy of the repository: twice in a row in the same
// folder and the same shell, both of which must work, then once more with a
// wrong token, which must stop loudly instead of carrying on.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary from a copy of the repository")
	}
	lines := walkthroughLines(t)
	repo := copyRepository(t)
	sh := startShell(t, repo)

	for run := 1; run <= 2; run++ {
		out := sh.paste(t, lines)
		for _, want := range []string{
			"walk-through helpers loaded",
			"wrote walkthrough/keys/me.key",
			"server listening at http://127.0.0.1:",
			"TOKEN is set",
			"sign in to the app, while the server runs: http://127.0.0.1:",
			"built notes.summary from src/summary into capabilities/summary.wasm",
			"built notes.archive from src/archive into capabilities/archive.wasm",
			"packaged com.example.notes 1.0.0",
			`"pluginId":"com.example.notes"`,
			`"createInstance":{"id":"inst_`,
			`Created \"groceries\" in namespace \"notes\" at revision 1`,
			`Updated \"groceries\" in namespace \"notes\" to revision 2`,
			`"value":{"text":"milk, eggs"}`,
			`"code":"PLUGIN_STORAGE_CONFLICT"`,
			"(refused with PLUGIN_STORAGE_CONFLICT, as expected)",
			`"invoke":{"summary":"1 notes, 2 words"`,
			`"key":"call-bob","value":{"done":true,"text":"call Bob"}`,
			`"capability":"notes.archive","lastOutcome":"ok"`,
			`"title":"1 note archived","body":"call Bob","severity":"success","actions":[{"actionId":"undo","label":"Undo","type":"host_actions"}`,
			`"runNotificationAction":{"type":"host_actions","result":{"summary":"Applied 2 host action(s) of capability notes.archive"}}`,
			`Read \"call-bob\" of namespace \"notes\" at revision 1`,
			"weather service at https://localhost:",
			`"invoke":{"summary":"Oslo: `,
			`"connectApiKey":{"manifestId":"weatherkey","connected":true}`,
			`"capability":"weather.forecast","host":"localhost:`,
			`"deleted_items":2`,
			"server stopped",
			"weather service stopped",
			"WALK-THROUGH DONE: every step worked.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("run %d: the walk-through did not print %s", run, want)
			}
		}
		for _, bad := range []string{"WALK-THROUGH STOPPED", "skipped", "event not found", "command not found", "syntax error", "No such file", "unexpected EOF"} {
			if strings.Contains(out, bad) {
				t.Errorf("run %d: the walk-through printed %q", run, bad)
			}
		}
		if t.Failed() {
			t.Fatalf("run %d of the walk-through, as the terminal showed it:\n%s", run, out)
		}
		if testing.Verbose() {
			t.Logf("run %d of the walk-through, as the terminal showed it:\n%s", run, out)
		}
	}

	// A person who gets the token wrong sees the first call stop the
	// walk-through with the server's 401, and nothing after it succeed.
	var wrong []string
	for _, l := range lines {
		wrong = append(wrong, l)
		if strings.HasPrefix(l, "keep TOKEN ") {
			wrong = append(wrong, "TOKEN=ph_not-a-token")
		}
	}
	out := sh.paste(t, wrong)
	stopped := regexp.MustCompile(`WALK-THROUGH STOPPED: POST /graphql: HTTP 401`)
	if !stopped.MatchString(out) || !strings.Contains(out, `"code":"UNAUTHENTICATED"`) {
		t.Errorf("with a wrong token the walk-through did not stop at the 401")
	}
	for _, want := range []string{"--- skipped (gql)", "--- skipped (DELETE /v1/plugin-instances/", "server stopped", "WALK-THROUGH STOPPED earlier"} {
		if !strings.Contains(out, want) {
			t.Errorf("with a wrong token the walk-through did not print %s", want)
		}
	}
	for _, bad := range []string{"every step worked", `"deleted_items"`, "Created \\\"groceries\\\""} {
		if strings.Contains(out, bad) {
			t.Errorf("with a wrong token the walk-through printed %s", bad)
		}
	}
	if t.Failed() {
		t.Fatalf("the walk-through with a wrong token, as the terminal showed it:\n%s", out)
	}
	sh.exit(t)
}

// walkthroughLines returns the lines of the sh blocks between the README's
// walk-through markers, in order.
func walkthroughLines(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "<!-- walkthrough:start -->\n")
	section, _, ok2 := strings.Cut(section, "<!-- walkthrough:end -->")
	if !ok || !ok2 {
		t.Fatal("README has no walk-through between its markers")
	}
	var lines []string
	in := false
	for _, l := range strings.Split(section, "\n") {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in:
			lines = append(lines, l)
		}
	}
	if len(lines) < 10 {
		t.Fatalf("the walk-through has only %d lines", len(lines))
	}
	return lines
}

// copyRepository copies the files git knows (committed or not, but not
// ignored) into a fresh folder: the repository as a person checks it out.
func copyRepository(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	files, err := exec.Command("git", "-C", "..", "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		src := filepath.Join("..", f)
		info, err := os.Stat(src)
		if err != nil {
			continue // deleted in the work tree
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(repo, f)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// shell is an interactive bash on a pseudo-terminal. Before each prompt it
// prints a numbered marker, so a line is sent only once bash asks for one.
type shell struct {
	cmd    *exec.Cmd
	tty    *os.File
	out    *testenv.Buffer
	done   chan struct{}
	prompt int
}

var readyMarker = regexp.MustCompile(`<<ready (\d+)>>`)

func startShell(t *testing.T, dir string) *shell {
	t.Helper()
	master, slave, err := openPTY()
	if err != nil {
		t.Fatalf("open a terminal: %v", err)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=dumb", "PS1=$ ", "PS2=> ",
		"HISTFILE="+filepath.Join(t.TempDir(), "history"),
		`PROMPT_COMMAND=printf '\n<<ready %d>>\n' $((WT_PROMPTS+=1))`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	sh := &shell{cmd: cmd, tty: master, out: &testenv.Buffer{}, done: make(chan struct{})}
	go func() {
		io.Copy(sh.out, master) // ends with EIO when bash exits
		cmd.Wait()
		close(sh.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-sh.done
		master.Close()
	})
	sh.waitPrompt(t)
	return sh
}

// waitPrompt waits for bash's next prompt.
func (sh *shell) waitPrompt(t *testing.T) {
	t.Helper()
	sh.prompt++
	want := fmt.Sprintf("<<ready %d>>", sh.prompt)
	deadline := time.Now().Add(10 * time.Minute)
	for !strings.Contains(sh.out.String(), want) {
		select {
		case <-sh.done:
			t.Fatalf("bash exited; the terminal showed:\n%s", sh.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("bash did not ask for the next line within 10 minutes (a line left it waiting for more?); the terminal showed:\n%s", sh.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// paste types the lines one at a time, each once bash prompts for it, and
// returns what the terminal showed meanwhile.
func (sh *shell) paste(t *testing.T, lines []string) string {
	t.Helper()
	start := len(sh.out.String())
	for _, l := range lines {
		if _, err := sh.tty.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
		sh.waitPrompt(t)
	}
	return strings.ReplaceAll(sh.out.String()[start:], "\r", "")
}

func (sh *shell) exit(t *testing.T) {
	t.Helper()
	sh.tty.Write([]byte("exit\n"))
	select {
	case <-sh.done:
	case <-time.After(30 * time.Second):
		t.Errorf("bash did not exit")
	}
}

// openPTY opens a new pseudo-terminal pair, 500 columns wide so that no line
// wraps.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		master.Close()
		return nil, nil, err
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	size := struct{ rows, cols, x, y uint16 }{50, 500, 0, 0}
	if err := ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&size)); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

func ioctl(f *os.File, req uint, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(req), uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// TestReadmeClientSetups: the Apollo and urql set-ups of the README's
// "Building an app" are the tested clients' own code.
func TestReadmeClientSetups(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, name string }{{"appclients/apollo.mjs", "apollo"}, {"appclients/urql.mjs", "urql"}} {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		start, end := "// README:"+c.name+":start\n", "// README:"+c.name+":end"
		i, j := strings.Index(string(src), start), strings.Index(string(src), end)
		if i < 0 || j < i {
			t.Fatalf("%s has no README markers", c.file)
		}
		snippet := string(src)[i+len(start) : j]
		if !strings.Contains(string(readme), "```js\n"+snippet+"```") {
			t.Errorf("the README does not show the %s set-up of %s as it is:\n%s", c.name, c.file, snippet)
		}
	}
}
