package validator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidCorpus checks that every plain config of testdata/configs/valid is
// accepted without a problem; files named v2-* use only the forms that exist
// before 1.7.12 and are accepted with a manifest that does not raise
// min_host_version too.
func TestValidCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/configs/valid/*.json")
	if len(files) < 5 {
		t.Fatalf("only %d valid configs", len(files))
	}
	full := loadManifest(t, "manifest.json")
	basic := loadManifest(t, "manifest-basic.json")
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			quietAgrees(t, raw, full, "")
			r := CheckUIConfig(raw, full, "")
			if !r.Valid || len(r.Warnings) > 0 {
				t.Fatalf("errors:%s\nwarnings:%s", messages(r.Errors), messages(r.Warnings))
			}
			if strings.HasPrefix(name, "v2-") {
				r := CheckUIConfig(raw, basic, "")
				for _, p := range r.Errors {
					if p.Code == CodeMinHostVersion {
						t.Errorf("a UI v2 form needs min_host_version: %s %s", p.Path, p.Message)
					}
				}
			}
		})
	}
}
