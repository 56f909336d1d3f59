package validator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/models"
)

// corpusCase is one file of testdata/configs/invalid: a config and the exact
// problems it must produce, in order.
type corpusCase struct {
	Rule string `json:"rule"`
	// Manifest names a manifest file of testdata/configs; "none" checks the
	// config without one. Default: manifest.json.
	Manifest  string          `json:"manifest"`
	Extension string          `json:"extension"`
	Config    json.RawMessage `json:"config"`
	// ConfigText holds a config that is not valid JSON, as text.
	ConfigText string      `json:"config_text"`
	Errors     [][2]string `json:"errors"`
	// Warnings, when present, are matched exactly too.
	Warnings *[][2]string `json:"warnings"`
}

func loadManifest(t testing.TB, name string) *models.Manifest {
	t.Helper()
	if name == "none" {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join("testdata/configs", name))
	if err != nil {
		t.Fatal(err)
	}
	m, r := CheckManifest(raw)
	if !r.Valid {
		t.Fatalf("%s is invalid: %+v", name, r.Errors)
	}
	return m
}

func problemPairs(ps []models.Problem) [][2]string {
	out := make([][2]string, len(ps))
	for i, p := range ps {
		out[i] = [2]string{p.Path, p.Code}
	}
	return out
}

func samePairs(a, b [][2]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInvalidCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/configs/invalid/*.json")
	if len(files) < 100 {
		t.Fatalf("only %d cases in testdata/configs/invalid", len(files))
	}
	manifests := map[string]*models.Manifest{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c corpusCase
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			if c.ConfigText != "" {
				c.Config = json.RawMessage(c.ConfigText)
			}
			if c.Rule == "" || len(c.Config) == 0 {
				t.Fatal("a case names its rule and holds a config")
			}
			if len(c.Errors) == 0 && (c.Warnings == nil || len(*c.Warnings) == 0) {
				t.Fatal("a case of the invalid corpus expects at least one problem")
			}
			if c.Manifest == "" {
				c.Manifest = "manifest.json"
			}
			m, ok := manifests[c.Manifest]
			if !ok {
				m = loadManifest(t, c.Manifest)
				manifests[c.Manifest] = m
			}
			quietAgrees(t, c.Config, m, c.Extension)
			r := CheckUIConfig(c.Config, m, c.Extension)
			if got := problemPairs(r.Errors); !samePairs(got, c.Errors) {
				t.Errorf("rule: %s\nerrors = %v\nwant     %v\nmessages: %s", c.Rule, got, c.Errors, messages(r.Errors))
			}
			if r.Valid != (len(c.Errors) == 0) {
				t.Errorf("Valid = %v with %d errors", r.Valid, len(r.Errors))
			}
			if c.Warnings != nil {
				if got := problemPairs(r.Warnings); !samePairs(got, *c.Warnings) {
					t.Errorf("rule: %s\nwarnings = %v\nwant       %v\nmessages: %s", c.Rule, got, *c.Warnings, messages(r.Warnings))
				}
			}
			for _, p := range append(r.Errors, r.Warnings...) {
				if p.Message == "" || p.File != "" {
					t.Errorf("problem %+v lacks a message or names a file", p)
				}
			}
		})
	}
}

func messages(ps []models.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("\n  " + p.Path + " [" + p.Code + "] " + p.Message)
	}
	return b.String()
}

// quietAgrees checks that the quiet check finds a problem exactly when the
// full check reports one: a valid config is only ever checked quietly.
func quietAgrees(t testing.TB, config []byte, m *models.Manifest, ext string) {
	t.Helper()
	q := newUI(m, ext)
	q.quiet = true
	q.check(config)
	full := newUI(m, ext).check(config)
	if has := len(full.Errors)+len(full.Warnings) > 0; q.found != has {
		t.Errorf("the quiet check found a problem: %v; the full check reported: %v%s%s", q.found, has, messages(full.Errors), messages(full.Warnings))
	}
}
