// Package preview renders a validated UI Runtime v2 config into one
// standalone HTML file that behaves like the host: `pluginhost preview`.
//
// The page never executes plugin code. It carries the plugin's configs as
// data, the node catalog of package uicatalog (uicatalog.JSON), the host's
// Material 3 baseline themes, the fixtures that stand in for capabilities, and
// a runtime written for the preview (assets/core.js and assets/runtime.js)
// that interprets the configs with the host's rules: bindings, conditions,
// state commits, input validation, flows, navigation with route data, the
// storage tools on an in-page store, and a Runtime Inspector. Every invoke,
// navigation, state change and validation failure is a host event in a log
// that tests read (window.pluginhostPreview.events()).
//
// The rules shared with the Go side are checked by corpora that both pass:
// binding/testdata/conformance.json (templates and conditions), and here
// testdata/keys-conformance.json, testdata/storage-conformance.json and
// testdata/input-conformance.json. docs/preview.md documents the command,
// the fixtures format and the runtime.
//
// The page loads nothing: a Content-Security-Policy forbids every network
// request, images are drawn as placeholders naming their URL (the real host
// fetches them through its image proxy), and the JSON it embeds is escaped so
// that no string of a config can close the script element that holds it.
package preview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"pluginhost/models"
	"pluginhost/preview/assets"
	"pluginhost/validator"
)

// Options says what to preview.
type Options struct {
	// Files is a plugin folder as bundle.ReadPlugin reads it: manifest.json and
	// the UI configs. Every UI extension's config is embedded, so that
	// navigate actions can open them.
	Files map[string][]byte
	// Config is one UI config, used when Files is nil; Manifest is the
	// manifest it is checked against (optional).
	Config   []byte
	Manifest []byte
	// Extension is the id of the extension whose screen opens first. It is
	// required with Files; with Config it names the config's extension in the
	// manifest (default "main").
	Extension string
	// Fixtures is the fixtures file (see docs/preview.md), or nil.
	Fixtures []byte
}

// ErrInvalid is returned, with the validator's report, for a plugin or config
// that is not valid: the preview renders only what the host would accept.
var ErrInvalid = errors.New("preview: the UI config is invalid; nothing was rendered")

// CSP is the page's Content-Security-Policy: inline scripts and styles only,
// images only from data: URLs, and no request to anywhere.
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; font-src 'none'; form-action 'none'; base-uri 'none'"

// pageExtension is one UI extension the page can show.
type pageExtension struct {
	ID     string          `json:"id"`
	Point  string          `json:"point"`
	Config json.RawMessage `json:"config"`
}

// pagePlugin is what the runtime needs of the manifest.
type pagePlugin struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Version      string           `json:"version"`
	Permissions  []string         `json:"permissions"`
	Storage      *pageStorage     `json:"storage"`
	Capabilities []pageCapability `json:"capabilities"`
	HasManifest  bool             `json:"has_manifest"`
}

type pageStorage struct {
	Namespaces []pageNamespace `json:"namespaces"`
}

type pageNamespace struct {
	ID       string `json:"id"`
	MaxBytes int    `json:"max_bytes"`
}

type pageCapability struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

// pageBundle is the data the runtime starts from.
type pageBundle struct {
	Plugin     pagePlugin                   `json:"plugin"`
	Start      string                       `json:"start"`
	Extensions []pageExtension              `json:"extensions"`
	Fixtures   map[string]any               `json:"fixtures"`
	Themes     map[string]map[string]string `json:"themes"`
	Screens    map[string][2]int            `json:"screens"`
	Warnings   []models.Problem             `json:"warnings"`
	// Response is the fixtures' sample tool result for a response
	// extension, with the verdict of the host's checks.
	Response *pageResponse `json:"response,omitempty"`
}

