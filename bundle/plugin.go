package bundle

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"pluginhost/models"
)

// Folder is what a plugin folder ships in its package, and what it leaves
// out.
type Folder struct {
	// Files are the files the plugin needs: manifest.json, the config of
	// each extension and the module of each capability, by path.
	Files map[string][]byte
	// LeftOut are the folder's other files (sources, build leftovers,
	// configs no extension uses), by path, sorted: they are not packaged.
	LeftOut []string
}

// ReadPlugin reads a plugin folder for its package: the files its manifest
// names (manifest.json, each extension's config, each capability's module),
// within the package limits, and the paths of every other file, left out.
// Files and folders whose name starts with a dot are skipped. A manifest that
// cannot be read leaves only itself in Files, for the validator to report.
func ReadPlugin(dir string) (*Folder, error) {
	f := &Folder{Files: map[string][]byte{}}
	var all []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			all = append(all, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read plugin folder %s: %w", dir, err)
	}
	needed := map[string]bool{"manifest.json": true}
	if raw, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil {
		var m models.Manifest
		if json.Unmarshal(raw, &m) == nil {
			for _, e := range m.Extensions {
				needed[e.ConfigFile()] = true
			}
			for _, c := range m.Capabilities {
				if c.Module != "" {
					needed[c.Module] = true
				}
			}
		}
	}
	total := 0
	for _, rel := range all {
		if !needed[rel] {
			f.LeftOut = append(f.LeftOut, rel)
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file; a plugin packages only regular files", rel)
		}
		if err := checkPath(rel); err != nil {
			return nil, err
		}
		if limit := maxFileBytes(rel); info.Size() > int64(limit) {
			return nil, fmt.Errorf("%s has %d bytes; a file of its kind may have at most %d", rel, info.Size(), limit)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		total += len(b)
		if total > MaxTotalBytes || len(f.Files) >= MaxFiles {
			return nil, fmt.Errorf("the plugin's files exceed %d files or %d bytes", MaxFiles, MaxTotalBytes)
		}
		f.Files[rel] = b
	}
	sort.Strings(f.LeftOut)
	return f, nil
}
