package bundle

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"pluginhost/models"
)

type entry struct {
	name string
	data []byte
}

// rezip writes entries as a zip, in order.
func rezip(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	zw.Close()
	return buf.Bytes()
}

// unzip returns a package's entries in order.
func unzip(t *testing.T, pkg []byte) []entry {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	for _, f := range zr.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		out = append(out, entry{f.Name, b.Bytes()})
	}
	return out
}

func testFiles() map[string][]byte {
	return map[string][]byte{
		"manifest.json": []byte(`{"id":"com.example.notes"}`),
		"ui/main.json":  []byte(`{"ui_schema":2}`),
	}
}

func TestBuildOpenRoundTrip(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	for name, build := range map[string]func(map[string][]byte, ed25519.PrivateKey) ([]byte, error){"deflated": Build, "stored": BuildStored} {
		t.Run(name, func(t *testing.T) {
			pkg, err := build(testFiles(), key)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Open(pkg)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if p.KeyID != KeyID(key.Public().(ed25519.PublicKey)) || len(p.Files) != 2 || string(p.Files["ui/main.json"]) != `{"ui_schema":2}` {
				t.Fatalf("package = %+v", p)
			}
			again, _ := build(testFiles(), key)
			if !bytes.Equal(pkg, again) {
				t.Error("building the same folder twice gave different bytes")
			}
			if stored := bytes.Contains(pkg, []byte(`{"ui_schema":2}`)); stored != (name == "stored") {
				t.Errorf("the files are stored as they are: %v", stored)
			}
		})
	}
}

func TestOpenRefusesTampering(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	good, _ := Build(testFiles(), key)
	entries := unzip(t, good)
	sigIndex := len(entries) - 1
	var sig signature
	json.Unmarshal(entries[sigIndex].data, &sig)

	with := func(change func(es []entry) []entry) []byte {
		es := append([]entry(nil), entries...)
		return rezip(t, change(es))
	}
	resign := func(mutate func(s *signature)) []byte {
		s := sig
		s.Files = map[string]string{}
		for k, v := range sig.Files {
			s.Files[k] = v
		}
		mutate(&s)
		b, _ := json.Marshal(s)
		return with(func(es []entry) []entry { es[sigIndex] = entry{SignatureEntry, b}; return es })
	}
	tests := []struct {
		name string
		pkg  []byte
		msg  string
	}{
		{"not a zip", []byte("hello"), "not a valid zip"},
		{"unsigned", rezip(t, entries[:sigIndex]), "not signed"},
		{"changed file", with(func(es []entry) []entry {
			es[0] = entry{es[0].name, append(es[0].data, ' ')}
			return es
		}), "was changed after signing"},
		{"extra file", with(func(es []entry) []entry { return append(es, entry{"ui/extra.json", []byte("{}")}) }), "extra file"},
		{"missing file", with(func(es []entry) []entry { return es[1:] }), "missing from the package"},
		{"file and its listed hash both changed", func() []byte {
			b := resign(func(s *signature) { s.Files[entries[0].name] = sha([]byte("{}")) })
			es := unzip(t, b)
			es[0] = entry{es[0].name, []byte("{}")}
			return rezip(t, es)
		}(), "does not verify"},
		{"signature by another key", func() []byte {
			other, _ := Build(testFiles(), otherKey)
			oes := unzip(t, other)
			var os signature
			json.Unmarshal(oes[len(oes)-1].data, &os)
			return resign(func(s *signature) { s.Signature = os.Signature })
		}(), "does not verify"},
		{"key id does not match the key", resign(func(s *signature) { s.KeyID = strings.Repeat("0", 32) }), "malformed publisher key"},
		{"malformed signature entry", with(func(es []entry) []entry { es[sigIndex] = entry{SignatureEntry, []byte("{")}; return es }), "malformed"},
		{"duplicate entry", with(func(es []entry) []entry { return append([]entry{es[0]}, es...) }), "more than once"},
		{"path traversal", with(func(es []entry) []entry { return append(es, entry{"../evil.json", []byte("{}")}) }), "clean relative path"},
		{"absolute path", with(func(es []entry) []entry { return append(es, entry{"/etc/passwd", []byte("x")}) }), "clean relative path"},
		{"oversized file", with(func(es []entry) []entry {
			return append(es, entry{"big.bin", make([]byte, MaxFileBytes+1)})
		}), "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.pkg)
			if models.ErrorCode(err) != models.ErrPackageRejected {
				t.Fatalf("err = %v, want %s", err, models.ErrPackageRejected)
			}
			if tt.msg != "" && !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.msg)
			}
		})
	}
}

func TestKeysAndReadDir(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "alice")
	pub, err := GenerateKey(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(prefix + ".key"); st.Mode().Perm() != 0o600 {
		t.Errorf(".key mode = %v, want 0600", st.Mode().Perm())
	}
	if _, err := GenerateKey(prefix); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second keygen over the same prefix: %v", err)
	}
	priv, err := LoadPrivateKey(prefix + ".key")
	if err != nil || !priv.Public().(ed25519.PublicKey).Equal(pub) {
		t.Fatalf("LoadPrivateKey: %v", err)
	}
	pubText, _ := os.ReadFile(prefix + ".pub")
	parsed, err := ParsePublicKey(string(pubText))
	if err != nil || !parsed.Equal(pub) {
		t.Fatalf("ParsePublicKey(.pub): %v", err)
	}
	if _, err := ParsePublicKey("ed25519:AAAA"); err == nil {
		t.Error("short key accepted")
	}
	trusted, err := LoadTrustedDir(dir)
	if err != nil || trusted[KeyID(pub)] == nil || len(trusted) != 1 {
		t.Fatalf("LoadTrustedDir = %v, %v", trusted, err)
	}

}

// ReadPlugin reads what the manifest names (its extensions' configs, its
// capabilities' modules) and lists every other file as left out; hidden
// files and folders are neither.
func TestReadPlugin(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"ui", ".git", "src/summary", "capabilities"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	manifest := `{"extensions":[{"id":"main","point":"screen"}],` +
		`"capabilities":[{"id":"a.b","kind":"tool","module":"capabilities/a.wasm","source":"src/summary"}]}`
	for name, content := range map[string]string{
		"manifest.json": manifest, "ui/main.json": "{}", "ui/old.json": "{}", ".git/HEAD": "x", ".DS_Store": "x",
		"src/summary/main.go": "package main", "go.mod": "module x", "capabilities/a.wasm": "\x00asm", "README.md": "hi",
	} {
		os.WriteFile(filepath.Join(src, filepath.FromSlash(name)), []byte(content), 0o644)
	}
	f, err := ReadPlugin(src)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for name := range f.Files {
		kept = append(kept, name)
	}
	sort.Strings(kept)
	if want := []string{"capabilities/a.wasm", "manifest.json", "ui/main.json"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if want := []string{"README.md", "go.mod", "src/summary/main.go", "ui/old.json"}; !slices.Equal(f.LeftOut, want) {
		t.Errorf("left out %v, want %v", f.LeftOut, want)
	}
}
