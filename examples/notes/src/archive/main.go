// Command archive is the notes.archive background capability of the example
// plugin: on its schedule it moves every note marked done from the namespace
// notes to the namespace archive. It changes nothing itself: it answers host
// actions, which the host applies in one transaction, or none of them.
// pluginhost build builds it (see the manifest's "source").
package main

import (
	"fmt"

	"pluginhost/kit"
)

func init() { kit.Handle(archive) }

func main() { kit.Main() }

// maxMoved bounds the notes one run moves: two host actions each, and the
// host applies at most 64 actions of one result.
const maxMoved = 32

func archive(req *kit.Request) (*kit.Result, error) {
	res := kit.Reply("", nil)
	moved := 0
	for _, it := range req.Items("notes") {
		var v struct {
			Done bool `json:"done"`
		}
		if it.Decode(&v) != nil || !v.Done {
			continue
		}
		if _, already := req.Item("archive", it.Key); already {
			continue
		}
		res.Do(kit.Create("archive", it.Key, it.Value), kit.Delete("notes", it))
		if moved++; moved == maxMoved {
			break
		}
	}
	res.Summary = fmt.Sprintf("archived %d notes", moved)
	res.Data = map[string]any{"archived": moved}
	return res, nil
}
