// Package auth manages users and their bearer tokens and authenticates requests.
// A token is 256 random bits shown once at creation; only its SHA-256 is stored,
// so a leaked database does not leak usable tokens.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"pluginhost/database"
	"pluginhost/models"
)

// TokenPrefix starts every token, so that a token is recognisable in a leak scan.
const TokenPrefix = "ph_"

// MaxUserNameLength bounds user names, in characters.
const MaxUserNameLength = 128

// CacheTTL is how long an authenticated token is remembered, so that a busy
// client does not cost a database read per request.
const CacheTTL = 10 * time.Second

// maxCached bounds the remembered tokens.
const maxCached = 10000

// Service creates users and tokens and authenticates tokens.
type Service struct {
	DB *database.DB

	mu    sync.Mutex
	cache map[string]cached // by token hash
}

type cached struct {
	user    *models.User
	expires time.Time
}

// CreateToken creates the user if missing and returns a new token for it. With
// admin, the user is made an admin (an existing admin stays one either way).
func (s *Service) CreateToken(ctx context.Context, name string, admin bool) (string, *models.User, error) {
	name = strings.TrimSpace(name)
	if err := checkUserName(name); err != nil {
		return "", nil, err
	}
	token := TokenPrefix + randomToken()
	var user database.UserRow
	err := s.DB.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Where("name = ?", name).Take(&user).Error
		now := time.Now().UnixMicro()
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			user = database.UserRow{ID: models.NewID(models.PrefixUser), Name: name, Admin: admin, CreatedAt: now}
			if err := tx.Create(&user).Error; err != nil {
				return err
			}
		case err != nil:
			return err
		case admin && !user.Admin:
			user.Admin = true
			if err := tx.Model(&user).Update("admin", true).Error; err != nil {
				return err
			}
		}
		return tx.Create(&database.TokenRow{Hash: HashToken(token), UserID: user.ID, CreatedAt: now}).Error
	})
	if err != nil {
		return "", nil, err
	}
	return token, user.Model(), nil
}

func checkUserName(name string) error {
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxUserNameLength {
		return models.Errorf(models.ErrBadUserInput, "user name must have 1 to %d characters", MaxUserNameLength)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return models.Errorf(models.ErrBadUserInput, "user name may not contain control characters")
		}
	}
	return nil
}

// Authenticate returns the user a token belongs to. A missing, malformed or
// unknown token is UNAUTHENTICATED.
func (s *Service) Authenticate(ctx context.Context, token string) (*models.User, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 128 {
		return nil, errUnauthenticated
	}
	hash := HashToken(token)
	now := time.Now()
	s.mu.Lock()
	c, ok := s.cache[hash]
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.user, nil
	}
	var user database.UserRow
	err := s.DB.Read.WithContext(ctx).
		Joins("JOIN tokens ON tokens.user_id = users.id").
		Where("tokens.hash = ?", hash).
		Take(&user).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errUnauthenticated
	}
	if err != nil {
		return nil, err
	}
	u := user.Model()
	s.mu.Lock()
	if s.cache == nil || len(s.cache) >= maxCached {
		s.cache = map[string]cached{}
	}
	s.cache[hash] = cached{user: u, expires: now.Add(CacheTTL)}
	s.mu.Unlock()
	return u, nil
}

var errUnauthenticated = models.Errorf(models.ErrUnauthenticated, "a valid bearer token is required")

// FromHeader extracts the token of an `Authorization: Bearer <token>` value.
func FromHeader(v string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// HashToken returns the stored form of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

type ctxKey struct{}

// WithUser returns a context carrying the authenticated user.
func WithUser(ctx context.Context, u *models.User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// UserFrom returns the authenticated user of a context.
func UserFrom(ctx context.Context) (*models.User, bool) {
	u, ok := ctx.Value(ctxKey{}).(*models.User)
	return u, ok && u != nil
}

// Require returns the authenticated user or UNAUTHENTICATED.
func Require(ctx context.Context) (*models.User, error) {
	if u, ok := UserFrom(ctx); ok {
		return u, nil
	}
	return nil, errUnauthenticated
}

// RequireAdmin returns the authenticated admin, or FORBIDDEN for other users.
func RequireAdmin(ctx context.Context) (*models.User, error) {
	u, err := Require(ctx)
	if err != nil {
		return nil, err
	}
	if !u.Admin {
		return nil, models.Errorf(models.ErrForbidden, "this operation is for admins")
	}
	return u, nil
}
