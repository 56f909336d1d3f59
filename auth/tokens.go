package auth

import (
	"context"
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

// tokenList names the cursors of a user's tokens.
const tokenList = "accessTokens"

// Tokens returns a page of a user's tokens, newest first, revoked and
// expired ones included. An unknown user is BAD_USER_INPUT.
func (s *Service) Tokens(ctx context.Context, userName string, args models.PageArgs) (*models.Page[*models.Token], error) {
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(tokenList, 2)
	if err != nil {
		return nil, err
	}
	var user database.UserRow
	err = s.DB.Read.WithContext(ctx).Where("issuer = '' AND subject = ?", strings.TrimSpace(userName)).Take(&user).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrBadUserInput, "no user is named %q", userName)
	}
	if err != nil {
		return nil, err
	}
	q := s.DB.Read.WithContext(ctx).Where("user_id = ?", user.ID)
	if after != nil {
		at, err := models.CursorInt(tokenList, after[0])
		if err != nil {
			return nil, err
		}
		q = q.Where("created_at < ? OR (created_at = ? AND id > ?)", at, at, after[1])
	}
	var rows []database.TokenRow
	if err := q.Order("created_at DESC, id").Limit(size + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	read := make([]*models.Token, len(rows))
	for i, r := range rows {
		read[i] = tokenModel(r, user)
	}
	return models.NewPage(tokenList, size, read, func(t *models.Token) []string {
		return []string{strconv.FormatInt(t.CreatedAt.UnixMicro(), 10), t.ID}
	}), nil
}

// Token returns one token by its id. An unknown id is BAD_USER_INPUT.
func (s *Service) Token(ctx context.Context, id string) (*models.Token, error) {
	var row database.TokenRow
	var user database.UserRow
	err := s.DB.Read.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if err == nil {
		err = s.DB.Read.WithContext(ctx).Where("id = ?", row.UserID).Take(&user).Error
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrBadUserInput, "no token has the id %q", id)
	}
	if err != nil {
		return nil, err
	}
	return tokenModel(row, user), nil
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

// userList names the cursors of the users.
const userList = "users"

// Users returns a page of the server's users, oldest first.
func (s *Service) Users(ctx context.Context, args models.PageArgs) (*models.Page[*models.User], error) {
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(userList, 2)
	if err != nil {
		return nil, err
	}
	q := s.DB.Read.WithContext(ctx).Model(&database.UserRow{})
	if after != nil {
		at, err := models.CursorInt(userList, after[0])
		if err != nil {
			return nil, err
		}
		q = q.Where("created_at > ? OR (created_at = ? AND id > ?)", at, at, after[1])
	}
	var rows []database.UserRow
	if err := q.Order("created_at, id").Limit(size + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	page := models.NewPage(userList, size, rows, func(r database.UserRow) []string {
		return []string{strconv.FormatInt(r.CreatedAt, 10), r.ID}
	})
	return models.MapPage(page, func(r database.UserRow) *models.User { return r.Model() }), nil
}

// User returns a user by id. An unknown id is BAD_USER_INPUT.
func (s *Service) User(ctx context.Context, id string) (*models.User, error) {
	var row database.UserRow
	err := s.DB.Read.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrBadUserInput, "no user has the id %q", id)
	}
	if err != nil {
		return nil, err
	}
	return row.Model(), nil
}
