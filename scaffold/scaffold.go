// Package scaffold makes a new plugin folder (pluginhost new): a manifest, a
// screen, a home card, a storage namespace and a tool with its unit test, in
// Go or in C, and a README of next steps. A Go folder is a module of its own
// that reaches the kit in its kit/ folder, written from this binary: it
// tests, builds and runs with nothing but Go and the binary.
package scaffold

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"pluginhost/models"
	"pluginhost/pluginbuild"
)

//go:embed template
var templates embed.FS

// Languages a tool can be written in.
const (
	Go = "go"
	C  = "c"
)

// Options say what to make.
type Options struct {
	Dir  string // the folder to make: missing or empty
	Lang string // Go or C; "" is Go
	// ID is the plugin id; "" derives com.example.NAME from the folder's
	// name.
	ID string
	// Name is the plugin's name; "" derives it from the id's last part.
	Name string
}

// Plugin is what New made.
type Plugin struct {
	ID, Name, Lang string
	Tool           string // the tool's capability id
	Files          []string
}

// New makes the plugin folder.
func New(o Options) (*Plugin, error) {
	if o.Dir == "" {
		return nil, errors.New("the folder to make is required")
	}
	switch o.Lang {
	case "":
		o.Lang = Go
	case Go, C:
	default:
		return nil, fmt.Errorf("language %q: a tool is written in go or c", o.Lang)
	}
	if o.ID == "" {
		o.ID = "com.example." + identifier(filepath.Base(o.Dir))
	}
	if !models.IsDottedIdentifier(o.ID) {
		return nil, fmt.Errorf("%q is not a plugin id: lower-case safe identifiers (a letter, then letters, digits, _) joined by dots, at most 128 characters, such as com.example.notes", o.ID)
	}
	ns := o.ID[strings.LastIndex(o.ID, ".")+1:]
	if o.Name == "" {
		o.Name = strings.ToUpper(ns[:1]) + strings.ReplaceAll(ns[1:], "_", " ")
	}
	if entries, err := os.ReadDir(o.Dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: pluginhost new makes a new folder", o.Dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	r := strings.NewReplacer("{{ID}}", o.ID, "{{NAME}}", o.Name, "{{NS}}", ns, "{{CPACKAGES}}", pluginbuild.CPackages)
	p := &Plugin{ID: o.ID, Name: o.Name, Lang: o.Lang, Tool: ns + ".summary"}
	for _, set := range []string{"common", o.Lang} {
		err := fs.WalkDir(templates, "template/"+set, func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := templates.ReadFile(name)
			if err != nil {
				return err
			}
			rel := strings.TrimSuffix(strings.TrimPrefix(name, "template/"+set+"/"), ".tmpl")
			if rel == "gitignore" {
				rel = ".gitignore"
			}
			return p.write(root, rel, []byte(r.Replace(string(b))))
		})
		if err != nil {
			return nil, err
		}
	}
	if err := root.MkdirAll("capabilities", 0o755); err != nil {
		return nil, err
	}
	if o.Lang == Go {
		if err := p.write(root, "go.mod", []byte(pluginbuild.GoMod(o.ID, "./"+pluginbuild.KitDir))); err != nil {
			return nil, err
		}
		if _, err := pluginbuild.WriteKit(root, pluginbuild.KitDir); err != nil {
			return nil, err
		}
		p.Files = append(p.Files, pluginbuild.KitDir+"/")
	}
	return p, nil
}

func (p *Plugin) write(root *os.Root, rel string, b []byte) error {
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	p.Files = append(p.Files, rel)
	return root.WriteFile(rel, b, 0o644)
}

// identifier makes a safe identifier of a folder's name: lower-case
// letters, digits and _, starting with a letter.
func identifier(s string) string {
	s = regexp.MustCompile(`[^a-z0-9_]+`).ReplaceAllString(strings.ToLower(s), "_")
	s = strings.Trim(s, "_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "plugin_" + s
	}
	return strings.TrimSuffix(s, "_")
}
