package extensions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pluginhost/aitools"
	"pluginhost/bundle"
	"pluginhost/extensions"
	"pluginhost/internal/fixture"
	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

var ctx = context.Background()

// host is a wired host with the extensions service.
type host struct {
	*fixture.Env
	ext *extensions.Service
}

func newHost(t testing.TB, b testenv.Backend) *host {
	e := fixture.New(t, b)
	secret := make([]byte, 32)
	rand.Read(secret)
	h, err := aitools.NewHandles(extensions.HandleKey(secret))
	if err != nil {
		t.Fatal(err)
	}
	return &host{Env: e, ext: &extensions.Service{DB: e.DB, Handles: h, Bus: e.Bus}}
}

// weather returns the files of examples/weather, the plugin with two screens
// and a response extension, with its manifest changed by edit.
func weather(t testing.TB, version string, edit func(m map[string]any, files map[string][]byte)) map[string][]byte {
	t.Helper()
	m, files := plugintest.Package(t, "../examples/weather")
	m["version"] = version
	if edit != nil {
		edit(m, files)
	}
	files["manifest.json"], _ = json.MarshalIndent(m, "", "  ")
	return files
}

// setState changes a config file's initial_state.
func setState(t testing.TB, files map[string][]byte, file string, state map[string]any) {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(files[file], &c); err != nil {
		t.Fatal(err)
	}
	c["initial_state"] = state
	files[file], _ = json.MarshalIndent(c, "", "    ")
}

func (h *host) pkg(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	b, err := bundle.Build(files, h.Key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *host) install(t testing.TB, u *models.User, files map[string][]byte) *models.Installation {
	t.Helper()
	instl, err := h.Life.Install(ctx, u, h.pkg(t, files))
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	return instl
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func wantCode(t *testing.T, err error, code models.Code) {
	t.Helper()
	if models.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConfigsStoredAndServed: install and update store every extension's
// config as in the package, with its generation; the scope rules of uiConfig.
func TestConfigsStoredAndServed(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.User(t, "alice"), h.User(t, "bob")
		files := weather(t, "1.0.0", func(m map[string]any, _ map[string][]byte) { m["data_policy"] = "retain" })
		instl := h.install(t, alice, files)
		inst := h.Instance(t, alice, instl)

		exts, err := h.ext.Extensions(ctx, instl.ID)
		noErr(t, err)
		wantIDs := []string{"main", "detail", "week", "forecast"}
		if len(exts) != len(wantIDs) {
			t.Fatalf("%d extensions, want %d", len(exts), len(wantIDs))
		}
		for i, e := range exts {
			file := "ui/" + wantIDs[i] + ".json"
			if e.ID != wantIDs[i] || e.Generation != 1 || string(e.Config) != compact(t, files[file]) {
				t.Fatalf("extension %d = %s gen %d %s, want %s as in %s", i, e.ID, e.Generation, e.Config, wantIDs[i], file)
			}
		}
		if p := exts[0].Placement; p == nil || *p != "navigation" || string(exts[0].Icon) != `"wb_sunny"` || exts[0].Description == nil {
			t.Fatalf("main's placement, icon, description = %v %s %v", p, exts[0].Icon, exts[0].Description)
		}
		if exts[3].Point != models.PointResponse || exts[3].Placement != nil {
			t.Fatalf("forecast = %+v", exts[3])
		}

		// Capability schemas are kept as the package wrote them: "-100.0",
		// "<", "&" and "\u00e9" unchanged.
		got, err := h.Life.Installation(ctx, alice, instl.ID)
		noErr(t, err)
		var raw struct {
			Capabilities []struct {
				InputSchema  json.RawMessage `json:"input_schema"`
				OutputSchema json.RawMessage `json:"output_schema"`
				Description  json.RawMessage `json:"description"`
			} `json:"capabilities"`
		}
		json.Unmarshal(files["manifest.json"], &raw)
		c := got.Manifest.Capabilities[0]
		if string(c.OutputSchema) != compact(t, raw.Capabilities[0].OutputSchema) || string(c.InputSchema) != compact(t, raw.Capabilities[0].InputSchema) {
			t.Fatalf("schemas changed: %s %s", c.InputSchema, c.OutputSchema)
		}

		ui, err := h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "detail")
		noErr(t, err)
		if ui.Generation != 1 || ui.Point != "screen" || string(ui.Config) != compact(t, files["ui/detail.json"]) || string(ui.PersistedState) != "{}" {
			t.Fatalf("uiConfig = %+v", ui)
		}
		_, err = h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "nope")
		wantCode(t, err, models.ErrBadUserInput)
		_, err = h.ext.UIConfig(ctx, models.Caller{UserID: bob.ID}, inst.ID, "main")
		wantCode(t, err, models.ErrPermissionDenied)
		_, err = h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, "ins_unknown", "main")
		wantCode(t, err, models.ErrPermissionDenied)
		_, err = h.Life.SetInstanceEnabled(ctx, alice, inst.ID, false)
		noErr(t, err)
		_, err = h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "main")
		wantCode(t, err, models.ErrPermissionDenied)
		_, err = h.Life.SetInstanceEnabled(ctx, alice, inst.ID, true)
		noErr(t, err)

		// An update serves the new package's configs at the new generation.
		v2 := weather(t, "1.1.0", func(m map[string]any, f map[string][]byte) {
			m["data_policy"] = "retain"
			f["ui/detail.json"] = bytes.Replace(f["ui/detail.json"], []byte("The weather of one city."), []byte("Version two."), 1)
		})
		_, err = h.Life.Update(ctx, alice, instl.ID, h.pkg(t, v2))
		noErr(t, err)
		ui, err = h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "detail")
		noErr(t, err)
		if ui.Generation != 2 || string(ui.Config) != compact(t, v2["ui/detail.json"]) {
			t.Fatalf("after update: gen %d %s", ui.Generation, ui.Config)
		}

		// A retained reinstall serves the newer package's configs.
		noErr(t, h.Life.Uninstall(ctx, alice, instl.ID))
		v3 := weather(t, "1.2.0", func(m map[string]any, f map[string][]byte) {
			m["data_policy"] = "retain"
			m["extensions"] = m["extensions"].([]any)[:2]
			delete(f, "ui/forecast.json")
			f["ui/detail.json"] = bytes.Replace(f["ui/detail.json"], []byte("The weather of one city."), []byte("Version three."), 1)
		})
		again := h.install(t, alice, v3)
		if again.ID != instl.ID || again.Generation != 3 {
			t.Fatalf("reinstall: %s gen %d", again.ID, again.Generation)
		}
		exts, err = h.ext.Extensions(ctx, instl.ID)
		noErr(t, err)
		if len(exts) != 2 || string(exts[1].Config) != compact(t, v3["ui/detail.json"]) || exts[1].Generation != 3 {
			t.Fatalf("after reinstall: %+v", exts)
		}
		_, err = h.ext.UIConfig(ctx, models.Caller{UserID: alice.ID}, inst.ID, "forecast")
		wantCode(t, err, models.ErrBadUserInput)
	})
}

