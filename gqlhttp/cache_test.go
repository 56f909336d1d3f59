package gqlhttp

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"pluginhost/graph"
)

// TestByteCacheBound: the cache keeps entries until their cost reaches its
// bound, drops the least recently used first, and keeps nothing larger than
// the bound.
func TestByteCacheBound(t *testing.T) {
	ctx := context.Background()
	c := newByteCache(100, func(k, v string) int64 { return int64(len(v)) })
	c.Add(ctx, "a", strings.Repeat("a", 40))
	c.Add(ctx, "b", strings.Repeat("b", 60)) // at the bound: 100
	if _, ok := c.Get(ctx, "a"); !ok || c.Bytes() != 100 {
		t.Fatalf("at the bound: a kept %v, %d bytes", ok, c.Bytes())
	}
	c.Add(ctx, "c", "c") // one past: b, the least recently used, goes
	if _, ok := c.Get(ctx, "b"); ok {
		t.Fatal("b was kept past the bound")
	}
	if _, ok := c.Get(ctx, "a"); !ok {
		t.Fatal("a, recently used, was dropped")
	}
	if c.Bytes() != 41 {
		t.Fatalf("%d bytes, want 41", c.Bytes())
	}
	c.Add(ctx, "big", strings.Repeat("x", 101))
	if _, ok := c.Get(ctx, "big"); ok || c.Bytes() != 41 {
		t.Fatal("an entry larger than the bound was kept")
	}
	c.Add(ctx, "a", strings.Repeat("a", 10)) // replacing an entry counts it once
	if c.Bytes() != 11 {
		t.Fatalf("%d bytes after replacing a, want 11", c.Bytes())
	}
}

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
