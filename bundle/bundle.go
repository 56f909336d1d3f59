// Package bundle reads plugin source folders and writes and verifies signed
// plugin package files.
//
// A package is a zip of the plugin folder plus one signature entry,
// META-INF/pluginhost-signature.json, that lists every file's path and SHA-256
// and carries an Ed25519 signature by the publisher key over a digest of that
// list. Open refuses an unsigned package, a changed, extra or missing file, and a
// bad signature, each with its own message; whether the key is trusted is the
// installer's decision.
package bundle

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"pluginhost/models"
)

// SignatureEntry is the path of the signature inside a package.
const SignatureEntry = "META-INF/pluginhost-signature.json"

// signatureFormat versions the signature entry and the digest.
const signatureFormat = "pluginhost-signature-v1"

// Limits of a package, so that a hostile file cannot exhaust the server
// (contract: "a module file at most 8 MiB (a package may then hold up to
// 16 MiB)").
const (
	MaxPackageBytes = 16 << 20 // the package file
	MaxFileBytes    = 1 << 20  // one file but a module, uncompressed
	MaxModuleBytes  = 8 << 20  // one capability module (*.wasm), uncompressed
	MaxTotalBytes   = 24 << 20 // all files, uncompressed
	MaxFiles        = 256
)

// maxFileBytes is the limit of one file by its name.
func maxFileBytes(name string) int {
	if strings.HasSuffix(name, ".wasm") {
		return MaxModuleBytes
	}
	return MaxFileBytes
}

// Package is a verified package: its files, the publisher key that signed it
// and the SHA-256 of the package file.
type Package struct {
	Files     map[string][]byte
	PublicKey ed25519.PublicKey
	KeyID     string
	SHA256    string
}

type signature struct {
	Format    string            `json:"format"`
	KeyID     string            `json:"key_id"`
	PublicKey string            `json:"public_key"`
	Files     map[string]string `json:"files"`
	Signature string            `json:"signature"`
}

func rejectf(format string, args ...any) error {
	return models.Errorf(models.ErrPackageRejected, format, args...)
}

// checkPath accepts relative, clean, slash-separated UTF-8 paths outside META-INF.
func checkPath(p string) error {
	switch {
	case p == "" || !utf8.ValidString(p) || len(p) > 256:
		return rejectf("file path %q is not a valid path of 1 to 256 bytes", p)
	case strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
		return rejectf("file path %q is not a clean relative path", p)
	case p == "META-INF" || strings.HasPrefix(p, "META-INF/"):
		return rejectf("file path %q: META-INF/ is reserved for the signature", p)
	}
	return nil
}

// digest is what the publisher signs: the format, then each path and its
// SHA-256 in path order.
func digest(hashes map[string]string) []byte {
	paths := make([]string, 0, len(hashes))
	for p := range hashes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	io.WriteString(h, signatureFormat+"\n")
	for _, p := range paths {
		io.WriteString(h, p+"\x00"+hashes[p]+"\n")
	}
	return h.Sum(nil)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Build writes a signed package of files.
func Build(files map[string][]byte, key ed25519.PrivateKey) ([]byte, error) {
	return build(files, key, zip.Deflate)
}

// BuildStored is Build with the files stored as they are, not compressed:
// quicker to make and to open, for a package that only crosses to a local
// server (pluginhost dev). It opens and verifies as any package does.
func BuildStored(files map[string][]byte, key ed25519.PrivateKey) ([]byte, error) {
	return build(files, key, zip.Store)
}

func build(files map[string][]byte, key ed25519.PrivateKey, method uint16) ([]byte, error) {
	hashes := map[string]string{}
	paths := make([]string, 0, len(files))
	for p, b := range files {
		if err := checkPath(p); err != nil {
			return nil, err
		}
		hashes[p] = sha(b)
		paths = append(paths, p)
	}
	sort.Strings(paths)
	pub := key.Public().(ed25519.PublicKey)
	sig := signature{
		Format:    signatureFormat,
		KeyID:     KeyID(pub),
		PublicKey: base64.StdEncoding.EncodeToString(pub),
		Files:     hashes,
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, digest(hashes))),
	}
	sigJSON, err := json.MarshalIndent(sig, "", "  ")
	if err != nil {
		return nil, err
	}
	// Room for the files as they are, their headers and the signature.
	size := len(sigJSON) + 512
	for _, p := range paths {
		size += len(files[p]) + 2*len(p) + 128
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	zw := zip.NewWriter(buf)
	// A fixed time keeps packages of the same folder byte-identical.
	mtime := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range append(paths, SignatureEntry) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p, Method: method, Modified: mtime})
		if err != nil {
			return nil, err
		}
		content := sigJSON
		if p != SignatureEntry {
			content = files[p]
		}
		if _, err := w.Write(content); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > MaxPackageBytes {
		return nil, fmt.Errorf("the package would have %d bytes; at most %d are allowed", buf.Len(), MaxPackageBytes)
	}
	return buf.Bytes(), nil
}

