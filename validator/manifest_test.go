package validator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pluginhost/models"
)

// baseManifest is a valid schema 2 manifest with storage.
func baseManifest() map[string]any {
	return map[string]any{
		"id":             "com.example.notes",
		"name":           "Notes",
		"version":        "1.0.0",
		"schema_version": 2,
		"permissions":    []any{"storage"},
		"data_policy":    "retain",
		"storage": map[string]any{
			"version": 1,
			"namespaces": []any{
				map[string]any{"id": "notes", "max_bytes": 65536},
			},
		},
	}
}

func namespaces(n, maxBytes int) []any {
	var a []any
	for i := range n {
		a = append(a, map[string]any{"id": fmt.Sprintf("ns%d", i), "max_bytes": maxBytes})
	}
	return a
}

func migrations(n int) []any {
	var a []any
	for i := range n {
		a = append(a, map[string]any{"from": i + 1, "to": i + 2, "namespace": "notes", "delete": []any{"old"}})
	}
	return a
}

func storageOf(m map[string]any) map[string]any { return m["storage"].(map[string]any) }

func TestCheckManifestStorageRules(t *testing.T) {
	type want struct{ path, code string }
	tests := []struct {
		name   string
		change func(m map[string]any)
		want   []want // nil: valid
	}{
		{"valid", func(m map[string]any) {}, nil},
		{"schema_version 1 with storage declaration", func(m map[string]any) { m["schema_version"] = 1 },
			[]want{{"/schema_version", CodeStorageSchema}}},
		{"schema_version 3", func(m map[string]any) { m["schema_version"] = 3 },
			[]want{{"/schema_version", CodeRange}}},
		{"storage permission missing", func(m map[string]any) { m["permissions"] = []any{} },
			[]want{{"/permissions", CodePermissionRequired}}},
		{"ai_storage missing for read namespace", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "notes", "max_bytes": 10, "ai_access": "read"}}
		}, []want{{"/permissions", CodePermissionRequired}}},
		{"ai_storage present for read_write namespace", func(m map[string]any) {
			m["permissions"] = []any{"storage", "ai_storage"}
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "notes", "max_bytes": 10, "ai_access": "read_write"}}
		}, nil},
		{"ai_access none needs no ai_storage", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "notes", "max_bytes": 10, "ai_access": "none"}}
		}, nil},
		{"ai_access unknown value", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "notes", "max_bytes": 10, "ai_access": "write"}}
		}, []want{{"/storage/namespaces/0/ai_access", CodeEnum}}},
		{"unknown permission", func(m map[string]any) { m["permissions"] = []any{"storage", "camera"} },
			[]want{{"/permissions/1", CodeEnum}}},
		{"data_policy missing", func(m map[string]any) { delete(m, "data_policy") },
			[]want{{"/data_policy", CodeRequired}}},
		{"data_policy unknown", func(m map[string]any) { m["data_policy"] = "keep" },
			[]want{{"/data_policy", CodeEnum}}},
		{"data_policy purge", func(m map[string]any) { m["data_policy"] = "purge" }, nil},
		{"version 1000 (limit)", func(m map[string]any) { storageOf(m)["version"] = 1000 }, nil},
		{"version 1001", func(m map[string]any) { storageOf(m)["version"] = 1001 },
			[]want{{"/storage/version", CodeRange}}},
		{"version 0", func(m map[string]any) { storageOf(m)["version"] = 0 },
			[]want{{"/storage/version", CodeRange}}},
		{"version not integer", func(m map[string]any) { storageOf(m)["version"] = 1.5 },
			[]want{{"/storage/version", CodeType}}},
		{"version missing", func(m map[string]any) { delete(storageOf(m), "version") },
			[]want{{"/storage/version", CodeRequired}}},
		{"16 namespaces (limit)", func(m map[string]any) { storageOf(m)["namespaces"] = namespaces(16, 32768) }, nil},
		{"17 namespaces", func(m map[string]any) { storageOf(m)["namespaces"] = namespaces(17, 1024) },
			[]want{{"/storage/namespaces", CodeCount}}},
		{"0 namespaces", func(m map[string]any) { storageOf(m)["namespaces"] = []any{} },
			[]want{{"/storage/namespaces", CodeCount}}},
		{"namespace id unsafe", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "../etc", "max_bytes": 10}}
		}, []want{{"/storage/namespaces/0/id", CodeFormat}}},
		{"namespace id upper case", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "Notes", "max_bytes": 10}}
		}, []want{{"/storage/namespaces/0/id", CodeFormat}}},
		{"namespace id duplicate", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a", "max_bytes": 10}, map[string]any{"id": "a", "max_bytes": 10}}
		}, []want{{"/storage/namespaces/1/id", CodeDuplicate}}},
		{"max_bytes 1 (limit)", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a", "max_bytes": 1}}
		}, nil},
		{"max_bytes 0", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a", "max_bytes": 0}}
		}, []want{{"/storage/namespaces/0/max_bytes", CodeRange}}},
		{"max_bytes 256 KiB (limit)", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a", "max_bytes": 262144}}
		}, nil},
		{"max_bytes 256 KiB + 1", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a", "max_bytes": 262145}}
		}, []want{{"/storage/namespaces/0/max_bytes", CodeRange}}},
		{"max_bytes missing", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a"}}
		}, []want{{"/storage/namespaces/0/max_bytes", CodeRequired}}},
		{"sum 512 KiB (limit)", func(m map[string]any) { storageOf(m)["namespaces"] = namespaces(2, 262144) }, nil},
		{"sum 512 KiB + 1", func(m map[string]any) {
			ns := namespaces(3, 262144)
			ns[2].(map[string]any)["max_bytes"] = 1
			storageOf(m)["namespaces"] = ns
		}, []want{{"/storage/namespaces", CodeStorageTotal}}},
		{"64 migrations (limit)", func(m map[string]any) {
			storageOf(m)["version"] = 65
			storageOf(m)["migrations"] = migrations(64)
		}, nil},
		{"65 migrations", func(m map[string]any) {
			storageOf(m)["version"] = 66
			storageOf(m)["migrations"] = migrations(65)
		}, []want{{"/storage/migrations", CodeCount}}},
		{"migration skips a version", func(m map[string]any) {
			storageOf(m)["version"] = 3
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1, "to": 3, "namespace": "notes", "delete": []any{"x"}}}
		}, []want{{"/storage/migrations/0/to", CodeMigrationStep}}},
		{"migration goes down", func(m map[string]any) {
			storageOf(m)["version"] = 3
			storageOf(m)["migrations"] = []any{map[string]any{"from": 2, "to": 1, "namespace": "notes", "delete": []any{"x"}}}
		}, []want{{"/storage/migrations/0/to", CodeMigrationStep}}},
		{"migration beyond storage.version", func(m map[string]any) {
			storageOf(m)["version"] = 1
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1, "to": 2, "namespace": "notes", "delete": []any{"x"}}}
		}, []want{{"/storage/migrations/0/to", CodeMigrationStep}}},
		{"migration version 1001", func(m map[string]any) {
			storageOf(m)["version"] = 1000
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1000, "to": 1001, "namespace": "notes", "delete": []any{"x"}}}
		}, []want{{"/storage/migrations/0/to", CodeRange}}},
		{"migration of undeclared namespace", func(m map[string]any) {
			storageOf(m)["version"] = 2
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1, "to": 2, "namespace": "other", "delete": []any{"x"}}}
		}, []want{{"/storage/migrations/0/namespace", CodeUnknownNamespace}}},
		{"(from, namespace) declared twice", func(m map[string]any) {
			storageOf(m)["version"] = 2
			storageOf(m)["migrations"] = []any{
				map[string]any{"from": 1, "to": 2, "namespace": "notes", "delete": []any{"x"}},
				map[string]any{"from": 1, "to": 2, "namespace": "notes", "delete": []any{"y"}},
			}
		}, []want{{"/storage/migrations/1", CodeDuplicate}}},
		{"same from, different namespaces", func(m map[string]any) {
			storageOf(m)["version"] = 2
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "notes", "max_bytes": 10}, map[string]any{"id": "tags", "max_bytes": 10}}
			storageOf(m)["migrations"] = []any{
				map[string]any{"from": 1, "to": 2, "namespace": "notes", "rename": map[string]any{"a": "b"}},
				map[string]any{"from": 1, "to": 2, "namespace": "tags", "delete": []any{"y"}},
			}
		}, nil},
		{"rename to a credential key", func(m map[string]any) {
			storageOf(m)["version"] = 2
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1, "to": 2, "namespace": "notes", "rename": map[string]any{"k": "api_key"}}}
		}, []want{{"/storage/migrations/0/rename/k", CodeInvalidKey}}},
		{"two keys renamed to one", func(m map[string]any) {
			storageOf(m)["version"] = 2
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1, "to": 2, "namespace": "notes", "rename": map[string]any{"a": "c", "b": "c"}}}
		}, []want{{"/storage/migrations/0/rename/b", CodeDuplicate}}},
		{"rename value not a string", func(m map[string]any) {
			storageOf(m)["version"] = 2
			storageOf(m)["migrations"] = []any{map[string]any{"from": 1, "to": 2, "namespace": "notes", "rename": map[string]any{"a": 1}}}
		}, []want{{"/storage/migrations/0/rename/a", CodeType}}},
		{"unknown storage field", func(m map[string]any) { storageOf(m)["quota"] = 1 },
			[]want{{"/storage/quota", CodeUnknownField}}},
		{"unknown namespace field", func(m map[string]any) {
			storageOf(m)["namespaces"] = []any{map[string]any{"id": "a", "max_bytes": 1, "ttl": 5}}
		}, []want{{"/storage/namespaces/0/ttl", CodeUnknownField}}},
		{"schema 2 storage permission without declaration", func(m map[string]any) { delete(m, "storage") },
			[]want{{"/storage", CodeRequired}}},
		{"schema 1 compatibility", func(m map[string]any) {
			delete(m, "storage")
			delete(m, "data_policy")
			m["schema_version"] = 1
		}, nil},
		{"ai_storage without storage", func(m map[string]any) {
			delete(m, "storage")
			m["permissions"] = []any{"ai_storage"}
		}, []want{{"/permissions", CodePermissionRequired}}},
		{"bad plugin id", func(m map[string]any) { m["id"] = "Com.Example" },
			[]want{{"/id", CodeFormat}}},
		{"bad version", func(m map[string]any) { m["version"] = "1.0" },
			[]want{{"/version", CodeFormat}}},
		{"unknown top-level field", func(m map[string]any) { m["author"] = "x" },
			[]want{{"/author", CodeUnknownField}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := baseManifest()
			tt.change(m)
			raw, _ := json.Marshal(m)
			parsed, r := CheckManifest(raw)
			if tt.want == nil {
				if !r.Valid || parsed == nil {
					t.Fatalf("want valid, got %+v", r.Errors)
				}
				return
			}
			if r.Valid || parsed != nil {
				t.Fatalf("want invalid, got valid")
			}
			if len(r.Errors) != len(tt.want) {
				t.Fatalf("got %d errors %+v, want %v", len(r.Errors), r.Errors, tt.want)
			}
			for i, w := range tt.want {
				if r.Errors[i].Path != w.path || r.Errors[i].Code != w.code {
					t.Errorf("error %d = %s %s (%s), want %s %s", i, r.Errors[i].Path, r.Errors[i].Code, r.Errors[i].Message, w.path, w.code)
				}
				if r.Errors[i].Message == "" {
					t.Errorf("error %d has no message", i)
				}
			}
		})
	}
}

