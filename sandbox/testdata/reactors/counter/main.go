// Command counter is a reactor that counts its runs in a global and in the
// heap, and answers the counts: a host that restores the instance between
// runs makes every run see 1.
package main

import (
	"fmt"

	"pluginhost/kit"
)

var runs int

var seen = map[string]bool{}

func init() { kit.Handle(count) }

func main() { kit.Main() }

func count(req *kit.Request) (*kit.Result, error) {
	runs++
	seen[req.Instance.ID] = true
	others := []string{}
	for id := range seen {
		if id != req.Instance.ID {
			others = append(others, id)
		}
	}
	return kit.Reply(fmt.Sprintf("run %d", runs), map[string]any{"runs": runs, "others": others}), nil
}
