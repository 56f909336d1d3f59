package storage

import (
	"encoding/json"
	"testing"

	"pluginhost/database"
	"pluginhost/models"
)

// TestItemJSON: the data of an item's answer is, byte for byte, what
// json.Marshal writes of models.ItemData, whatever the key and value hold.
func TestItemJSON(t *testing.T) {
	for _, tc := range []struct{ name, ns, key, value string }{
		{"plain", "notes", "groceries", `{"text":"milk","n":[1,2.5,-3e2],"ok":true,"none":null}`},
		{"value with spaces", "notes", "k", "{ \"a\" : [ 1 , 2 ] }\n"},
		{"value with HTML characters", "notes", "k", `{"html":"<b>&amp;</b>"}`},
		{"value with line separators", "notes", "k", `"a` + "\u2028b\u2029" + `c"`},
		{"value with escapes", "notes", "k", `"tab\tquote\"back\\slash\u00e9"`},
		{"key with a quote", "notes", `say "hi"`, `1`},
		{"key with HTML characters", "notes", "a<b>&c", `1`},
		{"key with non-ASCII", "notes", "café ✓", `"x"`},
		{"key with a backslash", "notes", `a\b`, `[]`},
		{"empty value", "notes", "k", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := database.ItemRow{Namespace: tc.ns, Key: tc.key, Value: tc.value, Revision: 42,
				CreatedAt: 1700000000123456, UpdatedAt: 1700000999654321}
			want, err := json.Marshal(models.ItemData{Namespace: tc.ns, Item: row.Model().Wire()})
			if err != nil {
				t.Fatal(err)
			}
			if got := itemJSON(tc.ns, row); string(got) != string(want) {
				t.Fatalf("itemJSON\n got %s\nwant %s", got, want)
			}
		})
	}
}
