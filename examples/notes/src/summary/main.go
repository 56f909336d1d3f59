// Command summary is the notes.summary tool of the example plugin: it reads
// the Instance's notes from the storage snapshot the host gives it and
// answers how many there are, how many words they hold and which are the
// longest. pluginhost build builds it (see the manifest's "source").
package main

import (
	"fmt"
	"sort"
	"strings"

	"pluginhost/kit"
)

func init() { kit.Handle(summary) }

func main() { kit.Main() }

// note is one note as the tool reports it.
type note struct {
	Key   string `json:"key"`
	Words int    `json:"words"`
	Text  string `json:"text"`
}

func summary(req *kit.Request) (*kit.Result, error) {
	var args struct {
		Limit int `json:"limit"`
	}
	if err := req.Args(&args); err != nil {
		return nil, err
	}
	if args.Limit <= 0 {
		args.Limit = 3
	}
	items := req.Items("notes")
	notes := make([]note, 0, len(items))
	words := 0
	for _, it := range items {
		var v struct {
			Text string `json:"text"`
		}
		it.Decode(&v) // a note that is not an object counts as empty
		n := note{Key: it.Key, Words: len(strings.Fields(v.Text)), Text: v.Text}
		words += n.Words
		notes = append(notes, n)
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Words > notes[j].Words })
	longest := notes[:min(args.Limit, len(notes))]
	return kit.Reply(fmt.Sprintf("%d notes, %d words", len(items), words),
		map[string]any{"count": len(items), "words": words, "longest": longest}), nil
}
