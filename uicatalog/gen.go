//go:build ignore

// gen writes docs/ui-catalog.md and uicatalog/catalog.json from the catalog.
// Run it with `go generate ./uicatalog`.
package main

import (
	"log"
	"os"

	"pluginhost/uicatalog"
)

func main() {
	if err := os.WriteFile("../docs/ui-catalog.md", uicatalog.Markdown(), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("catalog.json", uicatalog.JSON(), 0o644); err != nil {
		log.Fatal(err)
	}
}
