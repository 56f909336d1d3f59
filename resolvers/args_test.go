package resolvers

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// A package arrives as base64 in one line or wrapped in lines (as
// base64(1) writes it), in either alphabet; anything else is refused.
func TestDecodePackage(t *testing.T) {
	pkg := bytes.Repeat([]byte("PK\x03\x04 package bytes \xff\xfe"), 40)
	one := base64.StdEncoding.EncodeToString(pkg)
	var wrapped strings.Builder
	for i := 0; i < len(one); i += 76 {
		wrapped.WriteString(one[i:min(i+76, len(one))] + "\r\n")
	}
	for name, s := range map[string]string{"one line": one, "wrapped": wrapped.String(), "url alphabet": base64.RawURLEncoding.EncodeToString(pkg)} {
		if got, err := decodePackage(s); err != nil || !bytes.Equal(got, pkg) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := decodePackage("not base64!"); err == nil {
		t.Error("a package that is not base64 was read")
	}
}
