// Command exit3 writes a valid result and then exits with code 3: the result
// must not be used.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println(`{"summary": "should be ignored", "data": {}}`)
	fmt.Fprintln(os.Stderr, "giving up with code 3")
	os.Exit(3)
}
