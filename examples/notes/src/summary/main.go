// Command summary is the notes.summary tool of the example plugin: it reads
// the Instance's notes from the storage snapshot the host gives it and
// answers how many there are, how many words they hold and which are the
// longest. Build it with GOOS=wasip1 GOARCH=wasm (see the README).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// request is the part of the host's request this tool reads.
type request struct {
	Arguments struct {
		Limit int `json:"limit"`
	} `json:"arguments"`
	PluginStorage struct {
		Namespaces map[string][]struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"namespaces"`
	} `json:"plugin_storage"`
}

type note struct {
	Key   string `json:"key"`
	Words int    `json:"words"`
	Text  string `json:"text"`
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "summary: cannot read the request:", err)
		os.Exit(1)
	}
	limit := req.Arguments.Limit
	if limit <= 0 {
		limit = 3
	}
	var notes []note
	words := 0
	for _, it := range req.PluginStorage.Namespaces["notes"] {
		var v struct {
			Text string `json:"text"`
		}
		json.Unmarshal(it.Value, &v)
		n := note{Key: it.Key, Words: len(strings.Fields(v.Text)), Text: v.Text}
		words += n.Words
		notes = append(notes, n)
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Words > notes[j].Words })
	if len(notes) > limit {
		notes = notes[:limit]
	}
	if notes == nil {
		notes = []note{}
	}
	count := len(req.PluginStorage.Namespaces["notes"])
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"summary": fmt.Sprintf("%d notes, %d words", count, words),
		"data":    map[string]any{"count": count, "words": words, "longest": notes},
	})
}
