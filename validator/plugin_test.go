package validator

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
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
