// Package bytecache provides a least-recently-used cache bounded by the
// bytes its entries cost, not by their count: a few large entries cannot
// hold more memory than many small ones.
package bytecache

import (
	"container/list"
	"context"
	"sync"
)

// Cache is a least-recently-used cache of values by key, bounded by their
// cost. It implements gqlgen's graphql.Cache.
type Cache[T any] struct {
	max, maxEntry int64
	cost          func(key string, v T) int64

	mu    sync.Mutex
	used  int64
	order *list.List // front: most recently used
	items map[string]*list.Element
}

type entry[T any] struct {
	key  string
	v    T
	cost int64
}

// New returns a cache that holds entries costing at most max in all and
// maxEntry each, an entry's cost being cost(key, value).
func New[T any](max, maxEntry int64, cost func(key string, v T) int64) *Cache[T] {
	return &Cache[T]{max: max, maxEntry: min(max, maxEntry), cost: cost, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[T]) Get(_ context.Context, key string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		var zero T
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[T]).v, true
}

// Add keeps v under key (Put without a condition).
func (c *Cache[T]) Add(_ context.Context, key string, v T) { c.Put(key, v, nil) }

// Put keeps v under key in place of what was kept, unless stay (when not
// nil) says the value kept should stay; then it drops the least recently
// used entries until the cache is within its bound. An entry that costs
// more than an entry may is not kept, and what was kept under its key is
// dropped.
func (c *Cache[T]) Put(key string, v T, stay func(kept T) bool) {
	n := c.cost(key, v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		if stay != nil && stay(e.Value.(*entry[T]).v) {
			return
		}
		c.remove(e)
	}
	if n > c.maxEntry {
		return
	}
	for c.used+n > c.max {
		c.remove(c.order.Back())
	}
	c.items[key] = c.order.PushFront(&entry[T]{key, v, n})
	c.used += n
}

func (c *Cache[T]) remove(e *list.Element) {
	old := c.order.Remove(e).(*entry[T])
	delete(c.items, old.key)
	c.used -= old.cost
}

// Bytes returns the cost of what the cache holds.
func (c *Cache[T]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Len returns the number of entries the cache holds.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
