package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"pluginhost/bundle"
	"pluginhost/models"
	"pluginhost/preview"
	"pluginhost/validator"
)

func validate() Command {
	return Command{
		Name:    "validate",
		Args:    "PATH",
		Summary: "validate a plugin folder, a package file, a manifest.json or one UI config",
		Detail: "Exit 0: valid (warnings allowed); 1: invalid; 2: usage or I/O error.\n" +
			"With --json it prints {\"valid\", \"errors\": [{path, code, message}], \"warnings\"},\n" +
			"paths as JSON Pointers into the file validated.",
		Setup: func(fs *FlagSet) Runner {
			asJSON := fs.Bool("json", "PLUGINHOST_VALIDATE_JSON", false, "print the report as one JSON object")
			return func(ctx context.Context, out IO, args []string) error {
				if len(args) != 1 {
					return Usagef("one PATH is required")
				}
				report, err := validatePath(args[0])
				if err != nil {
					fmt.Fprintf(out.Stderr, "pluginhost validate: %v\n", err)
					return Exit(2)
				}
				if *asJSON {
					enc := json.NewEncoder(out.Stdout)
					enc.SetIndent("", "  ")
					enc.SetEscapeHTML(false)
					enc.Encode(report)
				} else {
					report.WriteText(out.Stdout)
				}
				if !report.Valid {
					return Exit(1)
				}
				return nil
			}
		},
	}
}

func validatePath(path string) (*validator.Report, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		f, err := bundle.ReadPlugin(path)
		if err != nil {
			return nil, err
		}
		_, r := validator.CheckPlugin(f.Files)
		r.LeftOut = f.LeftOut
		return r, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(string(data), "PK") {
		pkg, err := bundle.Open(data)
		if err != nil {
			return nil, err
		}
		_, r := validator.CheckPlugin(pkg.Files)
		return r, nil
	}
	if isManifest(path, data) {
		_, r := validator.CheckManifest(data)
		return r, nil
	}
	// One UI config: with its plugin's manifest when it sits in ui/ of a
	// plugin folder, so that manifest-dependent rules are checked too.
	dir := filepath.Dir(path)
	var m *models.Manifest
	extension := ""
	manifestPath := filepath.Join(dir, "..", "manifest.json")
	if raw, err := os.ReadFile(manifestPath); err == nil && filepath.Base(dir) == "ui" {
		if m = validator.ParseManifest(raw); m == nil {
			return nil, fmt.Errorf("%s: cannot be read as a manifest; validate it first", manifestPath)
		}
		for _, e := range m.Extensions {
			if e.ConfigFile() == "ui/"+filepath.Base(path) {
				extension = e.ID
			}
		}
	}
	return validator.CheckUIConfig(data, m, extension), nil
}

// isManifest tells a manifest from a UI config: by its name, else by its members.
func isManifest(path string, data []byte) bool {
	if filepath.Base(path) == "manifest.json" {
		return true
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	_, ui := probe["ui_schema"]
	_, schema := probe["schema_version"]
	return schema && !ui
}

func previewCmd() Command {
	return Command{
		Name:    "preview",
		Summary: "render a valid UI config to one standalone HTML file (--dir DIR --extension ID, or --config FILE)",
		Detail: "An invalid config is refused with the validator's errors and exit 1.\n" +
			"The fixtures file holds canned capability results, storage and context (docs/preview.md).",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_PREVIEW_DIR", "", "plugin source folder")
			ext := fs.String("extension", "PLUGINHOST_PREVIEW_EXTENSION", "", "id of the extension whose screen opens first (with --dir)")
			config := fs.String("config", "PLUGINHOST_PREVIEW_CONFIG", "", "one UI config (instead of --dir)")
			manifest := fs.String("manifest", "PLUGINHOST_PREVIEW_MANIFEST", "", "manifest to check --config against (default: ../manifest.json of a config in ui/)")
			fixtures := fs.String("fixtures", "PLUGINHOST_PREVIEW_FIXTURES", "", "fixtures file: canned capability results, storage, context")
			outFile := fs.String("out", "PLUGINHOST_PREVIEW_OUT", "", "HTML file to write (required)")
			return func(ctx context.Context, out IO, args []string) error {
				if *outFile == "" || (*dir == "") == (*config == "") || (*dir != "" && *ext == "") {
					return Usagef("give --out and either --dir DIR --extension ID or --config FILE")
				}
				opts, err := previewOptions(*dir, *ext, *config, *manifest, *fixtures)
				if err != nil {
					fmt.Fprintf(out.Stderr, "pluginhost preview: %v\n", err)
					return Exit(2)
				}
				html, report, err := preview.Render(opts)
				var fe *preview.FixturesError
				switch {
				case errors.Is(err, preview.ErrInvalid):
					report.WriteText(out.Stdout)
					fmt.Fprintf(out.Stderr, "pluginhost preview: %v\n", err)
					return Exit(1)
				case errors.As(err, &fe):
					fmt.Fprintf(out.Stderr, "pluginhost preview: %s: %v\n", *fixtures, err)
					return Exit(1)
				case err != nil:
					fmt.Fprintf(out.Stderr, "pluginhost preview: %v\n", err)
					return Exit(2)
				}
				if err := os.WriteFile(*outFile, html, 0o644); err != nil {
					fmt.Fprintf(out.Stderr, "pluginhost preview: %v\n", err)
					return Exit(2)
				}
				fmt.Fprintf(out.Stdout, "wrote %s (%d bytes, %d warnings)\n", *outFile, len(html), len(report.Warnings))
				return nil
			}
		},
	}
}

// previewOptions reads the files of a preview. A config inside the ui/ folder
// of a plugin is previewed with its whole plugin, so that navigation works.
func previewOptions(dir, ext, config, manifest, fixtures string) (preview.Options, error) {
	var opts preview.Options
	var err error
	if fixtures != "" {
		if opts.Fixtures, err = os.ReadFile(fixtures); err != nil {
			return opts, err
		}
	}
	if config != "" && manifest == "" && ext == "" && filepath.Base(filepath.Dir(config)) == "ui" {
		root := filepath.Dir(filepath.Dir(config))
		if raw, err := os.ReadFile(filepath.Join(root, "manifest.json")); err == nil {
			if m := validator.ParseManifest(raw); m != nil {
				for _, e := range m.Extensions {
					if e.ConfigFile() == "ui/"+filepath.Base(config) {
						dir, ext = root, e.ID
					}
				}
			}
		}
	}
	if dir != "" {
		var f *bundle.Folder
		if f, err = bundle.ReadPlugin(dir); err == nil {
			opts.Files = f.Files
		}
		opts.Extension = ext
		return opts, err
	}
	if opts.Config, err = os.ReadFile(config); err != nil {
		return opts, err
	}
	opts.Extension = ext
	if manifest != "" {
		opts.Manifest, err = os.ReadFile(manifest)
	}
	return opts, err
}
