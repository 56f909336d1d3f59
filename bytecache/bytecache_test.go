package bytecache_test

import (
	"context"
	"strings"
	"testing"

	"pluginhost/bytecache"
)

// TestBound: the cache keeps entries until their cost reaches its
// bound, drops the least recently used first, and keeps nothing larger than
// the bound.
func TestBound(t *testing.T) {
	ctx := context.Background()
	c := bytecache.New(100, 100, func(k, v string) int64 { return int64(len(v)) })
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

// TestPut: Put keeps a value in place of the one kept unless the condition
// says that one stays; an entry past the bound of one entry is not kept,
// and drops what was kept under its key.
func TestPut(t *testing.T) {
	c := bytecache.New(100, 10, func(k, v string) int64 { return int64(len(v)) })
	newer := func(kept string) bool { return kept > "b" }
	for _, tc := range []struct {
		put, want string
		stay      func(string) bool
	}{
		{"b", "b", newer},
		{"c", "c", newer},
		{"a", "c", newer},                 // the kept one stays
		{"a", "a", nil},                   // no condition: replaced
		{"0123456789", "0123456789", nil}, // at the bound of an entry
		{"0123456789x", "", nil},          // one past it: not kept, the old one dropped
	} {
		c.Put("k", tc.put, tc.stay)
		got, _ := c.Get(context.Background(), "k")
		if got != tc.want || c.Bytes() != int64(len(tc.want)) || c.Len() != min(1, len(tc.want)) {
			t.Fatalf("after Put %q: %q kept, %d bytes, %d entries; want %q", tc.put, got, c.Bytes(), c.Len(), tc.want)
		}
	}
}
