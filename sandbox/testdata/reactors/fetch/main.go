// Command fetch is a reactor that asks the host for the fetches its
// arguments list, round after round, then answers what it was given:
// arguments {"rounds": N, "requests": [kit.Fetch...], "raw": "...",
// "carry": JSON}. With "raw", the first round writes that text as its
// output instead. With "carry", each round carries {"round", "value",
// "previous"} (the round it was asked in, the argument, what it was
// carried). Its data holds the whole request of its last run, as the module
// read it.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"pluginhost/kit"
)

func init() { kit.Handle(fetch) }

func main() { kit.Main() }

func fetch(req *kit.Request) (*kit.Result, error) {
	var args struct {
		Rounds   int             `json:"rounds"`
		Requests []kit.Fetch     `json:"requests"`
		Raw      string          `json:"raw"`
		Carry    json.RawMessage `json:"carry"`
	}
	if err := req.Args(&args); err != nil {
		return nil, err
	}
	if args.Raw != "" && req.Round == 0 {
		fmt.Fprint(os.Stdout, args.Raw)
		os.Exit(0)
	}
	if req.Round < args.Rounds {
		res := kit.Fetching(args.Requests...)
		if args.Carry != nil {
			res.Carry(map[string]any{"round": req.Round, "value": args.Carry, "previous": req.Carry})
		}
		return res, nil
	}
	return kit.Reply(fmt.Sprintf("%d rounds", req.Round), map[string]any{"round": req.Round, "fetched": json.RawMessage(mustJSON(req.Fetched)),
		"request": json.RawMessage(mustJSON(req))}), nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
