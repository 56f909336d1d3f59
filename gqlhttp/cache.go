package gqlhttp

import (
	"container/list"
	"context"
	"sync"
)

// byteCache is a least-recently-used cache bounded by the bytes its entries
// cost, not by their count: a few large documents cannot hold more memory
// than many small ones. It implements gqlgen's graphql.Cache.
type byteCache[T any] struct {
	max  int64
	cost func(key string, v T) int64

	mu    sync.Mutex
	used  int64
	order *list.List // front: most recently used
	items map[string]*list.Element
}

type cacheEntry[T any] struct {
	key  string
	v    T
	cost int64
}

func newByteCache[T any](max int64, cost func(key string, v T) int64) *byteCache[T] {
	return &byteCache[T]{max: max, cost: cost, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *byteCache[T]) Get(_ context.Context, key string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		var zero T
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry[T]).v, true
}

// Add keeps v under key, dropping the least recently used entries until the
// cache is within its bound. An entry larger than the bound is not kept.
func (c *byteCache[T]) Add(_ context.Context, key string, v T) {
	n := c.cost(key, v)
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.used -= e.Value.(*cacheEntry[T]).cost
		c.order.Remove(e)
		delete(c.items, key)
	}
	for c.used+n > c.max {
		last := c.order.Back()
		old := last.Value.(*cacheEntry[T])
		c.used -= old.cost
		c.order.Remove(last)
		delete(c.items, old.key)
	}
	c.items[key] = c.order.PushFront(&cacheEntry[T]{key, v, n})
	c.used += n
}

// Bytes returns the cost of what the cache holds.
func (c *byteCache[T]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
