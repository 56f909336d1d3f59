package validator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pluginhost/models"
)

// maxFuzzInput bounds fuzz inputs a little above the config size limit, so
// that the too-large path is exercised too.
const maxFuzzInput = 40 * 1024

// FuzzCheckUIConfig checks that no input makes the validator panic, that
// every check ends quickly, that the report is well formed and bounded, and
// that the quiet check agrees with the full one. The seed corpus is every
// config of testdata plus testdata/fuzz/FuzzCheckUIConfig.
func FuzzCheckUIConfig(f *testing.F) {
	for _, glob := range []string{"testdata/configs/valid/*.json", "testdata/plugins/*/ui/*.json"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	cases, _ := filepath.Glob("testdata/configs/invalid/*.json")
	for _, file := range cases {
		var c corpusCase
		if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &c) == nil {
			f.Add([]byte(c.Config))
		}
	}
	m := loadManifest(f, "manifest.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			data = data[:maxFuzzInput]
		}
		for _, man := range []*models.Manifest{m, nil} {
			r := CheckUIConfig(data, man, "")
			checkReport(t, r, len(data))
			q := newUI(man, "")
			q.quiet = true
			q.check(data)
			if has := len(r.Errors)+len(r.Warnings) > 0; q.found != has {
				t.Fatalf("the quiet check found a problem: %v; the full check reported: %v", q.found, has)
			}
		}
	})
}

// checkReport checks the shape of a report: Valid agrees with Errors, every
// problem has a JSON Pointer, a code and a message, and the number of
// problems is bounded by the input's size.
func checkReport(t *testing.T, r *Report, size int) {
	t.Helper()
	if r.Valid != (len(r.Errors) == 0) {
		t.Fatalf("Valid = %v with %d errors", r.Valid, len(r.Errors))
	}
	if n := len(r.Errors) + len(r.Warnings); n > 4*size+64 {
		t.Fatalf("%d problems for %d bytes", n, size)
	}
	for _, p := range append(r.Errors, r.Warnings...) {
		if p.Code == "" || p.Message == "" || (p.Path != "" && !strings.HasPrefix(p.Path, "/")) {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}

// FuzzCheckManifest does the same for manifests.
func FuzzCheckManifest(f *testing.F) {
	for _, file := range []string{"testdata/configs/manifest.json", "testdata/configs/manifest-basic.json", "testdata/plugins/gallery/manifest.json"} {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			data = data[:maxFuzzInput]
		}
		m, r := CheckManifest(data)
		checkReport(t, r, len(data))
		if (m != nil) != r.Valid {
			t.Fatalf("manifest returned = %v, Valid = %v", m != nil, r.Valid)
		}
	})
}
