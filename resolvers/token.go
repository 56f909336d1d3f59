package resolvers

import (
	"time"

	"pluginhost/auth"
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

// userConnection maps a page of users to its GraphQL connection.
func userConnection(p *auth.UserPage) *graph.UserConnection {
	c := &graph.UserConnection{Edges: []*graph.UserEdge{}, Nodes: p.Users, PageInfo: &graph.PageInfo{HasNextPage: p.HasNext}}
	if c.Nodes == nil {
		c.Nodes = []*models.User{}
	}
	for i, u := range p.Users {
		c.Edges = append(c.Edges, &graph.UserEdge{Cursor: p.Cursors[i], Node: u})
	}
	if n := len(p.Cursors); n > 0 {
		c.PageInfo.EndCursor = &p.Cursors[n-1]
	}
	return c
}

// nonEmpty is nil for "", else a pointer to s.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
