// Command tick counts its runs in storage: it reads the key "ticks" of the
// namespace "notes" from its snapshot and asks the host, through a host
// action, to store one more. A reactor, so that it runs in about a
// millisecond even under the race detector.
package main

import (
	"pluginhost/kit"
)

func init() { kit.Handle(tick) }

func main() { kit.Main() }

func tick(req *kit.Request) (*kit.Result, error) {
	res := kit.Reply("tick", nil)
	if it, ok := req.Item("notes", "ticks"); ok {
		var n int
		if err := it.Decode(&n); err != nil {
			return nil, err
		}
		return res.Do(kit.Update("notes", it, n+1)), nil
	}
	return res.Do(kit.Create("notes", "ticks", 1)), nil
}
