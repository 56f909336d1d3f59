package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"

	"gorm.io/gorm"

	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/secret"
)

// DefaultSessionTTL is how long a sign-in lasts at most.
const DefaultSessionTTL = 30 * 24 * time.Hour

// Sessions are the web host's sign-ins: a person gives a token once and the
// browser keeps a cookie. The cookie holds the session's id and the token,
// sealed with the server's key; the database holds only the id's hash, so
// that signing out ends the session everywhere. A session ends when its
// token is revoked or expires, when it is signed out, or after TTL.
type Sessions struct {
	Auth   *Service
	Sealer *secret.Sealer
	// TTL bounds a session; zero selects DefaultSessionTTL.
	TTL time.Duration
}

var errNoSession = models.Errorf(models.ErrUnauthenticated, "the session ended; sign in again")

// Start signs in with a token: it returns the cookie's value, the user, and
// when the session ends.
func (s *Sessions) Start(ctx context.Context, token string) (string, *models.User, time.Time, error) {
	user, tokenEnds, err := s.Auth.Session(ctx, token)
	if err != nil {
		return "", nil, time.Time{}, err
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	now := time.Now()
	ends := now.Add(ttl)
	if !tokenEnds.IsZero() && tokenEnds.Before(ends) {
		ends = tokenEnds
	}
	id := make([]byte, 32)
	rand.Read(id)
	row := database.WebSessionRow{IDHash: sessionHash(id), UserID: user.ID, CreatedAt: now.UnixMicro(), ExpiresAt: ends.UnixMicro()}
	if err := database.Retry(ctx, func() error { return s.Auth.DB.Write.WithContext(ctx).Create(&row).Error }); err != nil {
		return "", nil, time.Time{}, err
	}
	plain := append(append([]byte{}, id...), token...)
	return base64.RawURLEncoding.EncodeToString(s.Sealer.Seal(plain, "session")), user, ends, nil
}

// Open returns the user of a session cookie's value and the token it
// stands for; an unknown, ended or tampered one is UNAUTHENTICATED.
func (s *Sessions) Open(ctx context.Context, value string) (*models.User, string, error) {
	id, token, err := s.unseal(value)
	if err != nil {
		return nil, "", errNoSession
	}
	var row database.WebSessionRow
	err = s.Auth.DB.Read.WithContext(ctx).Where("id_hash = ?", sessionHash(id)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && time.Now().UnixMicro() >= row.ExpiresAt {
		return nil, "", errNoSession
	}
	if err != nil {
		return nil, "", err
	}
	user, err := s.Auth.Authenticate(ctx, token)
	if err != nil || user.ID != row.UserID {
		return nil, "", errNoSession
	}
	return user, token, nil
}

// End signs a session out; an unknown one is already ended.
func (s *Sessions) End(ctx context.Context, value string) error {
	id, _, err := s.unseal(value)
	if err != nil {
		return nil
	}
	return database.Retry(ctx, func() error {
		return s.Auth.DB.Write.WithContext(ctx).Where("id_hash = ?", sessionHash(id)).Delete(&database.WebSessionRow{}).Error
	})
}

func (s *Sessions) unseal(value string) (id []byte, token string, err error) {
	sealed, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(value) > 1024 {
		return nil, "", errNoSession
	}
	plain, err := s.Sealer.Open(sealed, "session")
	if err != nil || len(plain) <= 32 {
		return nil, "", errNoSession
	}
	return plain[:32], string(plain[32:]), nil
}

func sessionHash(id []byte) string {
	h := sha256.Sum256(id)
	return hex.EncodeToString(h[:])
}