// Render validates the plugin (or the single config) and returns the HTML of
// the preview. An invalid plugin or config returns the report and ErrInvalid;
// an invalid fixtures file returns a *FixturesError. The output depends only
// on the options: the same input always gives the same bytes.
func Render(opts Options) ([]byte, *validator.Report, error) {
	b := pageBundle{Start: opts.Extension, Themes: baseline, Screens: screenSizes, Fixtures: map[string]any{}}
	var m *models.Manifest
	var report *validator.Report
	if opts.Files != nil {
		var ok bool
		m, report = validator.CheckPlugin(opts.Files)
		if !report.Valid {
			return nil, report, ErrInvalid
		}
		if opts.Extension == "" {
			return nil, report, fmt.Errorf("preview: name the extension to open; the plugin has %s", uiExtensions(m))
		}
		for _, e := range m.Extensions {
			file := e.ConfigFile()
			raw, err := compactJSON(opts.Files[file])
			if err != nil {
				return nil, report, fmt.Errorf("preview: %s: %w", file, err)
			}
			b.Extensions = append(b.Extensions, pageExtension{ID: e.ID, Point: e.Point, Config: raw})
			ok = ok || e.ID == opts.Extension
		}
		if !ok {
			return nil, report, fmt.Errorf("preview: the plugin has no extension %q; it has %s", opts.Extension, uiExtensions(m))
		}
	} else {
		if opts.Config == nil {
			return nil, nil, errors.New("preview: give a plugin folder or a UI config")
		}
		if b.Start == "" {
			b.Start = "main"
		}
		if opts.Manifest != nil {
			if m = validator.ParseManifest(opts.Manifest); m == nil {
				return nil, nil, errors.New("preview: the manifest is not a JSON object")
			}
		}
		report = validator.CheckUIConfig(opts.Config, m, b.Start)
		if !report.Valid {
			return nil, report, ErrInvalid
		}
		raw, err := compactJSON(opts.Config)
		if err != nil {
			return nil, report, err
		}
		point := "screen"
		if m != nil {
			for _, e := range m.Extensions {
				if e.ID == b.Start {
					point = e.Point
				}
			}
		}
		b.Extensions = []pageExtension{{ID: b.Start, Point: point, Config: raw}}
	}
	b.Warnings = report.Warnings
	b.Plugin = plugin(m)
	if opts.Fixtures == nil {
		contextConnections(b.Fixtures, m)
	} else {
		f, err := ParseFixtures(opts.Fixtures, m, stateKeys(b.Extensions, b.Start))
		if err != nil {
			return nil, report, err
		}
		b.Fixtures = f
		if sample, ok := f["response"].(map[string]any); ok {
			for _, e := range b.Extensions {
				if e.ID == b.Start {
					if b.Response, err = responseVerdict(e, sample); err != nil {
						return nil, report, err
					}
				}
			}
		}
	}
	out, err := writePage(&b)
	return out, report, err
}

func uiExtensions(m *models.Manifest) string {
	var ids []string
	for _, e := range m.Extensions {
		ids = append(ids, e.ID)
	}
	if len(ids) == 0 {
		return "no extensions"
	}
	return strings.Join(ids, ", ")
}

// compactJSON returns a config without insignificant space, member order and
// number spellings kept.
func compactJSON(raw []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func plugin(m *models.Manifest) pagePlugin {
	p := pagePlugin{Permissions: []string{}, Capabilities: []pageCapability{}}
	if m == nil {
		p.ID, p.Name = "preview", "Preview"
		return p
	}
	p.ID, p.Name, p.Version, p.HasManifest = m.ID, m.Name, m.Version, true
	p.Permissions = append(p.Permissions, m.Permissions...)
	for _, c := range m.Capabilities {
		p.Capabilities = append(p.Capabilities, pageCapability{ID: c.ID, Kind: c.Kind})
	}
	if st := m.EffectiveStorage(); st != nil {
		p.Storage = &pageStorage{}
		for _, n := range st.Namespaces {
			p.Storage.Namespaces = append(p.Storage.Namespaces, pageNamespace{ID: n.ID, MaxBytes: n.MaxBytes})
		}
	}
	return p
}

// stateKeys returns the initial_state keys of the extension id.
func stateKeys(exts []pageExtension, id string) map[string]bool {
	keys := map[string]bool{}
	for _, e := range exts {
		if e.ID != id {
			continue
		}
		var c struct {
			InitialState map[string]json.RawMessage `json:"initial_state"`
		}
		json.Unmarshal(e.Config, &c)
		for k := range c.InitialState {
			keys[k] = true
		}
	}
	return keys
}

func asset(name string) string { return assets.Text(name) }

func writePage(b *pageBundle) ([]byte, error) {
	bundle, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	page := assets.Page{
		Title:     "Preview: " + b.Plugin.Name + " · " + b.Start,
		CSP:       CSP,
		Generator: "pluginhost preview",
		NoScript:  "The preview needs JavaScript.",
		Entry:     "preview-main.js",
		Bundle:    bundle,
	}
	return page.Bytes(), nil
}
