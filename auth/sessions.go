package auth

import (
	"cmp"
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

// DefaultSessionTTL is how long a sign-in with a token lasts at most.
const DefaultSessionTTL = 30 * 24 * time.Hour

// DefaultIssuerSessionTTL is how long a sign-in with the identity provider
// lasts at most: the user's name and admin flag are decided by the
// provider's claims when it begins, so a change at the provider (a group
// removed) takes effect at the next sign-in, this long later at the latest.
const DefaultIssuerSessionTTL = 12 * time.Hour

// Seal labels of the two kinds of session cookies.
const (
	sealToken  = "session"
	sealIssuer = "issuer-session"
)

// Sessions are the web host's sign-ins: a person gives a token once, or
// signs in with the identity provider, and the browser keeps a cookie. The
// database holds only the session's id's hash, so that signing out ends
// the session everywhere.
//
// A token's session cookie holds the session's id and the token, sealed
// with the server's key; it ends when its token is revoked or expires,
// when it is signed out, or after TTL. An issuer's session cookie holds its
// id and its user's id, sealed under another label; its row keeps whether
// the user was an admin when it began and the ID token (sealed) that ends
// the provider's session at sign-out; it ends when it is signed out or
// after IssuerTTL.
type Sessions struct {
	Auth   *Service
	Sealer *secret.Sealer
	// TTL bounds a token's session; zero selects DefaultSessionTTL.
	TTL time.Duration
	// IssuerTTL bounds an issuer's session; zero selects
	// DefaultIssuerSessionTTL.
	IssuerTTL time.Duration
}

var errNoSession = models.Errorf(models.ErrUnauthenticated, "the session ended; sign in again")

// Start signs in with a token: it returns the cookie's value, the user, and
// when the session ends.
func (s *Sessions) Start(ctx context.Context, token string) (string, *models.User, time.Time, error) {
	user, tokenEnds, err := s.Auth.Session(ctx, token)
	if err != nil {
		return "", nil, time.Time{}, err
	}
	ends := time.Now().Add(cmp.Or(s.TTL, DefaultSessionTTL))
	if !tokenEnds.IsZero() && tokenEnds.Before(ends) {
		ends = tokenEnds
	}
	id, err := s.insert(ctx, database.WebSessionRow{UserID: user.ID, ExpiresAt: ends.UnixMicro()})
	if err != nil {
		return "", nil, time.Time{}, err
	}
	return s.seal(id, token, sealToken), user, ends, nil
}

// StartIssuer signs in a user of the identity provider, an admin or not as
// its claims said; idToken, kept sealed, ends the provider's session at
// sign-out. It returns the cookie's value and when the session ends.
func (s *Sessions) StartIssuer(ctx context.Context, user *models.User, idToken string) (string, time.Time, error) {
	ends := time.Now().Add(cmp.Or(s.IssuerTTL, DefaultIssuerSessionTTL))
	row := database.WebSessionRow{UserID: user.ID, ExpiresAt: ends.UnixMicro(), Admin: user.Admin}
	if idToken != "" {
		hint := base64.RawURLEncoding.EncodeToString(s.Sealer.Seal([]byte(idToken), "issuer-session-end"))
		row.EndHint = &hint
	}
	id, err := s.insert(ctx, row)
	if err != nil {
		return "", time.Time{}, err
	}
	return s.seal(id, user.ID, sealIssuer), ends, nil
}

func (s *Sessions) insert(ctx context.Context, row database.WebSessionRow) ([]byte, error) {
	id := make([]byte, 32)
	rand.Read(id)
	row.IDHash, row.CreatedAt = sessionHash(id), time.Now().UnixMicro()
	if err := database.Retry(ctx, func() error { return s.Auth.DB.Write.WithContext(ctx).Create(&row).Error }); err != nil {
		return nil, err
	}
	return id, nil
}

func (s *Sessions) seal(id []byte, rest, label string) string {
	plain := append(append([]byte{}, id...), rest...)
	return base64.RawURLEncoding.EncodeToString(s.Sealer.Seal(plain, label))
}

// Verify returns the identity of a session cookie's value: its user, when
// it ends, and for a token's session the token. An unknown, ended or
// tampered one is UNAUTHENTICATED.
func (s *Sessions) Verify(ctx context.Context, value string) (Identity, error) {
	id, rest, label, err := s.unseal(value)
	if err != nil {
		return Identity{}, errNoSession
	}
	var row struct {
		database.WebSessionRow
		UserName    string
		UserIssuer  string
		UserSubject string
	}
	err = s.Auth.DB.Read.WithContext(ctx).Table("web_sessions").
		Select("web_sessions.user_id, web_sessions.expires_at, web_sessions.admin, users.name AS user_name, users.issuer AS user_issuer, users.subject AS user_subject").
		Joins("JOIN users ON users.id = web_sessions.user_id").Where("web_sessions.id_hash = ?", sessionHash(id)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || err == nil && time.Now().UnixMicro() >= row.ExpiresAt {
		return Identity{}, errNoSession
	}
	if err != nil {
		return Identity{}, err
	}
	ends := time.UnixMicro(row.ExpiresAt)
	if label == sealIssuer {
		if rest != row.UserID || row.UserIssuer == "" {
			return Identity{}, errNoSession
		}
		user := database.UserRow{ID: row.UserID, Name: row.UserName, Admin: row.Admin, Issuer: row.UserIssuer, Subject: row.UserSubject}
		return Identity{User: user.Model(), Ends: ends}, nil
	}
	user, tokenEnds, err := s.Auth.Session(ctx, rest)
	if err != nil || user.ID != row.UserID {
		return Identity{}, errNoSession
	}
	if !tokenEnds.IsZero() && tokenEnds.Before(ends) {
		ends = tokenEnds
	}
	return Identity{User: user, Ends: ends, Credential: rest}, nil
}

// Open returns the user of a session cookie's value and the token it
// stands for ("" for a session signed in with the identity provider); an
// unknown, ended or tampered one is UNAUTHENTICATED.
func (s *Sessions) Open(ctx context.Context, value string) (*models.User, string, error) {
	id, err := s.Verify(ctx, value)
	if err != nil {
		return nil, "", err
	}
	return id.User, id.Credential, nil
}

// End signs a session out; an unknown one is already ended. For a session
// signed in with the identity provider, it returns the ID token it began
// with, which ends the provider's session too.
func (s *Sessions) End(ctx context.Context, value string) (idToken string, err error) {
	id, _, label, err := s.unseal(value)
	if err != nil {
		return "", nil
	}
	hash := sessionHash(id)
	if label == sealIssuer {
		var row database.WebSessionRow
		if err := s.Auth.DB.Read.WithContext(ctx).Where("id_hash = ?", hash).Take(&row).Error; err == nil && row.EndHint != nil {
			if sealed, err := base64.RawURLEncoding.DecodeString(*row.EndHint); err == nil {
				if plain, err := s.Sealer.Open(sealed, "issuer-session-end"); err == nil {
					idToken = string(plain)
				}
			}
		}
	}
	err = database.Retry(ctx, func() error {
		return s.Auth.DB.Write.WithContext(ctx).Where("id_hash = ?", hash).Delete(&database.WebSessionRow{}).Error
	})
	return idToken, err
}

// unseal opens a cookie's value: the session's id, what follows it (the
// token, or the user's id), and the label it was sealed under.
func (s *Sessions) unseal(value string) (id []byte, rest, label string, err error) {
	sealed, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(value) > 1024 {
		return nil, "", "", errNoSession
	}
	for _, label := range []string{sealToken, sealIssuer} {
		if plain, err := s.Sealer.Open(sealed, label); err == nil && len(plain) > 32 {
			return plain[:32], string(plain[32:]), label, nil
		}
	}
	return nil, "", "", errNoSession
}

func sessionHash(id []byte) string {
	h := sha256.Sum256(id)
	return hex.EncodeToString(h[:])
}
