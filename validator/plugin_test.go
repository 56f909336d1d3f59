package validator

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pluginhost/models"
)

// readPlugin reads a plugin folder of testdata as CheckPlugin takes it.
func readPlugin(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestValidPlugins(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/plugins/*")
	if len(dirs) == 0 {
		t.Fatal("no plugins in testdata/plugins")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, r := CheckPlugin(readPlugin(t, dir))
			if !r.Valid || m == nil || len(r.Errors) > 0 {
				t.Fatalf("errors: %+v", r.Errors)
			}
			if len(r.Warnings) > 0 {
				t.Fatalf("warnings: %+v", r.Warnings)
			}
		})
	}
}

// gallery returns the gallery plugin's files with changes applied.
func gallery(t *testing.T, change func(files map[string][]byte)) map[string][]byte {
	files := readPlugin(t, "testdata/plugins/gallery")
	if change != nil {
		change(files)
	}
	return files
}

type fileProblem struct{ file, path, code string }

func fileProblems(ps []models.Problem) []fileProblem {
	out := make([]fileProblem, len(ps))
	for i, p := range ps {
		out[i] = fileProblem{p.File, p.Path, p.Code}
	}
	return out
}

func TestCheckPlugin(t *testing.T) {
	replace := func(file, old, new string) func(map[string][]byte) {
		return func(f map[string][]byte) {
			s := string(f[file])
			if !strings.Contains(s, old) {
				panic(file + " does not contain " + old)
			}
			f[file] = []byte(strings.Replace(s, old, new, 1))
		}
	}
	tests := []struct {
		name     string
		change   func(map[string][]byte)
		errors   []fileProblem
		warnings []fileProblem
	}{
		{"manifest.json missing", func(f map[string][]byte) { delete(f, "manifest.json") },
			[]fileProblem{{"manifest.json", "", CodeMissingFile}}, nil},
		{"a config file missing", func(f map[string][]byte) { delete(f, "ui/detail.json") },
			[]fileProblem{
				{"manifest.json", "/extensions/1/config", CodeMissingFile},
				// main navigates to detail, which is still declared; its
				// parameters no longer reach any config, so nothing else fails.
			}, nil},
		{"a file no extension uses", func(f map[string][]byte) { f["ui/old.json"] = []byte(`{}`) },
			nil, []fileProblem{{"ui/old.json", "", CodeUnreferencedFile}}},
		{"config defaults to ui/<id>.json", func(f map[string][]byte) {
			replace("manifest.json", `{"id": "detail", "point": "screen", "config": "ui/detail.json"}`, `{"id": "detail", "point": "screen"}`)(f)
		}, nil, nil},
		{"default config missing", func(f map[string][]byte) {
			replace("manifest.json", `{"id": "detail", "point": "screen", "config": "ui/detail.json"}`, `{"id": "detail", "point": "screen"}`)(f)
			delete(f, "ui/detail.json")
		}, []fileProblem{{"manifest.json", "/extensions/1", CodeMissingFile}}, nil},
		{"config under another name", func(f map[string][]byte) {
			replace("manifest.json", `"config": "ui/detail.json"`, `"config": "ui/note.json"`)(f)
			f["ui/note.json"] = f["ui/detail.json"]
			delete(f, "ui/detail.json")
		}, nil, []fileProblem{{"manifest.json", "/extensions/1/config", CodeConfigPath}}},
		{"route parameter nobody passes", replace("ui/detail.json", `{{context.route.filter.tag}}`, `{{context.route.tag}}`),
			[]fileProblem{{"ui/detail.json", "/view/children/1/props/text", CodeUndeclaredRoute}}, nil},
		{"route parameter of another extension", replace("ui/home_card.json", `"{{data.weather.data.city}}"`, `"{{context.route.note_key}}"`),
			[]fileProblem{{"ui/home_card.json", "/view/children/0/props/label", CodeUndeclaredRoute}}, nil},
		{"navigate to an extension that does not exist", replace("ui/home_card.json", `"target": "main"`, `"target": "settings"`),
			[]fileProblem{{"ui/home_card.json", "/view/props/action/target", CodeUnknownTarget}}, nil},
		{"images without the network permission", replace("manifest.json", `"permissions": ["storage", "network"]`, `"permissions": ["storage"]`),
			[]fileProblem{{"ui/main.json", "/view/children/0/children/0/children/0/children/0/children/0/children/0/children/0/props/url", CodeNetworkPermission}}, nil},
		{"images with the network permission and no network.hosts", replace("manifest.json", `"permissions": ["storage", "network"],`, `"permissions": ["storage", "network"], "network": {},`),
			nil, nil},
		{"newer features without min_host_version", replace("manifest.json", `"min_host_version": "1.7.12",`, ``),
			[]fileProblem{
				{"manifest.json", "/capabilities/0/input_schema", CodeMinHostVersion},
				{"ui/main.json", "/app_bar/actions/1/action/parameters", CodeMinHostVersion},
				{"ui/main.json", "/view/children/0/children/0/children/0/children/1/children/0/children/0/props/required", CodeMinHostVersion},
				{"ui/main.json", "/view/children/0/children/0/children/0/children/1/children/0/children/2/props/disabled_when", CodeMinHostVersion},
				{"ui/main.json", "/view/children/0/children/0/children/0/children/1/children/0/children/2/props/action", CodeMinHostVersion},
				{"ui/main.json", "/view/children/0/children/0/children/0/children/2/children/4/props/options_source", CodeMinHostVersion},
				{"ui/detail.json", "/app_bar/actions/0/action/result", CodeMinHostVersion},
				{"ui/detail.json", "/app_bar/actions/1/action", CodeMinHostVersion},
			}, nil},
		{"an invalid manifest does not hide the configs' problems", func(f map[string][]byte) {
			replace("manifest.json", `"version": "1.0.0"`, `"version": "one"`)(f)
			replace("ui/home_card.json", `"unit": "°C"`, `"unit": 5`)(f)
		}, []fileProblem{
			{"manifest.json", "/version", CodeFormat},
			{"ui/home_card.json", "/view/children/0/props/unit", CodeType},
		}, nil},
		{"a response extension without a2ui", replace("ui/weather_answer.json", `"a2ui"`, `"a2ui_"`),
			[]fileProblem{
				// A missing member sorts at its parent, here the root.
				{"ui/weather_answer.json", "/a2ui", CodeRequired},
				{"ui/weather_answer.json", "/a2ui_", CodeUnknownField},
			}, nil},
		{"a2ui on a screen", func(f map[string][]byte) { f["ui/home_card.json"] = f["ui/weather_answer.json"] },
			[]fileProblem{{"ui/home_card.json", "/a2ui", CodeA2UINotAllowed}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, r := CheckPlugin(gallery(t, tt.change))
			if got := fileProblems(r.Errors); !sameFileProblems(got, tt.errors) {
				t.Errorf("errors = %v\nwant     %v%s", got, tt.errors, messages(r.Errors))
			}
			if got := fileProblems(r.Warnings); !sameFileProblems(got, tt.warnings) {
				t.Errorf("warnings = %v\nwant       %v%s", got, tt.warnings, messages(r.Warnings))
			}
			if r.Valid != (len(tt.errors) == 0) || (m != nil) != r.Valid {
				t.Errorf("Valid = %v, manifest returned = %v", r.Valid, m != nil)
			}
		})
	}
}

func sameFileProblems(a, b []fileProblem) bool {
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

func TestCheckPluginIsDeterministic(t *testing.T) {
	files := gallery(t, func(f map[string][]byte) {
		f["ui/main.json"] = []byte(strings.ReplaceAll(string(f["ui/main.json"]), `"type": "text"`, `"type": "txt"`))
		f["ui/zz.json"] = []byte(`{}`)
		f["ui/aa.json"] = []byte(`{}`)
	})
	_, first := CheckPlugin(files)
	if len(first.Errors) < 5 {
		t.Fatalf("expected many errors, got %d", len(first.Errors))
	}
	for i := 0; i < 20; i++ {
		_, r := CheckPlugin(files)
		if !reflect.DeepEqual(r, first) {
			t.Fatal("two checks of the same plugin gave different reports")
		}
	}
}
