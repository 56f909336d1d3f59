// Package browser drives Debian's headless Chromium through the Chrome
// DevTools Protocol for the project's browser tests: one browser for a test
// binary, a fresh browser context (its own storage) per page, real mouse and
// keyboard input, script evaluation and screenshots.
//
// The browser has no outside network: every request to a host other than the
// loopback interface goes to a proxy of the test's own that refuses it and
// records it (Outside), and host names other than localhost do not resolve.
// A page that works in these tests works on a machine without internet.
package browser

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

// Browser is a running Chromium and its DevTools connection.
type Browser struct {
	cmd   *exec.Cmd
	dir   string
	conn  *websocket.Conn
	proxy *refusingProxy

	mu      sync.Mutex
	next    int64
	pending map[int64]chan cdpReply
	errs    map[string][]string // session → uncaught exceptions
	reqs    map[string][]string // session → URLs requested, once RecordRequests ran
	posts   map[string][]Post   // session → POST requests with their bodies, once RecordRequests ran
	urls    map[string]string   // session/request id → URL, once RecordRequests ran
	moved   map[string][]Transfer
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
	sharedBrowser *Browser
	sharedErr     error
)

// Shared returns the browser shared by a test binary, started on first use.
// It skips the test when Chromium is missing (fails with
// PLUGINHOST_REQUIRE_SERVICES=1).
func Shared(t testing.TB) *Browser {
	t.Helper()
	path := testenv.Chromium(t)
	sharedOnce.Do(func() { sharedBrowser, sharedErr = startBrowser(path) })
	if sharedErr != nil {
		t.Fatalf("start chromium: %v", sharedErr)
	}
	return sharedBrowser
}

