package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"pluginhost/internal/testenv"
)

// connection is the page shape of every list that pages.
type connection struct {
	Edges []struct {
		Cursor string
		Node   struct{ ID, Key string }
	}
	Nodes    []struct{ ID, Key string }
	PageInfo struct {
		HasNextPage     bool
		HasPreviousPage bool
		StartCursor     *string
		EndCursor       *string
	}
}

// page reads one page of the connection field of a query that takes
// $first and $after.
func page(t *testing.T, c *Client, query, field string, vars map[string]any, first int, after *string) connection {
	t.Helper()
	v := map[string]any{"first": first, "after": after}
	for k, x := range vars {
		v[k] = x
	}
	data, errs := c.Do(t, query, v)
	if len(errs) > 0 {
		t.Fatalf("%s: %+v", field, errs)
	}
	var p connection
	if err := json.Unmarshal(data[field], &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Edges) != len(p.Nodes) || p.PageInfo.HasPreviousPage {
		t.Fatalf("%s: %d edges and %d nodes, hasPreviousPage %v", field, len(p.Edges), len(p.Nodes), p.PageInfo.HasPreviousPage)
	}
	for i, e := range p.Edges {
		if e.Node != p.Nodes[i] {
			t.Fatalf("%s: edge %d holds %+v, nodes %+v", field, i, e.Node, p.Nodes[i])
		}
	}
	if n := len(p.Edges); n > 0 && (*p.PageInfo.StartCursor != p.Edges[0].Cursor || *p.PageInfo.EndCursor != p.Edges[n-1].Cursor) {
		t.Fatalf("%s: start and end cursors are not the edges' first and last", field)
	}
	return p
}

