package bundle

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Key file forms: PREFIX.pub holds "ed25519:" and the base64 public key;
// PREFIX.key holds "ed25519-private:" and the base64 32-byte seed, mode 0600.
const (
	publicKeyPrefix  = "ed25519:"
	privateKeyPrefix = "ed25519-private:"
)

// KeyID names a publisher key: the first 16 bytes of the SHA-256 of the public
// key, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:16])
}

// FormatPublicKey returns the text form of a public key, as in a .pub file.
func FormatPublicKey(pub ed25519.PublicKey) string {
	return publicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// ParsePublicKey reads the text form of a public key; the "ed25519:" prefix is
// optional.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, publicKeyPrefix)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("not an Ed25519 public key: want \"ed25519:\" followed by 32 bytes in base64, as in a .pub file written by pluginhost keygen")
	}
	return ed25519.PublicKey(b), nil
}

// GenerateKey writes a new key pair to prefix.key (mode 0600) and prefix.pub.
// It never overwrites an existing file.
func GenerateKey(prefix string) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := writeNew(prefix+".key", privateKeyPrefix+base64.StdEncoding.EncodeToString(priv.Seed())+"\n", 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(prefix+".pub", FormatPublicKey(pub)+"\n", 0o644); err != nil {
		os.Remove(prefix + ".key")
		return nil, err
	}
	return pub, nil
}

func writeNew(path, content string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s already exists; refusing to overwrite a key", path)
		}
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadPrivateKey reads a .key file written by GenerateKey.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), privateKeyPrefix)
	seed, err := base64.StdEncoding.DecodeString(s)
	if !ok || err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s is not a private key written by pluginhost keygen", path)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// LoadTrustedDir reads every *.pub file of a folder and returns the keys by id.
func LoadTrustedDir(dir string) (map[string]ed25519.PublicKey, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.pub"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("trusted keys folder: %w", err)
	}
	sort.Strings(paths)
	keys := map[string]ed25519.PublicKey{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		pub, err := ParsePublicKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		keys[KeyID(pub)] = pub
	}
	return keys, nil
}
