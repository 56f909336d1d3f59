// Command iconsubset makes the web host's icon font subset
// (fonts/material-symbols-subset.woff2) from the whole font and the names in
// fonts/icons.txt, when either changed since the subset was made: it runs
// fonts/subset.py with python3 and fontTools (Debian: python3-fonttools and
// python3-brotli; PYTHON names another interpreter), and records in
// fonts/material-symbols-subset.json the hashes it was made from. go generate
// ./preview/assets runs it; when the subset is up to date it does nothing,
// so that a machine without fontTools can run go generate.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Stamp is what fonts/material-symbols-subset.json records.
type Stamp struct {
	Font   string   `json:"font_sha256"`   // of the whole font
	Icons  string   `json:"icons_sha256"`  // of icons.txt
	Subset string   `json:"subset_sha256"` // of the subset made from them
	Names  []string `json:"icons"`
}

func sum(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "iconsubset:", err)
	os.Exit(1)
}

func main() {
	dir := "fonts"
	font, icons := filepath.Join(dir, "material-symbols-outlined.woff2"), filepath.Join(dir, "icons.txt")
	out, stampFile := filepath.Join(dir, "material-symbols-subset.woff2"), filepath.Join(dir, "material-symbols-subset.json")
	want := Stamp{Font: sum(font), Icons: sum(icons)}
	var have Stamp
	if b, err := os.ReadFile(stampFile); err == nil {
		json.Unmarshal(b, &have)
	}
	if have.Font == want.Font && have.Icons == want.Icons {
		if _, err := os.Stat(out); err == nil && sum(out) == have.Subset {
			return
		}
	}
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, filepath.Join(dir, "subset.py"), font, icons, out)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("%s fonts/subset.py: %w (it needs fontTools: apt-get install python3-fonttools python3-brotli, or set PYTHON)", python, err))
	}
	b, err := os.ReadFile(icons)
	if err != nil {
		fail(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			want.Names = append(want.Names, l)
		}
	}
	want.Subset = sum(out)
	j, _ := json.MarshalIndent(want, "", "  ")
	if err := os.WriteFile(stampFile, append(j, '\n'), 0o644); err != nil {
		fail(err)
	}
}
