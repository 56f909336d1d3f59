// Command alloc is a reactor that allocates what its arguments ask for, in
// pieces of 8 KiB it writes and keeps until it answers, and answers how
// much it allocated and how many runs its instance has made (1 when the
// host restores it between runs).
package main

import "pluginhost/kit"

var runs int

func init() { kit.Handle(alloc) }

func main() { kit.Main() }

func alloc(req *kit.Request) (*kit.Result, error) {
	runs++
	var args struct {
		KiB int `json:"kib"`
	}
	if err := req.Args(&args); err != nil {
		return nil, err
	}
	pieces := make([][]byte, 0, args.KiB/8)
	for range args.KiB / 8 {
		p := make([]byte, 8<<10)
		p[0], p[len(p)-1] = 1, 1
		pieces = append(pieces, p)
	}
	return kit.Reply("allocated", map[string]any{"kib": 8 * len(pieces), "runs": runs}), nil
}
