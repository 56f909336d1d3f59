package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"pluginhost/database"
	"pluginhost/models"
)

// checkNamespaceValue applies the rules a namespace puts on its values: the
// saved_entities namespace holds saved entities only, whichever path writes.
func checkNamespaceValue(ns string, v []byte) error {
	if ns == models.SavedEntitiesNamespace {
		return models.ValidateSavedEntity(v)
	}
	return nil
}

// savedList names the cursors of saved entities.
const savedList = "savedEntities"

// SavedEntities returns a page of the Instance's saved entities in key
// order, only the favourites when favorites is set. It is host.storage.list
// on the saved_entities namespace; a page may end before args.First records
// when their values pass MaxListResponseBytes.
func (s *Service) SavedEntities(ctx context.Context, c models.Caller, instanceID string, favorites bool, args models.PageArgs) (*models.Page[models.ItemJSON], error) {
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(savedList, 1)
	if err != nil {
		return nil, err
	}
	var keep func([]byte) bool
	if favorites {
		keep = func(v []byte) bool {
			var e models.SavedEntityValue
			return json.Unmarshal(v, &e) == nil && e.Favorite != nil && *e.Favorite
		}
	}
	from := ""
	if after != nil {
		from = after[0]
	}
	data, _, err := s.list(ctx, c, instanceID, ListQuery{Namespace: models.SavedEntitiesNamespace, Limit: &size}, from, keep)
	if err != nil {
		return nil, err
	}
	return models.PageOf(savedList, data.Items, data.HasMore, func(it models.ItemJSON) []string { return []string{it.Key} }), nil
}

// ToggleFavorite flips the favorite flag of a saved entity at its revision.
func (s *Service) ToggleFavorite(ctx context.Context, c models.Caller, instanceID, key string, revision int64) (*models.ExtensionResult, error) {
	if err := models.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := checkRevision(revision); err != nil {
		return nil, err
	}
	var favorite bool
	return s.writeItem(ctx, c, instanceID, func(ctx context.Context, tx *sql.Tx, sc *scope) (mutation, database.ItemRow, error) {
		if _, err := sc.namespace(c, models.SavedEntitiesNamespace, models.ToolUpdate); err != nil {
			return mutation{}, database.ItemRow{}, err
		}
		row, err := readItem(ctx, on(ctx, tx, s.q.itemLocked), sc.InstanceID, models.SavedEntitiesNamespace, key)
		if err != nil {
			return mutation{}, row, err
		}
		if row.Revision != revision {
			return mutation{}, row, models.Errorf(models.ErrConflict, "stale revision for %q in namespace %q: given %d, current %d; read it again and retry", key, models.SavedEntitiesNamespace, revision, row.Revision)
		}
		var e map[string]json.RawMessage
		if err := json.Unmarshal([]byte(row.Value), &e); err != nil {
			return mutation{}, row, err
		}
		var was bool
		json.Unmarshal(e["favorite"], &was)
		favorite = !was
		e["favorite"], _ = json.Marshal(favorite)
		v, _ := json.Marshal(e)
		return s.update(ctx, tx, c, sc, models.SavedEntitiesNamespace, key, v, revision)
	}, func(row database.ItemRow) string {
		what := "not a favourite"
		if favorite {
			what = "a favourite"
		}
		return fmt.Sprintf("Marked %q as %s at revision %d", key, what, row.Revision)
	})
}
