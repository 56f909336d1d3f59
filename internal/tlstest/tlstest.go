// Package tlstest gives tests a certificate authority (package devca) and
// its PEM file: an HTTPS server on loopback that the host trusts only
// through the operator's --egress-ca, as a real private service would be.
package tlstest

import (
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"pluginhost/internal/devca"
)

// CA is a certificate authority of a test.
type CA struct {
	*devca.CA
	// PEMFile holds the CA's certificate, as --egress-ca takes it.
	PEMFile string
}

// NewCA makes a CA valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := devca.New(name, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := ca.WritePEM(file); err != nil {
		t.Fatal(err)
	}
	return &CA{CA: ca, PEMFile: file}
}

// Issue makes a server certificate for the names (DNS names or IP
// addresses).
func (ca *CA) Issue(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	c, err := ca.CA.Issue(names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
