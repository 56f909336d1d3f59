package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// Sealer encrypts values at rest (AES-256-GCM) with a key derived from the
// server's secret key for one purpose. Each sealed value is bound to its
// context (such as the Instance and connection it belongs to): opened with
// another context, it does not open.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer derives the purpose's key from the server's key.
func NewSealer(serverKey []byte, purpose string) (*Sealer, error) {
	m := hmac.New(sha256.New, serverKey)
	m.Write([]byte("pluginhost sealer: " + purpose))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext bound to context: a random nonce, then the
// ciphertext and its tag.
func (s *Sealer) Seal(plaintext []byte, context string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plaintext, []byte(context))
}

// ErrUnsealed is the error of a sealed value that does not open: altered,
// sealed with another key, or for another context.
var ErrUnsealed = errors.New("a sealed value does not open with this server's key and its context")

// Open decrypts what Seal gave for the same context.
func (s *Sealer) Open(sealed []byte, context string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, ErrUnsealed
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(context))
	if err != nil {
		return nil, ErrUnsealed
	}
	return out, nil
}
