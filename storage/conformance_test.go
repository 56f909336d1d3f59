package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

type storageCorpusFile struct {
	Scenarios []struct {
		Name       string           `json:"name"`
		Namespaces []map[string]any `json:"namespaces"`
		Steps      []struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			Fill      *struct {
				Namespace string          `json:"namespace"`
				Prefix    string          `json:"prefix"`
				Count     int             `json:"count"`
				Value     json.RawMessage `json:"value"`
			} `json:"fill"`
			Want struct {
				Code      string  `json:"code"`
				Namespace *string `json:"namespace"`
				Item      *struct {
					Key      string          `json:"key"`
					Revision int64           `json:"revision"`
					Value    json.RawMessage `json:"value"`
				} `json:"item"`
				Keys    []string `json:"keys"`
				HasMore bool     `json:"has_more"`
			} `json:"want"`
		} `json:"steps"`
	} `json:"scenarios"`
}

// storageCorpus holds the storage rules the preview's in-page store and
// this service both follow.
const storageCorpus = "../preview/testdata/storage-conformance.json"

// TestStorageCorpusGo runs the storage corpus against the real storage
// service on SQLite, so that the in-page store of the preview, which passes
// the same corpus under node (preview's TestJSConformance), follows the
// host's rules.
func TestStorageCorpusGo(t *testing.T) {
	var c storageCorpusFile
	raw, err := os.ReadFile(storageCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", storageCorpus, err)
	}
	if len(c.Scenarios) == 0 {
		t.Fatal("storage corpus is empty")
	}
	ctx := context.Background()
	env := fixture.New(t, testenv.Backend{Name: database.SQLite, DSN: "sqlite:" + t.TempDir() + "/corpus.db"})
	user := env.User(t, "author")
	caller := models.Caller{UserID: user.ID}
	for i, sc := range c.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			manifest := fixture.Manifest(fmt.Sprintf("com.test.corpus%d", i), sc.Namespaces...)
			inst := env.Instance(t, user, env.Install(t, user, manifest))
			for n, step := range sc.Steps {
				if step.Fill != nil {
					for k := 0; k < step.Fill.Count; k++ {
						key := fmt.Sprintf("%s%03d", step.Fill.Prefix, k)
						if _, err := env.Store.Create(ctx, caller, inst.ID, step.Fill.Namespace, key, models.JSON(step.Fill.Value)); err != nil {
							t.Fatalf("step %d: fill %s: %v", n, key, err)
						}
					}
					continue
				}
				res, err := env.Store.Invoke(ctx, caller, inst.ID, step.Tool, models.JSON(step.Arguments))
				w := step.Want
				if w.Code != "" {
					if got := models.ErrorCode(err); string(got) != w.Code {
						t.Fatalf("step %d %s %s: got %v, want %s", n, step.Tool, step.Arguments, err, w.Code)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d %s %s: %v", n, step.Tool, step.Arguments, err)
				}
				var data struct {
					Namespace string            `json:"namespace"`
					Item      *models.ItemJSON  `json:"item"`
					Items     []models.ItemJSON `json:"items"`
					HasMore   bool              `json:"has_more"`
				}
				if err := json.Unmarshal(res.Data, &data); err != nil {
					t.Fatal(err)
				}
				if w.Namespace != nil && data.Namespace != *w.Namespace {
					t.Fatalf("step %d: namespace %q, want %q", n, data.Namespace, *w.Namespace)
				}
				if w.Item != nil {
					it := data.Item
					if it == nil || it.Key != w.Item.Key || it.Revision != w.Item.Revision {
						t.Fatalf("step %d: item %+v, want key %q revision %d", n, it, w.Item.Key, w.Item.Revision)
					}
					if w.Item.Value != nil && !sameCorpusJSON(t, it.Value, w.Item.Value) {
						t.Fatalf("step %d: value %s, want %s", n, it.Value, w.Item.Value)
					}
				}
				if w.Keys != nil {
					keys := []string{}
					for _, it := range data.Items {
						keys = append(keys, it.Key)
					}
					if !reflect.DeepEqual(keys, w.Keys) || data.HasMore != w.HasMore {
						t.Fatalf("step %d: keys %q has_more %v, want %q %v", n, keys, data.HasMore, w.Keys, w.HasMore)
					}
				}
			}
		})
	}
}

func sameCorpusJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
