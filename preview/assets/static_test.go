package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The icon font subset was made from the font and icons.txt as they are:
// after a change to either, go generate ./preview/assets makes it again
// (iconsubset), and until then this test fails.
func TestIconSubset(t *testing.T) {
	sum := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	raw, err := os.ReadFile("fonts/material-symbols-subset.json")
	if err != nil {
		t.Fatal(err)
	}
	var stamp struct {
		Font   string   `json:"font_sha256"`
		Icons  string   `json:"icons_sha256"`
		Subset string   `json:"subset_sha256"`
		Names  []string `json:"icons"`
	}
	if err := json.Unmarshal(raw, &stamp); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, recorded string }{
		{"fonts/" + IconFont, stamp.Font},
		{"fonts/icons.txt", stamp.Icons},
		{"fonts/" + IconFontSubset, stamp.Subset},
	} {
		if sum(c.file) != c.recorded {
			t.Errorf("%s changed since the subset was made: run go generate ./preview/assets", c.file)
		}
	}
	if !reflect.DeepEqual(stamp.Names, SubsetIcons()) {
		t.Errorf("the subset draws %v, icons.txt lists %v", stamp.Names, SubsetIcons())
	}
	// The subset is what makes a first visit light.
	if st, _ := StaticFile(StaticName(IconFontSubset)); len(st.Body) > 32<<10 {
		t.Errorf("the subset has %d bytes; at most 32 KiB", len(st.Body))
	}
}

// app.css names the fonts by their hashed names, sets the host's themes,
// and the page's script starts with the catalog, the themes and the
// subset's icons.
func TestStaticCSS(t *testing.T) {
	st, ok := StaticFile(StaticName("app.css"))
	if !ok {
		t.Fatal("no app.css")
	}
	css := string(st.Body)
	for _, want := range []string{`url("` + StaticName(IconFontSubset) + `")`, `url("` + StaticName(IconFont) + `")`,
		":root{color-scheme:light;--ph-background:#fef7ff;", ":root[data-theme=dark]{color-scheme:dark;", "@media (prefers-color-scheme: dark)"} {
		if !strings.Contains(css, want) {
			t.Errorf("app.css lacks %s", want)
		}
	}
	if strings.Contains(css, `url("`+IconFont+`")`) || strings.Contains(css, `url("`+IconFontSubset+`")`) {
		t.Error("app.css names a font by its plain name")
	}
	script, _ := StaticFile(StaticName("shell.js"))
	for _, want := range []string{`window.pluginhostCatalog = JSON.parse("{\"`, `window.pluginhostThemes = JSON.parse("{\"dark\":{`, `window.pluginhostIcons = JSON.parse("[\"account_circle\",`} {
		if !strings.Contains(string(script.Body), want) {
			t.Errorf("shell.js lacks %s", want)
		}
	}
	if !strings.HasSuffix(string(script.Body), Bundle("shell.js")) {
		t.Error("shell.js does not end with the bundle of its modules")
	}
}
