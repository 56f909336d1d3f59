package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestPublishedSchemaIsCurrent: docs/schema.graphql is the schema the
// server serves (go generate ./... writes it).
func TestPublishedSchemaIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := print(&b); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("../../docs/schema.graphql")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, b.Bytes()) {
		t.Fatal("docs/schema.graphql is not the served schema: run go generate ./...")
	}
	for _, want := range []string{"interface Node {", "type Extension implements Node {", "node(id: ID!): Node", "type PageInfo {"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the schema has no %q", want)
		}
	}
}
