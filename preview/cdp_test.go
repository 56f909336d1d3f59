package preview

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"pluginhost/internal/testenv"
)

// A small client of the Chrome DevTools Protocol, enough to drive the
// preview in Debian's headless Chromium: one browser for the test binary, a
// fresh browser context (its own localStorage) per page, real mouse and
// keyboard input, script evaluation and screenshots.

// browser is a running Chromium and its DevTools connection.
type browser struct {
	cmd  *exec.Cmd
	dir  string
	conn *websocket.Conn

	mu      sync.Mutex
	next    int64
	pending map[int64]chan cdpReply
	errs    map[string][]string // session → uncaught exceptions
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

var (
	sharedOnce    sync.Once
	sharedBrowser *browser
	sharedErr     error
)

// chromium returns the browser shared by the tests, started on first use.
// It skips the test when Chromium is missing (fails with
// PLUGINHOST_REQUIRE_SERVICES=1).
func chromium(t *testing.T) *browser {
	t.Helper()
	path := testenv.Chromium(t)
	sharedOnce.Do(func() { sharedBrowser, sharedErr = startBrowser(path) })
	if sharedErr != nil {
		t.Fatalf("start chromium: %v", sharedErr)
	}
	return sharedBrowser
}

func startBrowser(path string) (*browser, error) {
	dir, err := os.MkdirTemp("", "pluginhost-chromium-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--user-data-dir="+dir, "about:blank")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b := &browser{cmd: cmd, dir: dir, pending: map[int64]chan cdpReply{}, errs: map[string][]string{}, done: make(chan struct{})}
	// Chromium writes its port and browser path to DevToolsActivePort.
	var wsURL string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open(filepath.Join(dir, "DevToolsActivePort"))
		if err == nil {
			sc := bufio.NewScanner(f)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
			if len(lines) >= 2 {
				wsURL = "ws://127.0.0.1:" + lines[0] + lines[1]
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if wsURL == "" {
		b.close()
		return nil, errors.New("chromium did not open its DevTools port within 30s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		b.close()
		return nil, err
	}
	conn.SetReadLimit(256 << 20)
	b.conn = conn
	go b.read()
	return b, nil
}

func (b *browser) read() {
	defer close(b.done)
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				ch <- cdpReply{Error: &struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}{-1, "connection closed: " + err.Error()}}
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var msg struct {
			ID        int64           `json:"id"`
			Method    string          `json:"method"`
			SessionID string          `json:"sessionId"`
			Params    json.RawMessage `json:"params"`
			cdpReply
		}
		if json.Unmarshal(data, &msg) != nil {
			continue
		}
		b.mu.Lock()
		if msg.ID != 0 {
			if ch, ok := b.pending[msg.ID]; ok {
				ch <- msg.cdpReply
				delete(b.pending, msg.ID)
			}
		} else if msg.Method == "Runtime.exceptionThrown" {
			var p struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			json.Unmarshal(msg.Params, &p)
			b.errs[msg.SessionID] = append(b.errs[msg.SessionID], p.Details.Text+" "+p.Details.Exception.Description)
		}
		b.mu.Unlock()
	}
}

// call sends one command and waits for its reply.
func (b *browser) call(session, method string, params any, result any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpReply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if params == nil {
		msg["params"] = map[string]any{}
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: no reply within 30s", method)
	}
}

func (b *browser) close() {
	if b.conn != nil {
		b.conn.Close(websocket.StatusNormalClosure, "")
	}
	if b.cmd.Process != nil {
		b.cmd.Process.Kill()
		b.cmd.Wait()
	}
	os.RemoveAll(b.dir)
}

// page is one tab in a browser context of its own.
type page struct {
	t       *testing.T
	b       *browser
	context string
	target  string
	session string
}

// open loads the file in a new tab and waits until the preview runs.
func (b *browser) open(t *testing.T, file string) *page {
	t.Helper()
	p := &page{t: t, b: b}
	var bc struct {
		ID string `json:"browserContextId"`
	}
	p.must(b.call("", "Target.createBrowserContext", map[string]any{"disposeOnDetach": true}, &bc))
	p.context = bc.ID
	var tg struct {
		ID string `json:"targetId"`
	}
	p.must(b.call("", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc.ID}, &tg))
	p.target = tg.ID
	var at struct {
		ID string `json:"sessionId"`
	}
	p.must(b.call("", "Target.attachToTarget", map[string]any{"targetId": tg.ID, "flatten": true}, &at))
	p.session = at.ID
	t.Cleanup(p.close)
	p.do("Runtime.enable", nil)
	p.do("Page.enable", nil)
	p.do("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false})
	if file != "about:blank" {
		p.do("Page.navigate", map[string]any{"url": "file://" + file})
	}
	if file != "about:blank" {
		p.waitFor(`document.readyState === "complete" && !!window.pluginhostPreview`)
	}
	return p
}

func (p *page) close() {
	p.b.mu.Lock()
	errs := p.b.errs[p.session]
	delete(p.b.errs, p.session)
	p.b.mu.Unlock()
	for _, e := range errs {
		p.t.Errorf("uncaught exception in the page: %s", e)
	}
	p.b.call("", "Target.closeTarget", map[string]any{"targetId": p.target}, nil)
	p.b.call("", "Target.disposeBrowserContext", map[string]any{"browserContextId": p.context}, nil)
}

func (p *page) must(err error) {
	p.t.Helper()
	if err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) do(method string, params any) json.RawMessage {
	p.t.Helper()
	var raw json.RawMessage
	p.must(p.b.call(p.session, method, params, &raw))
	return raw
}

// eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into v (when v is not nil).
func (p *page) eval(expr string, v any) {
	p.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	p.must(p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r))
	if r.Exception != nil {
		p.t.Fatalf("evaluate %s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if v != nil && r.Result.Value != nil {
		p.must(json.Unmarshal(r.Result.Value, v))
	}
}

func (p *page) evalBool(expr string) bool {
	p.t.Helper()
	var ok bool
	p.eval("!!("+expr+")", &ok)
	return ok
}

func (p *page) evalString(expr string) string {
	p.t.Helper()
	var s string
	p.eval(expr, &s)
	return s
}

// waitFor polls a JavaScript condition for up to 10 seconds.
func (p *page) waitFor(expr string) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ok bool
		var r struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
		}
		if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": "!!(" + expr + ")", "returnByValue": true}, &r); err == nil {
			json.Unmarshal(r.Result.Value, &ok)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s", expr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// idle waits until no data source load or action is under way.
func (p *page) idle() {
	p.t.Helper()
	p.eval("window.pluginhostPreview.idle()", nil)
}

// click presses and releases the mouse at the middle of the first element
// the selector finds, as a person would.
func (p *page) click(selector string) {
	p.t.Helper()
	var box struct{ X, Y float64 }
	p.eval(fmt.Sprintf(`(function(){var e=document.querySelector(%q);if(!e)return null;e.scrollIntoView({block:"center"});var r=e.getBoundingClientRect();return {X:r.left+r.width/2,Y:r.top+r.height/2};})()`, selector), &box)
	if box.X == 0 && box.Y == 0 {
		p.t.Fatalf("click: nothing matches %s", selector)
	}
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p.do("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1})
	}
}

// clickText clicks the first element of the selector whose text is text.
func (p *page) clickText(selector, text string) {
	p.t.Helper()
	sel := p.evalString(fmt.Sprintf(`(function(){var all=document.querySelectorAll(%q);for(var i=0;i<all.length;i++){if(all[i].textContent.trim()===%q){all[i].setAttribute("data-test-target","1");return "[data-test-target]";}}return "";})()`, selector, text))
	if sel == "" {
		p.t.Fatalf("no %s with text %q", selector, text)
	}
	p.click(sel)
	p.eval(`document.querySelector("[data-test-target]") && document.querySelector("[data-test-target]").removeAttribute("data-test-target")`, nil)
}

// typeInto focuses the element by a click and types text as keyboard input.
func (p *page) typeInto(selector, text string) {
	p.t.Helper()
	p.click(selector)
	p.do("Input.insertText", map[string]any{"text": text})
}

// events returns the host event log of the page.
func (p *page) events() []map[string]any {
	p.t.Helper()
	var ev []map[string]any
	p.eval("window.pluginhostPreview.events()", &ev)
	return ev
}

// eventsOf returns the events of one type.
func (p *page) eventsOf(typ string) []map[string]any {
	var out []map[string]any
	for _, e := range p.events() {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// screenshot writes a PNG of the page.
func (p *page) screenshot(file string) {
	p.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	p.must(p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r))
	png, err := base64.StdEncoding.DecodeString(r.Data)
	p.must(err)
	p.must(os.WriteFile(file, png, 0o644))
}

// text returns the visible text of the preview's screen.
func (p *page) text() string {
	p.t.Helper()
	return p.evalString(`document.querySelector("[data-ph-frame]").innerText`)
}

func (p *page) wantText(want string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf(`document.querySelector("[data-ph-frame]").innerText.indexOf(%q) >= 0`, want))
}

func (p *page) wantNoText(text string) {
	p.t.Helper()
	if strings.Contains(p.text(), text) {
		p.t.Fatalf("the screen shows %q:\n%s", text, p.text())
	}
}
