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
