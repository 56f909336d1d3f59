package models

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Page sizes of every list that pages (the GraphQL Cursor Connections of the
// contract's "Lists that page").
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// PageArgs are the arguments of a list that pages: first (1 to MaxPageSize,
// DefaultPageSize when nil) records after the cursor after (from the start
// when nil or empty).
type PageArgs struct {
	First *int
	After *string
}

// Size returns first, or BAD_USER_INPUT when it is out of range.
func (a PageArgs) Size() (int, error) {
	if a.First == nil {
		return DefaultPageSize, nil
	}
	if n := *a.First; n < 1 || n > MaxPageSize {
		return 0, Errorf(ErrBadUserInput, "first is %d; it must be from 1 to %d", n, MaxPageSize)
	}
	return *a.First, nil
}

// Position returns the sort key that after holds, of n parts, for the list
// named list; nil when after is nil or empty. A cursor that another list
// gave, or that no list gave, is BAD_USER_INPUT.
func (a PageArgs) Position(list string, n int) ([]string, error) {
	if a.After == nil || *a.After == "" {
		return nil, nil
	}
	return DecodeCursor(list, *a.After, n)
}

// Page is one page of a list in the shape of the GraphQL Cursor Connections
// specification: its edges (each record with its cursor) and where it ends.
type Page[T any] struct {
	Edges    []Edge[T]
	PageInfo PageInfo
}

// Edge is one record of a page and its cursor: the position after it.
type Edge[T any] struct {
	Cursor string
	Node   T
}

// PageInfo says where a page ends. The lists page forward only, so
// HasPreviousPage is always false, as the specification allows.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
	StartCursor     *string
	EndCursor       *string
}

// Nodes returns the page's records, in order (none for a nil page).
func (p *Page[T]) Nodes() []T {
	if p == nil {
		return nil
	}
	out := make([]T, len(p.Edges))
	for i, e := range p.Edges {
		out[i] = e.Node
	}
	return out
}

// NewPage returns the page of records read for a page of size records: read
// holds up to size+1 records in the list's order (one more than the page,
// to know whether more follow); key gives a record's sort key, which its
// cursor holds.
func NewPage[T any](list string, size int, read []T, key func(T) []string) *Page[T] {
	more := len(read) > size
	if more {
		read = read[:size]
	}
	return PageOf(list, read, more, key)
}

// PageOf returns the page of the records nodes, in the list's order, with
// whether more follow them; key gives a record's sort key, which its cursor
// holds.
func PageOf[T any](list string, nodes []T, more bool, key func(T) []string) *Page[T] {
	p := &Page[T]{Edges: make([]Edge[T], len(nodes)), PageInfo: PageInfo{HasNextPage: more}}
	for i, n := range nodes {
		p.Edges[i] = Edge[T]{Cursor: EncodeCursor(list, key(n)...), Node: n}
	}
	if len(p.Edges) > 0 {
		p.PageInfo.StartCursor, p.PageInfo.EndCursor = &p.Edges[0].Cursor, &p.Edges[len(p.Edges)-1].Cursor
	}
	return p
}

// SlicePage returns the page args selects of all, a whole list held in
// memory, in the order of key (a record's sort key, unique in the list).
func SlicePage[T any](list string, all []T, args PageArgs, key func(T) string) (*Page[T], error) {
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(list, 1)
	if err != nil {
		return nil, err
	}
	sorted := slices.SortedFunc(slices.Values(all), func(a, b T) int { return strings.Compare(key(a), key(b)) })
	if after != nil {
		sorted = slices.DeleteFunc(sorted, func(r T) bool { return key(r) <= after[0] })
	}
	return NewPage(list, size, sorted[:min(len(sorted), size+1)], func(r T) []string { return []string{key(r)} }), nil
}

// MapPage returns the page p with each record mapped by f, cursors kept.
func MapPage[T, U any](p *Page[T], f func(T) U) *Page[U] {
	out := &Page[U]{Edges: make([]Edge[U], len(p.Edges)), PageInfo: p.PageInfo}
	for i, e := range p.Edges {
		out.Edges[i] = Edge[U]{Cursor: e.Cursor, Node: f(e.Node)}
	}
	return out
}

// EncodeCursor returns the opaque cursor of the position after a record of
// the list named list whose sort key is key. The key, not the record, makes
// the position: paging on while records come and go neither skips nor
// repeats one that stays.
func EncodeCursor(list string, key ...string) string {
	b, _ := json.Marshal(append([]string{list}, key...))
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor returns the sort key, of n parts, of a cursor EncodeCursor
// made for the list named list. Anything else is BAD_USER_INPUT.
func DecodeCursor(list, cursor string, n int) ([]string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	var parts []string
	if err != nil || json.Unmarshal(b, &parts) != nil || len(parts) != n+1 || parts[0] != list {
		return nil, Errorf(ErrBadUserInput, "after %q is not a cursor of %s", cursor, list)
	}
	return parts[1:], nil
}

// CursorInt reads a part of a sort key that holds an integer (as
// strconv.FormatInt writes it); anything else is BAD_USER_INPUT.
func CursorInt(list, part string) (int64, error) {
	v, err := strconv.ParseInt(part, 10, 64)
	if err != nil {
		return 0, Errorf(ErrBadUserInput, "the cursor is not a cursor of %s", list)
	}
	return v, nil
}
