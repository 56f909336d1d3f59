package kit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/kit"
)

// Source holds every Go file of the kit but its tests and itself: a plugin
// folder's kit builds.
func TestSourceIsTheKit(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "source.go" {
			continue
		}
		want, _ := os.ReadFile(f)
		got, err := kit.Source.ReadFile(f)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s is not in kit.Source: add it to the go:embed line of source.go", f)
		}
	}
}
