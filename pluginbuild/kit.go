package pluginbuild

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"pluginhost/kit"
)

// KitDir is the folder of a plugin folder that holds the kit as a Go module
// of its own, pluginhost/kit: pluginhost new writes it from the binary, and
// pluginhost build keeps it the binary's, so that a plugin builds and tests
// with nothing but Go and the binary.
const KitDir = "kit"

// kitModule is the go.mod of the kit's module. Its first line says who
// wrote it: a kit folder whose go.mod starts so is the binary's to keep
// current.
const kitModule = "// The kit of the pluginhost binary, written by pluginhost new and kept current\n" +
	"// by pluginhost build: do not edit, your changes would be replaced.\n" +
	"module pluginhost/kit\n\ngo 1.24\n"

// GoMod is the go.mod of a plugin's Go module named module that reaches the
// kit's module in the folder kitDir (relative to the go.mod).
func GoMod(module, kitDir string) string {
	return "module " + module + "\n\ngo 1.24\n\nrequire pluginhost/kit v0.0.0\n\n" +
		"// The kit comes from the pluginhost binary: pluginhost new wrote it into " + kitDir + ",\n" +
		"// and pluginhost build keeps it current.\n" +
		"replace pluginhost/kit => " + kitDir + "\n"
}

// kitFiles are the files of the kit's module: its sources and its go.mod.
func kitFiles() (map[string][]byte, error) {
	entries, err := kit.Source.ReadDir(".")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"go.mod": []byte(kitModule)}
	for _, e := range entries {
		name := e.Name()
		b, err := kit.Source.ReadFile(name)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// WriteKit writes the kit's module into the folder dir of root, made if
// missing: the kit's Go files and its go.mod. Go files of the folder that
// are not the kit's are removed. It reports whether anything changed.
func WriteKit(root *os.Root, dir string) (bool, error) {
	files, err := kitFiles()
	if err != nil {
		return false, err
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	changed := false
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if _, ours := files[e.Name()]; !ours && strings.HasSuffix(e.Name(), ".go") && !e.IsDir() {
			if err := root.Remove(path.Join(dir, e.Name())); err != nil {
				return false, err
			}
			changed = true
		}
	}
	for name, b := range files {
		p := path.Join(dir, name)
		if have, err := root.ReadFile(p); err == nil && bytes.Equal(have, b) {
			continue
		}
		if err := root.WriteFile(p, b, 0o644); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// refreshKit makes the kit folder of a plugin folder the binary's kit, when
// the binary wrote it (its go.mod says so).
func refreshKit(root *os.Root) error {
	if err := Inside(root, KitDir+"/go.mod"); err != nil {
		return err
	}
	mod, err := root.ReadFile(KitDir + "/go.mod")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(kitModule, "\n")
	if !bytes.HasPrefix(mod, []byte(first)) {
		return nil // the author's own
	}
	if _, err := WriteKit(root, KitDir); err != nil {
		return fmt.Errorf("keep the kit in %s current: %w", KitDir, err)
	}
	return nil
}
