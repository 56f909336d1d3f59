// Package aitools gives the user's AI assistant the standard storage tools of
// the Instances the user allowed it to use: a list of tools with opaque
// handles, and a call through a handle. Every call goes through the storage
// service with the AI's restrictions; the scope comes from the handle alone.
package aitools

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// handlePrefix starts every handle, so that one is recognisable.
const handlePrefix = "aih1_"

// Handles issues and opens tool handles. A handle is the scope it grants
// (Instance, capability, package generation) sealed with a server secret:
// AES-256-GCM whose nonce is an HMAC of the scope, so the same scope always
// gets the same handle, and a handle cannot be read, guessed, forged or
// changed to another scope without the secret.
type Handles struct {
	aead  cipher.AEAD
	nonce []byte // the key of the nonce HMAC
}

// NewHandles derives the handle keys from a 32-byte server secret.
func NewHandles(secret []byte) (*Handles, error) {
	if len(secret) < 32 {
		return nil, errors.New("aitools: the handle secret must have at least 32 bytes")
	}
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("pluginhost ai tool handles: " + label))
		return m.Sum(nil)
	}
	block, err := aes.NewCipher(derive("seal"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Handles{aead: aead, nonce: derive("nonce")}, nil
}

// scope is what a handle grants.
type scope struct {
	instanceID string
	capability string
	generation int64
}

func (s scope) encode() []byte {
	b := make([]byte, 0, 16+len(s.instanceID)+len(s.capability))
	b = binary.AppendUvarint(b, uint64(len(s.instanceID)))
	b = append(b, s.instanceID...)
	b = binary.AppendUvarint(b, uint64(len(s.capability)))
	b = append(b, s.capability...)
	return binary.AppendVarint(b, s.generation)
}

func decodeScope(b []byte) (scope, bool) {
	var s scope
	field := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		v := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return v, true
	}
	var ok bool
	if s.instanceID, ok = field(); !ok {
		return s, false
	}
	if s.capability, ok = field(); !ok {
		return s, false
	}
	g, k := binary.Varint(b)
	if k <= 0 || k != len(b) {
		return s, false
	}
	s.generation = g
	return s, true
}

// Issue returns the handle of a scope.
func (h *Handles) Issue(instanceID, capability string, generation int64) string {
	plain := scope{instanceID, capability, generation}.encode()
	m := hmac.New(sha256.New, h.nonce)
	m.Write(plain)
	nonce := m.Sum(nil)[:h.aead.NonceSize()]
	sealed := h.aead.Seal(append([]byte(nil), nonce...), nonce, plain, []byte(handlePrefix))
	return handlePrefix + base64.RawURLEncoding.EncodeToString(sealed)
}

// errBadHandle says nothing about why a handle was refused.
var errBadHandle = errors.New("not a tool handle issued by this host")

// Open returns the scope of a handle issued by Issue.
func (h *Handles) Open(handle string) (instanceID, capability string, generation int64, err error) {
	rest, ok := strings.CutPrefix(handle, handlePrefix)
	if !ok || len(rest) > 1024 {
		return "", "", 0, errBadHandle
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	ns := h.aead.NonceSize()
	if err != nil || len(raw) < ns+h.aead.Overhead() {
		return "", "", 0, errBadHandle
	}
	plain, err := h.aead.Open(nil, raw[:ns], raw[ns:], []byte(handlePrefix))
	if err != nil {
		return "", "", 0, errBadHandle
	}
	s, ok := decodeScope(plain)
	if !ok {
		return "", "", 0, errBadHandle
	}
	return s.instanceID, s.capability, s.generation, nil
}
