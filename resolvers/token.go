package resolvers

import (
	"time"

	"pluginhost/graph"
	"pluginhost/models"
)

// accessToken maps a token's description to its GraphQL type.
func accessToken(t *models.Token) *graph.AccessToken {
	at := func(v *time.Time) *string {
		if v == nil {
			return nil
		}
		s := models.FormatTime(*v)
		return &s
	}
	return &graph.AccessToken{ID: t.ID, UserID: t.UserID, UserName: t.UserName, CreatedAt: models.FormatTime(t.CreatedAt),
		ExpiresAt: at(t.ExpiresAt), LastUsedAt: at(t.LastUsedAt), RevokedAt: at(t.RevokedAt), Active: t.Active(time.Now())}
}

// nonEmpty is nil for "", else a pointer to s.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
