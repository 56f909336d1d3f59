//go:build ignore

// gen writes docs/kit.md, the kit's reference, from its code. Run it with
// `go generate ./internal/kitref`.
package main

import (
	"log"
	"os"

	"pluginhost/internal/kitref"
)

func main() {
	b, err := kitref.Markdown("../../kit")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("../../docs/kit.md", b, 0o644); err != nil {
		log.Fatal(err)
	}
}
