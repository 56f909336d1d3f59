package lifecycle_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/lifecycle"
	"pluginhost/models"
)

// The stored modules follow the package: an update keeps the row of a
// module whose bytes did not change, moved to the new generation, stores a
// changed module anew, and keeps no row of an older generation.
func TestUpdateStoresModules(t *testing.T) {
	echo := wasmtest.Module(t, "../sandbox/testdata/modules", "echo")
	exit3 := wasmtest.Module(t, "../sandbox/testdata/modules", "exit3")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		u := e.User(t, "author")
		m := fixture.Manifest("com.test.modules", fixture.NS("notes", 1024))
		m["min_host_version"] = "1.7.12"
		m["capabilities"] = []any{
			map[string]any{"id": "modules.a", "kind": "tool", "description": "a", "module": "capabilities/a.wasm"},
			map[string]any{"id": "modules.b", "kind": "tool", "description": "b", "module": "capabilities/b.wasm"},
		}
		in := must(e.Life.Install(ctx, u, e.Package(t, m, map[string][]byte{"capabilities/a.wasm": echo, "capabilities/b.wasm": echo})))(t)
		type stored struct {
			Generation   int64
			Path, SHA256 string
			Content      []byte
		}
		want := func(rows ...stored) {
			t.Helper()
			var got []stored
			noErr(t, e.DB.Read.Model(&database.ModuleRow{}).Where("installation_id = ?", in.ID).Order("generation, path").Find(&got).Error)
			if !reflect.DeepEqual(got, rows) {
				for _, r := range got {
					t.Errorf("stored: generation %d %s %s (%d bytes)", r.Generation, r.Path, r.SHA256, len(r.Content))
				}
				t.Fatalf("want %d rows of generation %d", len(rows), rows[0].Generation)
			}
		}
		want(stored{1, "capabilities/a.wasm", sum(echo), echo}, stored{1, "capabilities/b.wasm", sum(echo), echo})
		for i, tt := range []struct {
			name string
			a, b []byte
		}{
			{"both unchanged", echo, echo},
			{"b changed", echo, exit3},
			{"a changed", exit3, exit3},
		} {
			gen := int64(i + 2)
			m["version"] = fmt.Sprintf("1.0.%d", gen)
			must(e.Life.Update(ctx, u, in.ID, e.Package(t, m, map[string][]byte{"capabilities/a.wasm": tt.a, "capabilities/b.wasm": tt.b})))(t)
			want(stored{gen, "capabilities/a.wasm", sum(tt.a), tt.a}, stored{gen, "capabilities/b.wasm", sum(tt.b), tt.b})
		}
	})
}

// A development package's modules are made ready while its transaction
// stores it: one that cannot run is refused, and nothing of the package is
// stored, whether it is the first install or an update.
func TestDevelopmentPackageWithModuleThatCannotRun(t *testing.T) {
	echo := wasmtest.Module(t, "../sandbox/testdata/modules", "echo")
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		u := e.User(t, "author")
		m := fixture.Manifest("com.test.dev", fixture.NS("notes", 1024))
		m["min_host_version"] = "1.7.12"
		m["capabilities"] = []any{map[string]any{"id": "dev.a", "kind": "tool", "description": "a", "module": "capabilities/a.wasm"}}
		pkg := func(version string, module []byte) []byte {
			m["version"] = version
			return e.Package(t, m, map[string][]byte{"capabilities/a.wasm": module})
		}
		_, err := e.Life.Install(ctx, u, pkg("1.0.0-dev.1", wasmtest.Invalid()))
		wantCode(t, err, models.ErrPackageRejected, "capabilities/a.wasm cannot run")
		// A plugin that is not valid either is refused for that first.
		m["permissions"] = []any{"storage", "teleport"}
		_, err = e.Life.Install(ctx, u, pkg("1.0.0-dev.1", wasmtest.Invalid()))
		wantCode(t, err, models.ErrPackageRejected, "the plugin is invalid", "/permissions")
		m["permissions"] = []any{"storage"}
		if ins := must(e.Life.Installations(ctx, u))(t); len(ins) != 0 {
			t.Fatalf("a refused first install left %+v", ins[0])
		}

		in := must(e.Life.Install(ctx, u, pkg("1.0.0-dev.1", echo)))(t)
		_, err = e.Life.Update(ctx, u, in.ID, pkg("1.0.0-dev.2", wasmtest.Invalid()))
		wantCode(t, err, models.ErrPackageRejected, "capabilities/a.wasm cannot run")
		now := must(e.Life.Installation(ctx, u, in.ID))(t)
		var rows []database.ModuleRow
		noErr(t, e.DB.Read.Where("installation_id = ?", in.ID).Find(&rows).Error)
		if now.Version != "1.0.0-dev.1" || now.Generation != 1 || len(rows) != 1 || rows[0].Generation != 1 || !bytes.Equal(rows[0].Content, echo) {
			t.Fatalf("a refused update left version %s, generation %d, %d module rows", now.Version, now.Generation, len(rows))
		}
	})
}

// forgets records the modules the lifecycle says are no longer needed, and
// passes everything on to the host's compiler.
type forgets struct {
	lifecycle.ModuleCompiler
	sums []string
}

func (f *forgets) ForgetModule(sum string) {
	f.sums = append(f.sums, sum)
	f.ModuleCompiler.ForgetModule(sum)
}

// An update of a development package tells the compiler which of its
// modules the new package no longer holds, so that they are not compiled;
// an update of any other package leaves the compilations alone.
func TestUpdateForgetsReplacedDevelopmentModules(t *testing.T) {
	echo := wasmtest.Module(t, "../sandbox/testdata/modules", "echo")
	exit3 := wasmtest.Module(t, "../sandbox/testdata/modules", "exit3")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	e := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/forget.db"})
	f := &forgets{ModuleCompiler: e.Life.Modules}
	e.Life.Modules = f
	u := e.User(t, "author")
	m := fixture.Manifest("com.test.forget", fixture.NS("notes", 1024))
	m["min_host_version"] = "1.7.12"
	m["capabilities"] = []any{map[string]any{"id": "forget.a", "kind": "tool", "description": "a", "module": "capabilities/a.wasm"}}
	pkg := func(version string, module []byte) []byte {
		m["version"] = version
		return e.Package(t, m, map[string][]byte{"capabilities/a.wasm": module})
	}
	in := must(e.Life.Install(ctx, u, pkg("1.0.0-dev.1", echo)))(t)
	for _, tt := range []struct {
		version string
		module  []byte
		want    []string
	}{
		{"1.0.0-dev.2", echo, nil},                  // the same module: kept
		{"1.0.0-dev.3", exit3, []string{sum(echo)}}, // replaced
		{"1.0.0", echo, []string{sum(exit3)}},       // the development package replaced
		{"1.0.1", exit3, nil},                       // not a development package
	} {
		f.sums = nil
		must(e.Life.Update(ctx, u, in.ID, pkg(tt.version, tt.module)))(t)
		if !reflect.DeepEqual(f.sums, tt.want) {
			t.Fatalf("the update to %s forgot %v, want %v", tt.version, f.sums, tt.want)
		}
	}
}
