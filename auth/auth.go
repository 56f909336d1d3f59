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
// client does not cost a database read per request. It is also how long a
// token revoked on another replica, or with the CLI, may still be accepted
// here; a token revoked through this replica stops working at once.
const CacheTTL = 10 * time.Second

// LastUseResolution is how often a token's last use is written: at most once
// a minute per token, so that a busy client does not cost a write per request.
const LastUseResolution = time.Minute

// MaxTTL bounds a token's time to live.
const MaxTTL = 10 * 365 * 24 * time.Hour

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
	expires time.Time // of the cache entry
	ends    time.Time // of the token; zero when it never expires
}

// CreateToken creates the user if missing and returns a new token for it
// that never expires. With admin, the user is made an admin (an existing admin
// stays one either way).
func (s *Service) CreateToken(ctx context.Context, name string, admin bool) (string, *models.User, error) {
	token, info, err := s.Create(ctx, NewToken{User: name, Admin: admin})
	if err != nil {
		return "", nil, err
	}
	return token, &models.User{ID: info.UserID, Name: info.UserName, Admin: info.UserAdmin}, nil
}

// Create creates the user if missing and returns a new token for it, with
// what may be shown of it.
func (s *Service) Create(ctx context.Context, req NewToken) (string, *models.Token, error) {
	name := strings.TrimSpace(req.User)
	if err := checkUserName(name); err != nil {
		return "", nil, err
	}
	if req.TTL < 0 || req.TTL > 0 && req.TTL < time.Second || req.TTL > MaxTTL {
		return "", nil, models.Errorf(models.ErrBadUserInput, "a token's time to live must be between 1 second and %v (none: never expires)", MaxTTL)
	}
	token := TokenPrefix + randomToken()
	var user database.UserRow
	now := time.Now()
	row := database.TokenRow{Hash: HashToken(token), ID: models.NewID(models.PrefixToken), CreatedAt: now.UnixMicro()}
	if req.TTL > 0 {
		row.ExpiresAt = now.Add(req.TTL).UnixMicro()
	}
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		user = database.UserRow{}
		err := tx.Where("issuer = '' AND subject = ?", name).Take(&user).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			user = database.UserRow{ID: models.NewID(models.PrefixUser), Name: name, Subject: name, Admin: req.Admin, CreatedAt: now.UnixMicro()}
			if err := tx.Create(&user).Error; err != nil {
				return err
			}
		case err != nil:
			return err
		case req.Admin && !user.Admin:
			user.Admin = true
			if err := tx.Model(&user).Update("admin", true).Error; err != nil {
				return err
			}
		}
		row.UserID = user.ID
		return tx.Create(&row).Error
	})
	if err != nil {
		return "", nil, err
	}
	return token, tokenModel(row, user), nil
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

// Authenticate returns the user a token belongs to. A missing, malformed,
// unknown, expired or revoked token is UNAUTHENTICATED. A token is read from
// the database at most once per CacheTTL (a revocation anywhere is seen
// sooner: see WatchRevocations), and its last use is recorded then, at most
// once per LastUseResolution.
func (s *Service) Authenticate(ctx context.Context, token string) (*models.User, error) {
	u, _, err := s.Session(ctx, token)
	return u, err
}

// Session is Authenticate, and also returns when the token expires (zero
// when it never does), so that what it opens can end then.
func (s *Service) Session(ctx context.Context, token string) (*models.User, time.Time, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 128 {
		return nil, time.Time{}, errUnauthenticated
	}
	hash := HashToken(token)
	now := time.Now()
	if c, ok := s.remembered(hash, now); ok {
		return c.user, c.ends, nil
	}
	// The token and its user, in one read; a token without a user is unknown.
	var row struct {
		database.TokenRow
		UserName  string
		UserAdmin bool
	}
	err := s.DB.Read.WithContext(ctx).Table("tokens").
		Select("tokens.user_id, tokens.expires_at, tokens.last_used_at, tokens.revoked_at, users.name AS user_name, users.admin AS user_admin").
		Joins("JOIN users ON users.id = tokens.user_id").Where("tokens.hash = ?", hash).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, time.Time{}, errUnauthenticated
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	user := database.UserRow{ID: row.UserID, Name: row.UserName, Admin: row.UserAdmin}
	if !tokenModel(row.TokenRow, user).Active(now) {
		return nil, time.Time{}, errUnauthenticated
	}
	if now.Sub(time.UnixMicro(row.LastUsedAt)) >= LastUseResolution {
		// Best effort: a failure to record a use must not refuse the request.
		s.DB.Write.WithContext(ctx).Model(&database.TokenRow{}).Where("hash = ?", hash).Update("last_used_at", now.UnixMicro())
	}
	u := user.Model()
	expires := now.Add(CacheTTL)
	var ends time.Time
	if row.ExpiresAt != 0 {
		ends = time.UnixMicro(row.ExpiresAt)
		if ends.Before(expires) {
			expires = ends
		}
	}
	s.mu.Lock()
	if s.cache == nil || len(s.cache) >= maxCached {
		s.cache = map[string]cached{}
	}
	s.cache[hash] = cached{user: u, expires: expires, ends: ends}
	s.mu.Unlock()
	return u, ends, nil
}

// Verify authenticates a token (Session) as an Identity: the token's user,
// its expiry, and the token.
func (s *Service) Verify(ctx context.Context, token string) (Identity, error) {
	u, ends, err := s.Session(ctx, token)
	if err != nil {
		return Identity{}, err
	}
	return Identity{User: u, Ends: ends, Credential: token}, nil
}

// Known returns the identity of a token authenticated within CacheTTL,
// without I/O.
func (s *Service) Known(token string) (Identity, bool) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 128 {
		return Identity{}, false
	}
	c, ok := s.remembered(HashToken(token), time.Now())
	if !ok {
		return Identity{}, false
	}
	return Identity{User: c.user, Ends: c.ends, Credential: token}, true
}

// remembered returns the cache entry of a token's hash while it holds.
func (s *Service) remembered(hash string, now time.Time) (cached, bool) {
	s.mu.Lock()
	c, ok := s.cache[hash]
	s.mu.Unlock()
	return c, ok && now.Before(c.expires)
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

// WithUser returns a context carrying the authenticated user, and tells a
// tracker of the context (see TrackUser) who it is.
func WithUser(ctx context.Context, u *models.User) context.Context {
	if t, ok := ctx.Value(trackerKey{}).(*tracker); ok && u != nil {
		t.mu.Lock()
		t.userID = u.ID
		t.mu.Unlock()
	}
	return context.WithValue(ctx, ctxKey{}, u)
}

type trackerKey struct{}

type tracker struct {
	mu     sync.Mutex
	userID string
}

// TrackUser returns a context that remembers the user later authenticated in
// it or in a context derived from it, and a function that returns that user's
// id ("" when none was). The access log uses it: authentication happens deep
// in the handler chain, on a context the log does not see.
func TrackUser(ctx context.Context) (context.Context, func() string) {
	t := &tracker{}
	return context.WithValue(ctx, trackerKey{}, t), func() string {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.userID
	}
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
