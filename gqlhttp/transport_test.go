package gqlhttp

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// TestWriteResponseAsMarshal: an answer is, byte for byte, what json.Marshal
// writes of the response, whether or not it takes the way for data alone.
func TestWriteResponseAsMarshal(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		resp *graphql.Response
	}{
		{"data alone", &graphql.Response{Data: json.RawMessage(`{"storageUpdate":{"evidence":[{"revision":2}]}}`)}},
		{"data with HTML characters", &graphql.Response{Data: json.RawMessage(`{"item":{"data":{"v":"<b>&amp;</b>"}}}`)}},
		{"data with a line separator", &graphql.Response{Data: json.RawMessage(`{"s":"a` + "\u2028" + `"}`)}},
		{"data and errors", &graphql.Response{Data: json.RawMessage(`{"a":null}`), Errors: gqlerror.List{{Message: "no"}}}},
		{"data and extensions", &graphql.Response{Data: json.RawMessage(`{"a":1}`), Extensions: map[string]any{"cost": 3}}},
		{"data and hasNext", &graphql.Response{Data: json.RawMessage(`{"a":1}`), HasNext: &yes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			writeResponse(w, mediaJSON, 200, tc.resp, false)
			if got := w.Body.String(); got != string(want) {
				t.Fatalf("answer\n got %s\nwant %s", got, want)
			}
		})
	}
}
