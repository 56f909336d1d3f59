package models

import (
	"encoding/base64"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestPageArgsSize(t *testing.T) {
	tests := []struct {
		first   *int
		want    int
		wantErr bool
	}{
		{nil, DefaultPageSize, false},
		{new(1), 1, false},
		{new(MaxPageSize), MaxPageSize, false},
		{new(0), 0, true},
		{new(-1), 0, true},
		{new(MaxPageSize + 1), 0, true},
	}
	for _, tt := range tests {
		got, err := PageArgs{First: tt.first}.Size()
		if tt.wantErr {
			if ErrorCode(err) != ErrBadUserInput || !strings.Contains(err.Error(), "it must be from 1 to 100") {
				t.Errorf("first %d: %v, want BAD_USER_INPUT naming 1 to 100", *tt.first, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("first %v: %d %v, want %d", tt.first, got, err, tt.want)
		}
	}
}

func TestCursor(t *testing.T) {
	c := EncodeCursor("notifications", "1700000000000000", "ntf_abc")
	key, err := DecodeCursor("notifications", c, 2)
	if err != nil || !reflect.DeepEqual(key, []string{"1700000000000000", "ntf_abc"}) {
		t.Fatalf("DecodeCursor = %q %v", key, err)
	}
	if strings.Contains(c, "ntf_abc") {
		t.Fatalf("cursor %s shows its key", c)
	}
	for _, tt := range []struct{ name, list, cursor string }{
		{"another list's cursor", "storageAudit", c},
		{"a record's id", "notifications", "ntf_abc"},
		{"not base64", "notifications", "***"},
		{"a key of the wrong length", "notifications", EncodeCursor("notifications", "1")},
		{"empty list", "notifications", b64(`[]`)},
	} {
		if _, err := DecodeCursor(tt.list, tt.cursor, 2); ErrorCode(err) != ErrBadUserInput || !strings.Contains(err.Error(), "is not a cursor of "+tt.list) {
			t.Errorf("%s: %v, want BAD_USER_INPUT", tt.name, err)
		}
	}
	if _, err := (PageArgs{After: new("")}).Position("notifications", 2); err != nil {
		t.Errorf("an empty after: %v, want the start", err)
	}
}

func TestNewPage(t *testing.T) {
	key := func(n int) []string { return []string{strconv.Itoa(n)} }
	tests := []struct {
		name  string
		read  []int
		size  int
		nodes []int
		more  bool
	}{
		{"empty", nil, 2, []int{}, false},
		{"short", []int{1}, 2, []int{1}, false},
		{"exactly full", []int{1, 2}, 2, []int{1, 2}, false},
		{"one more read", []int{1, 2, 3}, 2, []int{1, 2}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPage("l", tt.size, tt.read, key)
			if !reflect.DeepEqual(p.Nodes(), tt.nodes) || p.PageInfo.HasNextPage != tt.more || p.PageInfo.HasPreviousPage {
				t.Fatalf("page = %v more %v, want %v more %v", p.Nodes(), p.PageInfo.HasNextPage, tt.nodes, tt.more)
			}
			if len(tt.nodes) == 0 {
				if p.PageInfo.StartCursor != nil || p.PageInfo.EndCursor != nil {
					t.Fatal("an empty page has cursors")
				}
				return
			}
			last := p.Edges[len(p.Edges)-1]
			if *p.PageInfo.EndCursor != last.Cursor || *p.PageInfo.StartCursor != p.Edges[0].Cursor {
				t.Fatal("start and end cursors are not the edges'")
			}
			if k, err := DecodeCursor("l", last.Cursor, 1); err != nil || k[0] != strconv.Itoa(last.Node) {
				t.Fatalf("end cursor holds %q %v", k, err)
			}
		})
	}
}

func TestSlicePage(t *testing.T) {
	all := []string{"c", "a", "d", "b", "e"}
	id := func(s string) string { return s }
	var got []string
	args := PageArgs{First: new(2)}
	for range 4 {
		p, err := SlicePage("l", all, args, id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Nodes()...)
		if !p.PageInfo.HasNextPage {
			break
		}
		args.After = p.PageInfo.EndCursor
		all = append(all, "aa", "z") // records come while paging
	}
	if want := []string{"a", "b", "c", "d", "e", "z"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("paged %v, want %v (aa came before the cursor, z after)", got, want)
	}
}
