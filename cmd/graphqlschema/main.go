// Command graphqlschema prints the GraphQL schema the server serves as one
// SDL document, from the executable schema itself. go generate writes it to
// docs/schema.graphql, the file a client's code generator and a reviewer
// read; CI checks that it is current.
//
//	go run ./cmd/graphqlschema -out docs/schema.graphql
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vektah/gqlparser/v2/formatter"

	"pluginhost/graph"
)

// header opens the printed schema.
const header = `# The GraphQL schema of pluginhost, as the server serves it at /graphql.
# Printed by go generate (cmd/graphqlschema) from the executable schema:
# never edit it; the schema's source is graph/*.graphqls.

`

// print writes the schema.
func print(w io.Writer) error {
	var b bytes.Buffer
	formatter.NewFormatter(&b, formatter.WithIndent("  ")).FormatSchema(graph.NewExecutableSchema(graph.Config{}).Schema())
	// A blank line after each definition, for the reader.
	sdl := bytes.TrimSpace(bytes.ReplaceAll(b.Bytes(), []byte("\n}\n"), []byte("\n}\n\n")))
	_, err := fmt.Fprintf(w, "%s%s\n", header, sdl)
	return err
}

func main() {
	out := flag.String("out", "", "the file to write (standard output when empty)")
	flag.Parse()
	var b bytes.Buffer
	if err := print(&b); err != nil {
		fmt.Fprintln(os.Stderr, "graphqlschema:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(b.Bytes())
		return
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "graphqlschema:", err)
		os.Exit(1)
	}
}