func startBrowser(path string) (*Browser, error) {
	dir, err := os.MkdirTemp("", "pluginhost-chromium-")
	if err != nil {
		return nil, err
	}
	proxy, err := startRefusingProxy()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Loopback addresses bypass the proxy (Chromium's implicit rule), so
	// the test servers on 127.0.0.1 are reached directly.
	cmd := exec.Command(path, "--proxy-server=http://"+proxy.addr(),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--user-data-dir="+dir, "about:blank")
	if err := cmd.Start(); err != nil {
		proxy.close()
		os.RemoveAll(dir)
		return nil, err
	}
	b := &Browser{cmd: cmd, dir: dir, pending: map[int64]chan cdpReply{}, errs: map[string][]string{}, reqs: map[string][]string{}, posts: map[string][]Post{},
		urls: map[string]string{}, moved: map[string][]Transfer{}, done: make(chan struct{})}
	// Chromium writes its port and browser path to DevToolsActivePort.
	var wsURL string
	b.proxy = proxy
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

func (b *Browser) read() {
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
		} else if msg.Method == "Network.requestWillBeSent" || msg.Method == "Network.webSocketCreated" {
			var p struct {
				RequestID string `json:"requestId"`
				Request   struct {
					Method   string `json:"method"`
					URL      string `json:"url"`
					PostData string `json:"postData"`
				} `json:"request"`
				URL string `json:"url"`
			}
			json.Unmarshal(msg.Params, &p)
			if _, ok := b.reqs[msg.SessionID]; ok {
				b.urls[msg.SessionID+"/"+p.RequestID] = p.Request.URL
				if p.URL != "" {
					b.reqs[msg.SessionID] = append(b.reqs[msg.SessionID], "WS "+p.URL)
				} else {
					b.reqs[msg.SessionID] = append(b.reqs[msg.SessionID], p.Request.Method+" "+p.Request.URL)
					if p.Request.Method == "POST" {
						b.posts[msg.SessionID] = append(b.posts[msg.SessionID], Post{URL: p.Request.URL, Body: p.Request.PostData})
					}
				}
			}
		} else if msg.Method == "Network.loadingFinished" {
			var p struct {
				RequestID         string  `json:"requestId"`
				EncodedDataLength float64 `json:"encodedDataLength"`
			}
			json.Unmarshal(msg.Params, &p)
			if u, ok := b.urls[msg.SessionID+"/"+p.RequestID]; ok {
				b.moved[msg.SessionID] = append(b.moved[msg.SessionID], Transfer{URL: u, Bytes: int64(p.EncodedDataLength)})
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
func (b *Browser) call(session, method string, params any, result any) error {
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

func (b *Browser) close() {
	if b.conn != nil {
		b.conn.Close(websocket.StatusNormalClosure, "")
	}
	if b.cmd.Process != nil {
		b.cmd.Process.Kill()
		b.cmd.Wait()
	}
	b.proxy.close()
	os.RemoveAll(b.dir)
}

// Outside returns, in order, the outside destinations the browser tried to
// reach since it started ("host:port" for https and websockets, the URL for
// plain http). Every one of them was refused.
func (b *Browser) Outside() []string { return b.proxy.requests() }

// Page is one tab in a browser context of its own.
type Page struct {
	t       testing.TB
	b       *Browser
	context string
	target  string
	session string
}

// Open loads the file in a new tab and waits until the preview runs.
func (b *Browser) Open(t testing.TB, url string, headers map[string]string) *Page {
	t.Helper()
	p := &Page{t: t, b: b}
	var bc struct {
		ID string `json:"browserContextId"`
	}
	p.Must(b.call("", "Target.createBrowserContext", map[string]any{"disposeOnDetach": true}, &bc))
	p.context = bc.ID
	var tg struct {
		ID string `json:"targetId"`
	}
	p.Must(b.call("", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc.ID}, &tg))
	p.target = tg.ID
	var at struct {
		ID string `json:"sessionId"`
	}
	p.Must(b.call("", "Target.attachToTarget", map[string]any{"targetId": tg.ID, "flatten": true}, &at))
	p.session = at.ID
	t.Cleanup(p.close)
	p.Do("Runtime.enable", nil)
	p.Do("Page.enable", nil)
	p.Do("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false})
	if len(headers) > 0 {
		p.Do("Network.enable", nil)
		p.Do("Network.setExtraHTTPHeaders", map[string]any{"headers": headers})
	}
	if url != "about:blank" {
		p.Do("Page.navigate", map[string]any{"url": url})
		p.WaitFor(`document.readyState === "complete"`)
	}
	return p
}

func (p *Page) close() {
	p.b.mu.Lock()
	errs := p.b.errs[p.session]
	delete(p.b.errs, p.session)
	delete(p.b.reqs, p.session)
	delete(p.b.posts, p.session)
	delete(p.b.moved, p.session)
	for k := range p.b.urls {
		if strings.HasPrefix(k, p.session+"/") {
			delete(p.b.urls, k)
		}
	}
	p.b.mu.Unlock()
	for _, e := range errs {
		p.t.Errorf("uncaught exception in the page: %s", e)
	}
	p.b.call("", "Target.closeTarget", map[string]any{"targetId": p.target}, nil)
	p.b.call("", "Target.disposeBrowserContext", map[string]any{"browserContextId": p.context}, nil)
}

func (p *Page) Must(err error) {
	p.t.Helper()
	if err != nil {
		p.t.Fatal(err)
	}
}

func (p *Page) Do(method string, params any) json.RawMessage {
	p.t.Helper()
	var raw json.RawMessage
	p.Must(p.b.call(p.session, method, params, &raw))
	return raw
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into v (when v is not nil).
func (p *Page) Eval(expr string, v any) {
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
	p.Must(p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r))
	if r.Exception != nil {
		p.t.Fatalf("evaluate %s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if v != nil && r.Result.Value != nil {
		p.Must(json.Unmarshal(r.Result.Value, v))
	}
}

func (p *Page) EvalBool(expr string) bool {
	p.t.Helper()
	var ok bool
	p.Eval("!!("+expr+")", &ok)
	return ok
}

func (p *Page) EvalString(expr string) string {
	p.t.Helper()
	var s string
	p.Eval(expr, &s)
	return s
}

// WaitFor polls a JavaScript condition for up to 10 seconds.
func (p *Page) WaitFor(expr string) {
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

// Click presses and releases the mouse at the middle of the first element
// the selector finds, as a person would.
func (p *Page) Click(selector string) {
	p.t.Helper()
	// An element found while the page still loads moves once its styles
	// arrive, and a click at where it was would miss it: the page's load
	// ends first (or 5 s pass).
	p.b.call(p.session, "Runtime.evaluate", map[string]any{"awaitPromise": true, "expression": `new Promise(function(done){
		if (document.readyState === "complete") return done(true);
		var t = setTimeout(function(){ done(false); }, 5000);
		addEventListener("load", function(){ clearTimeout(t); done(true); }, {once: true});
	})`}, nil)
	var box struct{ X, Y float64 }
	p.Eval(fmt.Sprintf(`(function(){var e=document.querySelector(%q);if(!e)return null;e.scrollIntoView({block:"center"});var r=e.getBoundingClientRect();return {X:r.left+r.width/2,Y:r.top+r.height/2};})()`, selector), &box)
	if box.X == 0 && box.Y == 0 {
		p.t.Fatalf("click: nothing matches %s", selector)
	}
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p.Do("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1})
	}
}

// ClickText clicks the first element of the selector whose text is text.
func (p *Page) ClickText(selector, text string) {
	p.t.Helper()
	sel := p.EvalString(fmt.Sprintf(`(function(){var all=document.querySelectorAll(%q);for(var i=0;i<all.length;i++){if(all[i].textContent.trim()===%q){all[i].setAttribute("data-test-target","1");return "[data-test-target]";}}return "";})()`, selector, text))
	if sel == "" {
		p.t.Fatalf("no %s with text %q", selector, text)
	}
	p.Click(sel)
	p.Eval(`document.querySelector("[data-test-target]") && document.querySelector("[data-test-target]").removeAttribute("data-test-target")`, nil)
}

// TypeInto focuses the element by a click and types text as keyboard input.
func (p *Page) TypeInto(selector, text string) {
	p.t.Helper()
	p.Click(selector)
	p.Do("Input.insertText", map[string]any{"text": text})
}

// Screenshot writes a PNG of the page.
func (p *Page) Screenshot(file string) {
	p.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	p.Must(p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r))
	png, err := base64.StdEncoding.DecodeString(r.Data)
	p.Must(err)
	p.Must(os.WriteFile(file, png, 0o644))
}

// RecordRequests starts recording every request the page sends (as
// "METHOD URL", websockets as "WS URL"); Requests returns them.
func (p *Page) RecordRequests() {
	p.t.Helper()
	p.b.mu.Lock()
	if _, ok := p.b.reqs[p.session]; !ok {
		p.b.reqs[p.session] = []string{}
	}
	p.b.mu.Unlock()
	p.Do("Network.enable", nil)
}

// Post is a POST request a page sent: its URL and body.
type Post struct {
	URL, Body string
}

// Posts returns the POST requests recorded since RecordRequests, with their
// bodies.
func (p *Page) Posts() []Post {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return append([]Post(nil), p.b.posts[p.session]...)
}

// Requests returns the requests recorded since RecordRequests.
func (p *Page) Requests() []string {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return append([]string(nil), p.b.reqs[p.session]...)
}

// Transfer is a response the page received: its URL and the bytes that
// came over the network for it (headers and the body as sent, compressed).
type Transfer struct {
	URL   string
	Bytes int64
}

// Transferred returns the responses received since RecordRequests, in the
// order they finished.
func (p *Page) Transferred() []Transfer {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return append([]Transfer(nil), p.b.moved[p.session]...)
}

// keys are the keys Press knows: DOM key, code, key code and the text the
// key types.
var keys = map[string]struct {
	code string
	kc   int
	text string
}{
	"Tab": {"Tab", 9, ""}, "Enter": {"Enter", 13, "\r"}, "Escape": {"Escape", 27, ""}, " ": {"Space", 32, " "},
	"ArrowDown": {"ArrowDown", 40, ""}, "ArrowUp": {"ArrowUp", 38, ""}, "ArrowLeft": {"ArrowLeft", 37, ""}, "ArrowRight": {"ArrowRight", 39, ""},
}

// Press presses and releases a key (Tab, Enter, Escape, " ", the arrows)
// as a keyboard does, with Shift when shift.
func (p *Page) Press(key string, shift bool) {
	p.t.Helper()
	k, ok := keys[key]
	if !ok {
		p.t.Fatalf("press: no key %q", key)
	}
	mod := 0
	if shift {
		mod = 8
	}
	down := map[string]any{"type": "keyDown", "key": key, "code": k.code, "windowsVirtualKeyCode": k.kc, "nativeVirtualKeyCode": k.kc, "modifiers": mod}
	if k.text != "" {
		down["text"] = k.text
		down["unmodifiedText"] = k.text
	}
	p.Do("Input.dispatchKeyEvent", down)
	p.Do("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "code": k.code, "windowsVirtualKeyCode": k.kc, "nativeVirtualKeyCode": k.kc, "modifiers": mod})
}

// T returns the test of the page.
func (p *Page) T() testing.TB { return p.t }

// CloseShared stops the shared browser, if one was started; call it from
// TestMain after the tests.
func CloseShared() {
	if sharedBrowser != nil {
		sharedBrowser.close()
	}
}
