// Command echo is a reactor that answers its arguments as its data.
package main

import (
	"encoding/json"

	"pluginhost/kit"
)

func init() { kit.Handle(echo) }

func main() { kit.Main() }

func echo(req *kit.Request) (*kit.Result, error) {
	var data map[string]any
	if err := json.Unmarshal(req.Arguments, &data); err != nil {
		return nil, err
	}
	return kit.Reply("echo", data), nil
}
