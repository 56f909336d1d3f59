package preview

import (
	"fmt"
	"strings"
	"testing"

	"pluginhost/internal/browser"
)

// page is a preview opened in the shared headless Chromium (see package
// browser), with the helpers the preview's tests read it with.
type page struct{ *browser.Page }

// open loads a rendered preview file and waits until the preview runs.
func open(t *testing.T, file string) *page {
	t.Helper()
	p := &page{browser.Shared(t).Open(t, "file://"+file, nil)}
	p.WaitFor(`!!window.pluginhostPreview`)
	return p
}

// idle waits until no data source load or action is under way.
func (p *page) idle() {
	p.T().Helper()
	p.Eval("window.pluginhostPreview.idle()", nil)
}

// events returns the host event log of the page.
func (p *page) events() []map[string]any {
	p.T().Helper()
	var ev []map[string]any
	p.Eval("window.pluginhostPreview.events()", &ev)
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

// text returns the visible text of the preview's screen.
func (p *page) text() string {
	p.T().Helper()
	return p.EvalString(`document.querySelector("[data-ph-frame]").innerText`)
}

func (p *page) wantText(want string) {
	p.T().Helper()
	p.WaitFor(fmt.Sprintf(`document.querySelector("[data-ph-frame]").innerText.indexOf(%q) >= 0`, want))
}

func (p *page) wantNoText(text string) {
	p.T().Helper()
	if strings.Contains(p.text(), text) {
		p.T().Fatalf("the screen shows %q:\n%s", text, p.text())
	}
}
