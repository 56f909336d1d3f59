package preview

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"pluginhost/bundle"
	"pluginhost/internal/plugintest"
)

// weatherOptions opens examples/weather's response extension with a sample
// tool result of weather.lookup in the fixtures.
func weatherOptions(t *testing.T, extension string, result any) Options {
	t.Helper()
	folder, err := bundle.ReadPlugin(plugintest.Example(t, "../examples/weather"))
	if err != nil {
		t.Fatal(err)
	}
	files := folder.Files
	fixtures, _ := json.Marshal(map[string]any{"response": map[string]any{
		"capability": "weather.lookup", "arguments": map[string]any{"city": "Bern"}, "result": result}})
	return Options{Files: files, Extension: extension, Fixtures: fixtures}
}

func sampleWeather() map[string]any {
	return map[string]any{"summary": "9° in Bern", "data": map[string]any{"city": "Bern", "temperature": 9},
		"evidence": []any{map[string]any{"type": "plugin_storage", "instance_id": InstanceID, "namespace": "places", "key": "bern", "revision": 1}}}
}

var bundleBlock = regexp.MustCompile(`<script type="application/json" id="ph-bundle">(.*)</script>`)

// pageVerdict renders the options and returns the verdict the page carries.
func pageVerdict(t *testing.T, opts Options) Verdict {
	t.Helper()
	html, report, err := Render(opts)
	if err != nil {
		t.Fatalf("Render: %v %+v", err, report)
	}
	m := bundleBlock.FindSubmatch(html)
	var b struct{ Response *pageResponse }
	if m == nil || json.Unmarshal(m[1], &b) != nil || b.Response == nil {
		t.Fatal("the page carries no response verdict")
	}
	return b.Response.Verdict
}

// Rule: the preview runs the host's validity and relevance checks on the
// sample tool result and leaves duplicate and permission to the host.
func TestResponseVerdict(t *testing.T) {
	other := sampleWeather()
	other["evidence"].([]any)[0].(map[string]any)["instance_id"] = "ins_other"
	invalid := sampleWeather()
	invalid["data"].(map[string]any)["temperature"] = "warm"
	tests := []struct {
		name    string
		result  any
		renders bool
		failed  map[string]string // check -> path of its first problem
	}{
		{"a result that passes", sampleWeather(), true, nil},
		{"breaks a2ui.schema", invalid, false, map[string]string{"validity": "/data/temperature"}},
		{"evidence of another Instance", other, false, map[string]string{"relevance": "/evidence/0/instance_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := pageVerdict(t, weatherOptions(t, "forecast", tc.result))
			if v.Renders != tc.renders || len(v.Checks) != 4 {
				t.Fatalf("verdict = %+v", v)
			}
			for _, c := range v.Checks {
				switch c.Check {
				case "duplicate", "permission":
					if c.Passed != nil || c.Note == "" {
						t.Errorf("%s: %+v, want left to the host", c.Check, c)
					}
				default:
					path, failed := tc.failed[c.Check]
					if *c.Passed == failed || failed && (len(c.Problems) == 0 || c.Problems[0].Path != path) {
						t.Errorf("%s: %+v, want failed %v at %q", c.Check, c, failed, path)
					}
				}
			}
		})
	}
}

func TestResponseFixturesRules(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		path, code string
	}{
		{"a sample result for a screen", weatherOptions(t, "main", sampleWeather()), "/response", CodeResponsePoint},
		{"an undeclared capability", func() Options {
			o := weatherOptions(t, "forecast", sampleWeather())
			o.Fixtures = []byte(`{"response": {"capability": "weather.alerts", "result": {}}}`)
			return o
		}(), "/response/capability", CodeUnknownCapability},
		{"no result", func() Options {
			o := weatherOptions(t, "forecast", sampleWeather())
			o.Fixtures = []byte(`{"response": {"capability": "weather.lookup"}}`)
			return o
		}(), "/response/result", CodeFixtureRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Render(tc.opts)
			var fe *FixturesError
			if !errors.As(err, &fe) || fe.Problems[0].Path != tc.path || fe.Problems[0].Code != tc.code {
				t.Fatalf("err = %v, want %s at %s", err, tc.code, tc.path)
			}
		})
	}
}

// Rule: with a sample tool result, the response extension shows it as the
// host would (the result of its data source of the capability) when the
// checks pass, and the Runtime Inspector shows the verdict either way.
func TestBrowserResponseVerdict(t *testing.T) {
	p := open(t, renderFile(t, weatherOptions(t, "forecast", sampleWeather())))
	p.idle()
	var insp struct {
		Response struct {
			Capability string
			Verdict    Verdict
		}
		Data map[string]struct {
			Completed bool
			Data      map[string]any
		}
	}
	p.Eval("window.pluginhostPreview.inspector()", &insp)
	if insp.Response.Capability != "weather.lookup" || !insp.Response.Verdict.Renders || !insp.Data["answer"].Completed || insp.Data["answer"].Data["city"] != "Bern" {
		t.Fatalf("inspector = %+v", insp)
	}
	p.wantText("Bern")
	if ev := lastOf(t, p, "response_verdict"); ev["renders"] != true {
		t.Fatalf("response_verdict event = %v", ev)
	}
	if text := p.EvalString(`document.getElementById("ph-inspector").textContent`); !regexp.MustCompile(`"check": "duplicate",\s+"passed": null`).MatchString(text) {
		t.Fatalf("the inspector does not show the checks left to the host:\n%s", text)
	}

	bad := sampleWeather()
	delete(bad["data"].(map[string]any), "city")
	p = open(t, renderFile(t, weatherOptions(t, "forecast", bad)))
	p.idle()
	insp.Data = nil
	p.Eval("window.pluginhostPreview.inspector()", &insp)
	v := insp.Response.Verdict
	if v.Renders || *v.Checks[0].Passed || v.Checks[0].Problems[0].Path != "/data/city" {
		t.Fatalf("verdict of an invalid result = %+v", v)
	}
	if insp.Data["answer"].Completed {
		t.Fatal("a result that fails a check was shown")
	}
}
