// Command archive is the notes.archive background capability of the example
// plugin: on its schedule it moves every note marked done from the namespace
// notes to the namespace archive. It changes nothing itself: it answers host
// actions, which the host applies in one transaction, or none of them. When
// it moved notes it tells the user, with an "Undo" that moves them back and
// an "Open" that shows the notes.
// pluginhost build builds it (see the manifest's "source").
package main

import (
	"fmt"
	"strings"

	"pluginhost/kit"
)

func init() { kit.Handle(archive) }

func main() { kit.Main() }

// maxMoved bounds the notes one run moves: two host actions each, and the
// host applies at most 64 actions of one result (or of one notification
// action).
const maxMoved = 32

func archive(req *kit.Request) (*kit.Result, error) {
	res := kit.Reply("", nil)
	var undo []kit.HostAction
	var texts []string
	first := ""
	for _, it := range req.Items("notes") {
		var v struct {
			Done bool   `json:"done"`
			Text string `json:"text"`
		}
		if it.Decode(&v) != nil || !v.Done {
			continue
		}
		if _, already := req.Item("archive", it.Key); already {
			continue
		}
		res.Do(kit.Create("archive", it.Key, it.Value), kit.Delete("notes", it))
		// Undo: the note back in notes, and out of the archive, where it
		// is created at revision 1 (refused if it changed since).
		undo = append(undo, kit.Create("notes", it.Key, it.Value), kit.Delete("archive", kit.Item{Key: it.Key, Revision: 1}))
		texts = append(texts, v.Text)
		if first == "" {
			first = it.Key
		}
		if len(texts) == maxMoved {
			break
		}
	}
	moved := len(texts)
	res.Summary = fmt.Sprintf("archived %d notes", moved)
	res.Data = map[string]any{"archived": moved}
	if moved > 0 {
		title := "1 note archived"
		if moved > 1 {
			title = fmt.Sprintf("%d notes archived", moved)
		}
		res.Notify(kit.Notification{
			// One notification per batch: a later batch is a new one,
			// each with its own undo.
			ID: "archived:" + first, Title: title, Body: body(texts), Severity: kit.Success,
			Actions: []kit.ActionButton{
				{ID: "undo", Label: "Undo", Action: kit.Apply(undo...)},
				{ID: "open", Label: "Open notes", Action: kit.Open("main", nil)},
			},
		})
	}
	return res, nil
}

// body lists the archived notes' texts within the 1,000 characters a
// notification's body may hold.
func body(texts []string) string {
	var b strings.Builder
	for i, t := range texts {
		line := t
		if i > 0 {
			line = "; " + t
		}
		if len([]rune(b.String()))+len([]rune(line)) > 990 {
			b.WriteString("; …")
			break
		}
		b.WriteString(line)
	}
	return b.String()
}
