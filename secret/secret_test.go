package secret

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	k1, err := Load("PLUGINHOST_TEST_SECRET_UNSET", dir, "k.key")
	if err != nil || len(k1) != Size {
		t.Fatalf("generate: %v", err)
	}
	st, _ := os.Stat(filepath.Join(dir, "k.key"))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	k2, _ := Load("PLUGINHOST_TEST_SECRET_UNSET", dir, "k.key")
	if !bytes.Equal(k1, k2) {
		t.Fatal("the key changed between starts")
	}
	env := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, Size))
	t.Setenv("PLUGINHOST_TEST_SECRET", env)
	k3, err := Load("PLUGINHOST_TEST_SECRET", dir, "k.key")
	if err != nil || !bytes.Equal(k3, bytes.Repeat([]byte{7}, Size)) {
		t.Fatalf("environment key: %v", err)
	}
	t.Setenv("PLUGINHOST_TEST_SECRET", "short")
	if _, err := Load("PLUGINHOST_TEST_SECRET", dir, "k.key"); err == nil {
		t.Fatal("a malformed environment key was accepted")
	}
}

func TestSealer(t *testing.T) {
	key := make([]byte, Size)
	s, err := NewSealer(key, "credentials")
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal([]byte("sk-live-123"), "inst_a/github")
	if bytes.Contains(sealed, []byte("sk-live-123")) {
		t.Fatal("the plaintext is in the sealed value")
	}
	if got, err := s.Open(sealed, "inst_a/github"); err != nil || string(got) != "sk-live-123" {
		t.Fatalf("open: %q %v", got, err)
	}
	other, _ := NewSealer(key, "oauth states")
	altered := append([]byte{}, sealed...)
	altered[len(altered)-1] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"another context": func() ([]byte, error) { return s.Open(sealed, "inst_b/github") },
		"another purpose": func() ([]byte, error) { return other.Open(sealed, "inst_a/github") },
		"altered":         func() ([]byte, error) { return s.Open(altered, "inst_a/github") },
		"truncated":       func() ([]byte, error) { return s.Open(sealed[:5], "inst_a/github") },
	} {
		if _, err := open(); err != ErrUnsealed {
			t.Errorf("%s: %v, want ErrUnsealed", name, err)
		}
	}
}
