// Command slow is a data capability that answers after two seconds: the
// web host's test of an answer that arrives after its screen closed.
package main

import (
	"encoding/json"
	"io"
	"os"
	"time"
)

func main() {
	io.Copy(io.Discard, os.Stdin)
	time.Sleep(2 * time.Second)
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": "slow answer", "data": map[string]any{}})
}
