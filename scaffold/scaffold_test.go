package scaffold_test

import (
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/scaffold"
	"pluginhost/validator"
)

// A new folder, in Go and in C, holds a valid manifest and valid screens (a
// screen and a home card), the tool's source and test, and a README; Go
// sources are gofmt's, and the Go folder reaches the kit written into it.
func TestNew(t *testing.T) {
	for _, lang := range []string{scaffold.Go, scaffold.C} {
		t.Run(lang, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "Field Notes")
			p, err := scaffold.New(scaffold.Options{Dir: dir, Lang: lang})
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != "com.example.field_notes" || p.Name != "Field notes" || p.Tool != "field_notes.summary" {
				t.Fatalf("made %+v", p)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			m, report := validator.CheckManifest(raw)
			if !report.Valid || len(report.Warnings) > 0 {
				t.Fatalf("manifest: %+v", report)
			}
			points := map[string]bool{}
			for _, e := range m.Extensions {
				points[e.Point] = true
				config, err := os.ReadFile(filepath.Join(dir, e.ConfigFile()))
				if err != nil {
					t.Fatal(err)
				}
				if r := validator.CheckUIConfig(config, m, e.ID); !r.Valid || len(r.Warnings) > 0 {
					t.Fatalf("%s: %+v", e.ConfigFile(), r)
				}
			}
			if !points["screen"] || !points["home"] || m.EffectiveStorage() == nil || len(m.Capabilities) != 1 || m.Capabilities[0].Kind != "tool" {
				t.Fatalf("the manifest lacks a screen, a home card, storage or a tool: %s", raw)
			}
			want := map[string][]string{
				scaffold.Go: {"README.md", ".gitignore", "go.mod", "src/summary/main.go", "src/summary/main_test.go", "kit/go.mod", "kit/kit.go"},
				scaffold.C:  {"README.md", ".gitignore", "src/summary/summary.c", "src/summary/json.h", "test/summary_test.c"},
			}[lang]
			for _, f := range want {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatalf("no %s: %v", f, err)
				}
				if strings.Contains(string(b), "{{") && !strings.HasSuffix(f, ".json") && !strings.HasSuffix(f, ".md") {
					t.Errorf("%s holds a template placeholder", f)
				}
				if strings.HasSuffix(f, ".go") {
					if formatted, err := format.Source(b); err != nil || string(formatted) != string(b) {
						t.Errorf("%s is not gofmt's: %v", f, err)
					}
				}
			}
			readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
			for _, want := range []string{"pluginhost build\n", "pluginhost dev --token", p.Tool, p.ID} {
				if !strings.Contains(string(readme), want) {
					t.Errorf("the README does not say %q", want)
				}
			}
			if lang == scaffold.Go {
				mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
				if !strings.Contains(string(mod), "replace pluginhost/kit => ./kit") {
					t.Errorf("go.mod does not reach the kit:\n%s", mod)
				}
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644)
	for _, tt := range []struct {
		name string
		o    scaffold.Options
		want string
	}{
		{"a folder that is not empty", scaffold.Options{Dir: full}, "is not empty"},
		{"a plugin id that is not one", scaffold.Options{Dir: filepath.Join(t.TempDir(), "x"), ID: "Com.Example"}, "is not a plugin id"},
		{"a language it does not know", scaffold.Options{Dir: filepath.Join(t.TempDir(), "x"), Lang: "rust"}, "go or c"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := scaffold.New(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(full, "notes.txt")); string(b) != "mine" {
		t.Fatal("a refused folder was changed")
	}
	p, err := scaffold.New(scaffold.Options{Dir: filepath.Join(t.TempDir(), "9 lives")})
	if err != nil || p.ID != "com.example.plugin_9_lives" {
		t.Fatalf("a folder name starting with a digit: %+v %v", p, err)
	}
}
