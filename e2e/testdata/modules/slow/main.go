// Command slow is a data capability that answers late: after arguments.ms
// milliseconds (2000 when not given, at most 15000; past 4500 the server's
// run timeout must be longer than its default): the web host's tests of an
// answer that arrives after its screen closed, or after its package changed.
package main

import (
	"encoding/json"
	"os"
	"time"
)

func main() {
	var req struct {
		Arguments struct {
			MS int `json:"ms"`
		} `json:"arguments"`
	}
	json.NewDecoder(os.Stdin).Decode(&req)
	ms := req.Arguments.MS
	if ms <= 0 {
		ms = 2000
	}
	time.Sleep(time.Duration(min(ms, 15000)) * time.Millisecond)
	json.NewEncoder(os.Stdout).Encode(map[string]any{"summary": "slow answer", "data": map[string]any{}})
}
