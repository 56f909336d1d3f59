package resolvers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"pluginhost/auth"
	"pluginhost/graph"
	"pluginhost/models"
)

// caller is the storage caller of an app client request: the authenticated user.
func (r *Resolver) caller(ctx context.Context) (models.Caller, error) {
	user, err := auth.Require(ctx)
	if err != nil {
		return models.Caller{}, err
	}
	return models.Caller{UserID: user.ID}, nil
}

// decodePackage reads the base64 of a package file (standard or URL alphabet,
// padded or not, white space ignored).
func decodePackage(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\n\r \t") { // base64 wrapped in lines, as tools write it
		s = strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, s)
	}
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

// entityValue is the stored value of a saved entity input. Optional fields
// given (even empty) are kept, so that the saved-entity rules see them.
func entityValue(in graph.SavedEntityInput) models.JSON {
	m := map[string]any{"type": in.Type, "title": in.Title}
	for field, p := range map[string]*string{"subtitle": in.Subtitle, "description": in.Description, "url": in.URL,
		"image_url": in.ImageURL, "source_capability": in.SourceCapability} {
		if p != nil {
			m[field] = *p
		}
	}
	if in.Favorite != nil {
		m["favorite"] = *in.Favorite
	}
	if in.Data != nil {
		m["data"] = json.RawMessage(in.Data)
	}
	b, _ := json.Marshal(m)
	return b
}

// savedEntity returns the mapping of a single-item result of the
// saved_entities namespace of an Instance, as in
// savedEntity(instanceID)(r.Storage.Get(...)).
func savedEntity(instanceID string) func(*models.ExtensionResult, error) (*graph.SavedEntity, error) {
	return func(res *models.ExtensionResult, err error) (*graph.SavedEntity, error) {
		if err != nil {
			return nil, err
		}
		var d models.ItemData
		if err := json.Unmarshal(res.Data, &d); err != nil {
			return nil, err
		}
		return entityOf(instanceID, d.Item)
	}
}

// entityOf maps a stored saved entity (a value the storage rules checked).
func entityOf(instanceID string, it models.ItemJSON) (*graph.SavedEntity, error) {
	var v models.SavedEntityValue
	if err := json.Unmarshal(it.Value, &v); err != nil {
		return nil, fmt.Errorf("saved entity %q of %s: %w", it.Key, instanceID, err)
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return &graph.SavedEntity{
		ID: models.NodeID(models.NodeSavedEntity, instanceID, it.Key), Key: it.Key, Revision: int(it.Revision), Type: v.Type,
		Title: v.Title, Subtitle: opt(v.Subtitle), Description: opt(v.Description), URL: opt(v.URL), ImageURL: opt(v.ImageURL),
		Favorite: v.Favorite != nil && *v.Favorite, Data: v.Data, SourceCapability: opt(v.SourceCapability),
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}, nil
}