func TestCheckManifestDecoding(t *testing.T) {
	tests := []struct {
		name, doc, path, code, msg string
	}{
		{"syntax error", "{\n  \"id\": \"a\",\n  \"name\" \"x\"\n}", "", CodeSyntax, "line 3"},
		{"duplicate member", `{"id":"a","id":"b"}`, "/id", CodeDuplicateKey, "more than once"},
		{"trailing data", `{} {}`, "", CodeSyntax, "after the JSON document"},
		{"not an object", `[]`, "", CodeType, "object"},
		{"too deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), "", CodeTooDeep, "deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := CheckManifest([]byte(tt.doc))
			if r.Valid {
				t.Fatal("want invalid")
			}
			found := false
			for _, e := range r.Errors {
				if e.Path == tt.path && e.Code == tt.code && strings.Contains(e.Message, tt.msg) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s at %q mentioning %q in %+v", tt.code, tt.path, tt.msg, r.Errors)
			}
		})
	}
}

func TestEffectiveStorageCompatibility(t *testing.T) {
	m := baseManifest()
	delete(m, "storage")
	delete(m, "data_policy")
	m["schema_version"] = 1
	raw, _ := json.Marshal(m)
	parsed, r := CheckManifest(raw)
	if !r.Valid {
		t.Fatalf("invalid: %+v", r.Errors)
	}
	s := parsed.EffectiveStorage()
	if s == nil || s.Version != 1 || len(s.Namespaces) != 1 || s.Namespaces[0].ID != "default" || s.Namespaces[0].MaxBytes != 128*1024 {
		t.Fatalf("compatibility storage = %+v", s)
	}
	if parsed.EffectiveStorage().DefaultNamespace() != models.CompatNamespace {
		t.Fatal("default namespace")
	}
}

func TestReportIsInDocumentOrderAndComplete(t *testing.T) {
	doc := `{"id":"BAD","name":"n","version":"x","schema_version":2,"permissions":["storage"],"data_policy":"nope",
	"storage":{"version":0,"namespaces":[{"id":"A","max_bytes":0}]}}`
	_, r := CheckManifest([]byte(doc))
	var paths []string
	for _, e := range r.Errors {
		paths = append(paths, e.Path)
	}
	want := []string{"/id", "/version", "/data_policy", "/storage/version", "/storage/namespaces/0/id", "/storage/namespaces/0/max_bytes"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("paths = %v, want %v", paths, want)
	}
}
