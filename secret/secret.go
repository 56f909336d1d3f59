// Package secret provides the server's own secret keys: taken from the
// environment, or generated once into the data folder (mode 0600) and read
// from there at every start. Keys are never logged.
package secret

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Size is the size of a key in bytes.
const Size = 32

// Load returns the key named by envVar when set (base64 of 32 bytes), else the
// key in dir/name, creating it on first use. Replicas must share a key: give
// them the same environment variable.
func Load(envVar, dir, name string) ([]byte, error) {
	if v := strings.TrimSpace(os.Getenv(envVar)); v != "" {
		k, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(k) != Size {
			return nil, fmt.Errorf("%s must be the base64 of %d random bytes", envVar, Size)
		}
		return k, nil
	}
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) != Size {
			return nil, fmt.Errorf("%s is not a key written by pluginhost (base64 of %d bytes)", path, Size)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k := make([]byte, Size)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return Load(envVar, dir, name) // another process created it first
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		return nil, err
	}
	return k, f.Sync()
}
