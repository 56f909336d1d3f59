package cli

import (
	"context"
	"fmt"

	"pluginhost/scaffold"
)

// newCmd is `pluginhost new`: a plugin folder to start from.
func newCmd() Command {
	return Command{
		Name:    "new",
		Summary: "make a new plugin folder: a screen, a home card, a storage namespace and a tool with its unit test",
		Detail: "The folder holds manifest.json, a screen (ui/main.json), a home card (ui/card.json), the notes namespace,\n" +
			"a tool (src/summary) with its unit test and a README of next steps. In Go (the default) it is a Go module\n" +
			"of its own whose go.mod reaches the kit in its kit/ folder, written from this binary: go test ./...,\n" +
			"pluginhost build, validate, package and dev work with nothing but Go and this binary, offline. In C it\n" +
			"builds with clang and wasi-libc.",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_NEW_DIR", "", "the folder to make, missing or empty (required)")
			lang := fs.String("lang", "PLUGINHOST_NEW_LANG", scaffold.Go, "the tool's language: go or c")
			id := fs.String("id", "PLUGINHOST_NEW_ID", "", "the plugin id (default com.example.FOLDER)")
			name := fs.String("name", "PLUGINHOST_NEW_NAME", "", "the plugin's name (default from its id)")
			return func(ctx context.Context, out IO, args []string) error {
				if *dir == "" {
					return Usagef("--dir is required")
				}
				if *lang != scaffold.Go && *lang != scaffold.C {
					return Usagef("--lang is go or c, not %q", *lang)
				}
				p, err := scaffold.New(scaffold.Options{Dir: *dir, Lang: *lang, ID: *id, Name: *name})
				if err != nil {
					return err
				}
				fmt.Fprintf(out.Stdout, "made %s (%s, %s) in %s\n", p.ID, p.Name, p.Lang, *dir)
				test := "go test ./..."
				if p.Lang == scaffold.C {
					test = "clang -Wall -o summary_test test/summary_test.c && ./summary_test"
				}
				fmt.Fprintf(out.Stdout, "next, in %s:\n  %s\n  pluginhost build\n  pluginhost validate .\n"+
					"  pluginhost run --capability %s\n  pluginhost dev --token \"$TOKEN\"   (against a running pluginhost serve)\n"+
					"README.md says more.\n", *dir, test, p.Tool)
				return nil
			}
		},
	}
}