// Open reads a package file and verifies that it is whole and signed: every
// file is covered by the signature with its exact content, nothing is missing
// or extra, and the signature verifies with the key it names.
func Open(data []byte) (*Package, error) {
	if len(data) > MaxPackageBytes {
		return nil, rejectf("the package has %d bytes; at most %d are allowed", len(data), MaxPackageBytes)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, rejectf("the package is not a valid zip file: %v", err)
	}
	if len(zr.File) > MaxFiles+1 {
		return nil, rejectf("the package has %d entries; at most %d files are allowed", len(zr.File), MaxFiles)
	}
	files := map[string][]byte{}
	var sigJSON []byte
	total := int64(0)
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") && f.UncompressedSize64 == 0 {
			continue // a folder entry
		}
		if !f.Mode().IsRegular() {
			return nil, rejectf("package entry %q is not a regular file", f.Name)
		}
		if f.Name != SignatureEntry {
			if err := checkPath(f.Name); err != nil {
				return nil, err
			}
		}
		if _, dup := files[f.Name]; dup || (f.Name == SignatureEntry && sigJSON != nil) {
			return nil, rejectf("package entry %q appears more than once", f.Name)
		}
		b, err := readEntry(f, &total)
		if err != nil {
			return nil, err
		}
		if f.Name == SignatureEntry {
			sigJSON = b
			continue
		}
		files[f.Name] = b
	}
	if sigJSON == nil {
		return nil, rejectf("the package is not signed: it has no %s; build it with pluginhost package", SignatureEntry)
	}
	var sig signature
	dec := json.NewDecoder(bytes.NewReader(sigJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sig); err != nil || sig.Format != signatureFormat {
		return nil, rejectf("the package signature entry is malformed (want format %s)", signatureFormat)
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		want, ok := sig.Files[p]
		if !ok {
			return nil, rejectf("file %q is in the package but not covered by the signature (an extra file)", p)
		}
		if sha(files[p]) != want {
			return nil, rejectf("file %q was changed after signing: its SHA-256 does not match the signature", p)
		}
	}
	var listed []string
	for p := range sig.Files {
		listed = append(listed, p)
	}
	sort.Strings(listed)
	for _, p := range listed {
		if _, ok := files[p]; !ok {
			return nil, rejectf("file %q is covered by the signature but missing from the package", p)
		}
	}
	pub, err := base64.StdEncoding.DecodeString(sig.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize || KeyID(pub) != sig.KeyID {
		return nil, rejectf("the package signature names a malformed publisher key")
	}
	s, err := base64.StdEncoding.DecodeString(sig.Signature)
	if err != nil || !ed25519.Verify(pub, digest(sig.Files), s) {
		return nil, rejectf("the package signature does not verify with publisher key %s: the file list or the signature was altered", sig.KeyID)
	}
	return &Package{Files: files, PublicKey: pub, KeyID: sig.KeyID, SHA256: sha(data)}, nil
}

// readEntry reads one entry, refusing more than the file and total limits
// whatever the zip header claims.
func readEntry(f *zip.File, total *int64) ([]byte, error) {
	limit := maxFileBytes(f.Name)
	if f.UncompressedSize64 > uint64(limit) {
		return nil, rejectf("file %q has %d bytes; a file of its kind may have at most %d", f.Name, f.UncompressedSize64, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, rejectf("file %q cannot be read: %v", f.Name, err)
	}
	defer rc.Close()
	// Read into room for what the header says (checked above; the zip
	// reader refuses an entry longer or shorter than it), not a buffer
	// that grows by copies: a package's module has megabytes.
	buf := bytes.NewBuffer(make([]byte, 0, f.UncompressedSize64+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(rc, int64(limit)+1)); err != nil {
		return nil, rejectf("file %q is corrupt: %v", f.Name, err)
	}
	b := buf.Bytes()
	if len(b) > limit {
		return nil, rejectf("file %q has more than %d bytes", f.Name, limit)
	}
	*total += int64(len(b))
	if *total > MaxTotalBytes {
		return nil, rejectf("the package's files add up to more than %d bytes", MaxTotalBytes)
	}
	return b, nil
}
