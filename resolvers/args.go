package resolvers

import (
	"context"
	"encoding/base64"
	"strings"

	"pluginhost/auth"
	"pluginhost/models"
	"pluginhost/storage"
)

// caller is the storage caller of an app client request: the authenticated user.
func (r *Resolver) caller(ctx context.Context) (storage.Caller, error) {
	user, err := auth.Require(ctx)
	if err != nil {
		return storage.Caller{}, err
	}
	return storage.Caller{UserID: user.ID}, nil
}

// decodePackage reads the base64 of a package file (standard or URL alphabet,
// padded or not, white space ignored).
func decodePackage(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, models.Errorf(models.ErrBadUserInput, "package must be the base64 of a package file written by pluginhost package")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