// nextPatch returns the host version with its patch number raised by one.
func nextPatch(t *testing.T) string {
	core, _, _ := strings.Cut(models.HostVersion, "-")
	var a, b, c int
	if _, err := fmt.Sscanf(core, "%d.%d.%d", &a, &b, &c); err != nil {
		t.Fatalf("host version %q: %v", models.HostVersion, err)
	}
	return fmt.Sprintf("%d.%d.%d", a, b, c+1)
}

// TestMinHostVersion: a package that needs exactly this host installs and
// updates; one patch newer is refused, naming both versions.
func TestMinHostVersion(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.User(t, "alice")
		newer := nextPatch(t)
		withMin := func(version, min string) map[string][]byte {
			return weather(t, version, func(m map[string]any, _ map[string][]byte) { m["min_host_version"] = min })
		}
		_, err := h.Life.Install(ctx, alice, h.pkg(t, withMin("1.0.0", newer)))
		wantCode(t, err, models.ErrPackageRejected)
		if !strings.Contains(err.Error(), newer) || !strings.Contains(err.Error(), models.HostVersion) {
			t.Fatalf("%v does not name both versions", err)
		}
		instl, err := h.Life.Install(ctx, alice, h.pkg(t, withMin("1.0.0", models.HostVersion)))
		noErr(t, err)
		_, err = h.Life.Update(ctx, alice, instl.ID, h.pkg(t, withMin("1.1.0", newer)))
		wantCode(t, err, models.ErrPackageRejected)
		got, err := h.Life.Update(ctx, alice, instl.ID, h.pkg(t, withMin("1.1.0", models.HostVersion)))
		noErr(t, err)
		if got.Version != "1.1.0" {
			t.Fatalf("updated to %s", got.Version)
		}
	})
}

// TestPackageChangePublished: an update publishes operation package with the
// new generation to every Instance, whether or not its data moved, after the
// Instance's other changes.
func TestPackageChangePublished(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice := h.User(t, "alice")
		instl := h.install(t, alice, weather(t, "1.0.0", nil))
		moved, still := h.Instance(t, alice, instl), h.Instance(t, alice, instl)
		_, err := h.Store.Create(ctx, models.Caller{UserID: alice.ID}, moved.ID, "places", "bern", models.JSON(`1`))
		noErr(t, err)
		subMoved, subStill := h.Changes(t, alice, moved.ID), h.Changes(t, alice, still.ID)
		v2 := weather(t, "1.1.0", func(m map[string]any, _ map[string][]byte) {
			st := m["storage"].(map[string]any)
			st["version"] = 2
			st["migrations"] = []any{map[string]any{"from": 1, "to": 2, "namespace": "places", "rename": map[string]any{"bern": "city-bern"}}}
		})
		_, err = h.Life.Update(ctx, alice, instl.ID, h.pkg(t, v2))
		noErr(t, err)
		// The Instance whose data moved gets migrate, then package.
		c, _ := subMoved.Next(ctx)
		if c.Operation != models.OpMigrate || c.Generation != 2 || c.StorageRevision != 2 {
			t.Fatalf("first change = %+v, want migrate at revision 2, generation 2", c)
		}
		c, _ = subMoved.Next(ctx)
		if c.Operation != models.OpPackage || c.Generation != 2 || c.StorageRevision != 3 {
			t.Fatalf("second change = %+v, want package at revision 3, generation 2", c)
		}
		c, _ = subStill.Next(ctx)
		if c.Operation != models.OpPackage || c.Generation != 2 || c.StorageRevision != 1 || c.InstanceID != still.ID {
			t.Fatalf("change of the untouched Instance = %+v, want package at revision 1, generation 2", c)
		}
		// Storage changes carry the generation too.
		_, err = h.Store.Create(ctx, models.Caller{UserID: alice.ID}, still.ID, "places", "k", models.JSON(`1`))
		noErr(t, err)
		if c, _ = subStill.Next(ctx); c.Operation != models.OpCreate || c.Generation != 2 {
			t.Fatalf("create = %+v, want generation 2", c)
		}
	})
}
