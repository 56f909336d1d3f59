package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"pluginhost/pluginbuild"
)

// The README and docs/ are self-contained: every relative link and every
// path they quote in backquotes that looks like a file of the repository
// exists in it, and nothing points outside the repository.
func TestDocsPointInsideTheRepository(t *testing.T) {
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md")
	link := regexp.MustCompile(`\]\(([^)#\s]+)`)
	quoted := regexp.MustCompile("`((?:\\.\\./)*[a-z][a-z0-9_-]*/[A-Za-z0-9_./-]+\\.(?:md|go|json|c|bash|graphqls|yml))`")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		var refs []string
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(m[1], "://") {
				refs = append(refs, filepath.Join(filepath.Dir(f), m[1]))
			}
		}
		for _, m := range quoted.FindAllStringSubmatch(text, -1) {
			refs = append(refs, m[1])
		}
		for _, r := range refs {
			if strings.HasPrefix(filepath.Clean(r), "..") {
				t.Errorf("%s points outside the repository: %s", f, r)
				continue
			}
			if strings.HasPrefix(r, "walkthrough/") || strings.Contains(r, "myplugin") {
				continue // made by the steps the text describes
			}
			if _, err := os.Stat(r); err != nil {
				t.Errorf("%s names %s, which a clone does not have", f, r)
			}
		}
	}
}

// The Debian packages that build C capabilities are one list: what
// pluginbuild.CPackages says, CI installs, the documents tell authors to
// install and the tests ask for when they are missing.
func TestCPackagesAreOneList(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), `C_PACKAGES="`+pluginbuild.CPackages+`"`) || !strings.Contains(string(ci), "apt-get install -y --no-install-recommends chromium $C_PACKAGES") {
		t.Errorf(".ci/run does not install C_PACKAGES=%q", pluginbuild.CPackages)
	}
	for _, f := range []string{"docs/plugins.md", "internal/wasmtest/c.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "apt-get install "+pluginbuild.CPackages) {
			t.Errorf("%s does not say apt-get install %s", f, pluginbuild.CPackages)
		}
		for _, m := range regexp.MustCompile(`apt-get install [a-z0-9 .-]*wasi-libc[a-z0-9 .-]*`).FindAllString(string(b), -1) {
			if strings.TrimSpace(m) != "apt-get install "+pluginbuild.CPackages {
				t.Errorf("%s says %q, not apt-get install %s", f, m, pluginbuild.CPackages)
			}
		}
	}
}
