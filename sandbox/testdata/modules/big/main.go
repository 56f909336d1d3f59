// Command big writes a well-formed result of 300 KiB.
package main

import (
	"os"
	"strings"
)

func main() {
	os.Stdout.WriteString(`{"summary": "big", "data": {"text": "` + strings.Repeat("x", 300<<10) + `"}}`)
}
