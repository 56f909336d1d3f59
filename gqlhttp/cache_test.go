package gqlhttp

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"pluginhost/graph"
)

// TestDocumentCacheCost: the cost the document cache charges per byte of
// query text covers what a parsed, validated document holds in memory, so
// QueryCacheBytes bounds the cache's real memory.
func TestDocumentCacheCost(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	shapes := map[string]func(i int) string{
		"aliases": func(i int) string {
			return fmt.Sprintf("query Q%d {%s}", i, strings.Repeat(`a:storageItems(instanceId:"x",limit:5){summary evidence{key revision}} `, 40))
		},
		"short fields": func(i int) string {
			return fmt.Sprintf("query Q%d {viewer{%s}}", i, strings.Repeat("i:id ", 100))
		},
		"nested": func(i int) string {
			return fmt.Sprintf("query Q%d {installations{id name instances{id name usage{namespace keys bytes} installation{id}}} viewer{id name admin}}", i)
		},
		"literals": func(i int) string {
			return fmt.Sprintf("query Q%d {validateManifest(manifest:{a:[%s]}){valid}}", i, strings.Repeat(`{k:"v",n:1},`, 200))
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			const n = 50
			docs := make([]*ast.QueryDocument, n)
			var text int64
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range docs {
				q := shape(i)
				text += int64(len(q))
				doc, err := parser.ParseQuery(&ast.Source{Input: q})
				if err != nil {
					t.Fatal(err)
				}
				if errs := validator.Validate(schema, doc); len(errs) > 0 {
					t.Fatal(errs)
				}
				docs[i] = doc
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perByte := float64(after.HeapAlloc-before.HeapAlloc) / float64(text)
			t.Logf("%.1f bytes of document per byte of query", perByte)
			if perByte > docBytesPerQueryByte {
				t.Errorf("a document holds %.1f bytes per byte of query; the cache charges %d", perByte, docBytesPerQueryByte)
			}
			runtime.KeepAlive(docs)
		})
	}
}