// TestPagingUnderInserts: every list that can grow while a client pages is
// read two at a time, with new records arriving between the pages (saved
// entities before and after the cursor): every record there at the start is
// read once, none twice, in the list's order; on SQLite and on MariaDB.
func TestPagingUnderInserts(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		th := newTwinHost(t, h)
		alice, root := th.Alice, h.user(t, "root", true)
		alpha, inst := twins[0], th.Instance["alpha"]
		for i := range 3 {
			h.user(t, fmt.Sprintf("user-%d", i), false)
		}
		save := func(key string) {
			alice.Must(t, `mutation($i:ID!,$k:String!){saveEntity(instanceId:$i,key:$k,entity:{type:"place",title:$k}){key}}`,
				map[string]any{"i": inst, "k": key}, nil)
		}
		token := func() { root.Must(t, `mutation{createAccessToken(user:"alice"){token}}`, nil, nil) }
		for i := 1; i <= 5; i++ {
			save(fmt.Sprintf("k%d0", i))
			th.Respond(t, alpha, fmt.Sprintf("m%d", i))
			token()
			th.Notify(t, alpha, fmt.Sprintf("n%d", i))
		}

		for _, tc := range []struct {
			name, field, query string
			client             *Client
			vars               map[string]any
			insert             func(i int)
			// keyOrder: the list is in key order, and records inserted after
			// the cursor are read too; oldestFirst: new records come last,
			// and are read too; else newest first, and they are not.
			keyOrder, oldestFirst bool
		}{
			{name: "saved entities", field: "savedEntities", keyOrder: true,
				query: `query($i:ID!,$first:Int,$after:String){savedEntities(instanceId:$i,first:$first,after:$after){edges{cursor node{id key}} nodes{id key} pageInfo{hasNextPage hasPreviousPage startCursor endCursor}}}`,
				vars:  map[string]any{"i": inst}, client: alice,
				insert: func(i int) { save(fmt.Sprintf("k0%d", i)); save(fmt.Sprintf("k9%d", i)) }},
			{name: "notifications", field: "notifications",
				query:  `query($first:Int,$after:String){notifications(first:$first,after:$after){edges{cursor node{id}} nodes{id} pageInfo{hasNextPage hasPreviousPage startCursor endCursor}}}`,
				client: alice, insert: func(i int) { th.Notify(t, alpha, fmt.Sprintf("new%d", i)) }},
			{name: "audit trail", field: "storageAudit",
				query:  `query($first:Int,$after:String){storageAudit(first:$first,after:$after){edges{cursor node{id}} nodes{id} pageInfo{hasNextPage hasPreviousPage startCursor endCursor}}}`,
				client: alice, insert: func(i int) { th.Notify(t, alpha, fmt.Sprintf("audit%d", i)) }},
			{name: "rendered responses", field: "renderedResponses",
				query:  `query($first:Int,$after:String){renderedResponses(first:$first,after:$after){edges{cursor node{id}} nodes{id} pageInfo{hasNextPage hasPreviousPage startCursor endCursor}}}`,
				client: alice, insert: func(i int) { th.Respond(t, alpha, fmt.Sprintf("new%d", i)) }},
			{name: "access tokens", field: "accessTokens",
				query:  `query($first:Int,$after:String){accessTokens(user:"alice",first:$first,after:$after){edges{cursor node{id}} nodes{id} pageInfo{hasNextPage hasPreviousPage startCursor endCursor}}}`,
				client: root, insert: func(int) { token() }},
			{name: "users", field: "users", oldestFirst: true,
				query:  `query($first:Int,$after:String){users(first:$first,after:$after){edges{cursor node{id}} nodes{id} pageInfo{hasNextPage hasPreviousPage startCursor endCursor}}}`,
				client: root, insert: func(i int) {
					root.Must(t, `mutation($u:String!){createAccessToken(user:$u){token}}`, map[string]any{"u": fmt.Sprintf("new-user-%d", i)}, nil)
				}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ids := func(p connection) []string {
					var out []string
					for _, n := range p.Nodes {
						if n.Key != "" {
							out = append(out, n.Key) // in key order
						} else {
							out = append(out, n.ID)
						}
					}
					return out
				}
				all := page(t, tc.client, tc.query, tc.field, tc.vars, 100, nil)
				before := ids(all)
				if len(before) < 5 || all.PageInfo.HasNextPage {
					t.Fatalf("%d records at the start, more %v", len(before), all.PageInfo.HasNextPage)
				}
				var read []string
				var after *string
				for i := 0; ; i++ {
					p := page(t, tc.client, tc.query, tc.field, tc.vars, 2, after)
					if len(p.Nodes) > 2 || (p.PageInfo.HasNextPage && len(p.Nodes) != 2) {
						t.Fatalf("page %d: %d records, more %v", i, len(p.Nodes), p.PageInfo.HasNextPage)
					}
					read = append(read, ids(p)...)
					if !p.PageInfo.HasNextPage {
						break
					}
					if i > 20 {
						t.Fatalf("still paging after %d pages: %v", i, read)
					}
					tc.insert(i)
					after = p.PageInfo.EndCursor
				}
				seen := map[string]bool{}
				for _, id := range read {
					if seen[id] {
						t.Fatalf("read %s twice: %v", id, read)
					}
					seen[id] = true
				}
				for _, id := range before {
					if !seen[id] {
						t.Fatalf("skipped %s: read %v of %v", id, read, before)
					}
				}
				if tc.oldestFirst && (!slices.Equal(read[:len(before)], before) || len(read) == len(before)) {
					t.Fatalf("read %v, want the records of the start, oldest first, then the new ones: %v", read, before)
				}
				if !tc.keyOrder && !tc.oldestFirst && !slices.Equal(read, before) {
					t.Fatalf("read %v, want the records of the start, newest first: %v", read, before)
				}
				if tc.keyOrder {
					if !slices.IsSorted(read) || len(read) == len(before) {
						t.Fatalf("read %v: want key order, with the keys written after the cursor", read)
					}
				}
				// A cursor is one list's: another list refuses it.
				other := `query($c:String){storageAudit(after:$c){nodes{id}}}`
				if tc.field == "storageAudit" {
					other = `query($c:String){notifications(after:$c){nodes{id}}}`
				}
				alice.Fail(t, "BAD_USER_INPUT", other, map[string]any{"c": *all.PageInfo.EndCursor})
			})
		}
		// The page size's bounds.
		for _, first := range []int{0, 101} {
			e := alice.Fail(t, "BAD_USER_INPUT", `query($f:Int){notifications(first:$f){nodes{id}}}`, map[string]any{"f": first})
			if e.Message != fmt.Sprintf("first is %d; it must be from 1 to 100", first) {
				t.Errorf("first %d: %q", first, e.Message)
			}
		}
		alice.Must(t, `{notifications(first:100){nodes{id}}}`, nil, nil)
		alice.Fail(t, "BAD_USER_INPUT", `{notifications(after:"ntf_notacursor"){nodes{id}}}`, nil)
	})
}
