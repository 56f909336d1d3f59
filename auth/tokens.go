package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"pluginhost/database"
	"pluginhost/models"
)

// NewToken is what Create needs.
type NewToken struct {
	User  string        // the user's name; the user is created if missing
	Admin bool          // make the user an admin
	TTL   time.Duration // time to live; 0 never expires
}

// Tokens lists a user's tokens, newest first, revoked and expired ones
// included. An unknown user is BAD_USER_INPUT.
func (s *Service) Tokens(ctx context.Context, userName string) ([]*models.Token, error) {
	var user database.UserRow
	err := s.DB.Read.WithContext(ctx).Where("issuer = '' AND subject = ?", strings.TrimSpace(userName)).Take(&user).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrBadUserInput, "no user is named %q", userName)
	}
	if err != nil {
		return nil, err
	}
	var rows []database.TokenRow
	if err := s.DB.Read.WithContext(ctx).Where("user_id = ?", user.ID).Order("created_at DESC, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*models.Token, len(rows))
	for i, r := range rows {
		out[i] = tokenModel(r, user)
	}
	return out, nil
}

// Revoke revokes a token by its id; the token stops working at once on this
// replica, and on every replica within RevocationPoll (WatchRevocations),
// which also closes what it opened. Revoking a revoked token changes
// nothing. An unknown id is BAD_USER_INPUT.
func (s *Service) Revoke(ctx context.Context, id string) (*models.Token, error) {
	var row database.TokenRow
	var user database.UserRow
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		row, user = database.TokenRow{}, database.UserRow{}
		if err := tx.Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		if row.RevokedAt == 0 {
			row.RevokedAt = time.Now().UnixMicro()
			if err := tx.Model(&database.TokenRow{}).Where("hash = ?", row.Hash).Update("revoked_at", row.RevokedAt).Error; err != nil {
				return err
			}
		}
		return tx.Where("id = ?", row.UserID).Take(&user).Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrBadUserInput, "no token has the id %q", id)
	}
	if err != nil {
		return nil, err
	}
	s.forget(row.Hash)
	return tokenModel(row, user), nil
}

func tokenModel(r database.TokenRow, u database.UserRow) *models.Token {
	t := &models.Token{ID: r.ID, UserID: u.ID, UserName: u.Name, UserAdmin: u.Admin, CreatedAt: time.UnixMicro(r.CreatedAt)}
	at := func(v int64) *time.Time {
		if v == 0 {
			return nil
		}
		t := time.UnixMicro(v)
		return &t
	}
	t.ExpiresAt, t.LastUsedAt, t.RevokedAt = at(r.ExpiresAt), at(r.LastUsedAt), at(r.RevokedAt)
	return t
}

// MaxUsersPage bounds a page of Users.
const MaxUsersPage = 100

// UserPage is a page of users and where it ends.
type UserPage struct {
	Users   []*models.User
	Cursors []string // of each user
	HasNext bool
}

// Users returns a page of the server's users, oldest first: first (1 to
// MaxUsersPage) users after the cursor of a user of a page before ("" from
// the start). A bad size or cursor is BAD_USER_INPUT.
func (s *Service) Users(ctx context.Context, first int, after string) (*UserPage, error) {
	if first < 1 || first > MaxUsersPage {
		return nil, models.Errorf(models.ErrBadUserInput, "first must be between 1 and %d", MaxUsersPage)
	}
	q := s.DB.Read.WithContext(ctx).Model(&database.UserRow{})
	if after != "" {
		at, id, err := readUserCursor(after)
		if err != nil {
			return nil, err
		}
		q = q.Where("created_at > ? OR (created_at = ? AND id > ?)", at, at, id)
	}
	var rows []database.UserRow
	if err := q.Order("created_at, id").Limit(first + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	p := &UserPage{HasNext: len(rows) > first}
	for _, r := range rows[:min(first, len(rows))] {
		p.Users = append(p.Users, r.Model())
		p.Cursors = append(p.Cursors, userCursor(r.CreatedAt, r.ID))
	}
	return p, nil
}

// A user cursor is opaque to clients: the position (creation, id) of a
// user in the list, in base64url.
const userCursorPrefix = "users:"

func userCursor(createdAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(userCursorPrefix + strconv.FormatInt(createdAt, 10) + ":" + id))
}

func readUserCursor(c string) (int64, string, error) {
	bad := models.Errorf(models.ErrBadUserInput, "after: %q is not a cursor of the user list", c)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), userCursorPrefix) {
		return 0, "", bad
	}
	at, id, ok := strings.Cut(strings.TrimPrefix(string(raw), userCursorPrefix), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", bad
	}
	return n, id, nil
}
