package validator

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"pluginhost/bundle"
	"pluginhost/jsonschema"
	"pluginhost/models"
	"pluginhost/wasmbin"
)

// Problem codes of plugin folders.
const (
	CodeMissingFile      = "missing_file"
	CodeUnreferencedFile = "unreferenced_file"
)

// ManifestFile is the name of the manifest in a plugin folder.
const ManifestFile = "manifest.json"

// checkModule checks a capability module as the host does at install: its
// size, its structure against the host's default limits, and what it
// imports and exports.
func checkModule(wasm []byte) error {
	if len(wasm) > bundle.MaxModuleBytes {
		return fmt.Errorf("the module has %d bytes; at most %d are allowed", len(wasm), bundle.MaxModuleBytes)
	}
	sum := sha256.Sum256(wasm)
	if err, ok := checkedModules.get(sum); ok {
		return err
	}
	_, _, err := wasmbin.Check(wasm, wasmbin.Limits{})
	checkedModules.put(sum, err)
	return err
}

// checkedModules remembers the verdicts on the modules checked last: an
// author's loop validates the same module with every change of a screen,
// and the server again at each install.
var checkedModules = &moduleVerdicts{verdicts: map[[32]byte]error{}}

// moduleVerdicts is a bounded memory of module checks, by SHA-256.
type moduleVerdicts struct {
	mu       sync.Mutex
	verdicts map[[32]byte]error
}

// maxModuleVerdicts bounds the verdicts kept; past it they are forgotten.
const maxModuleVerdicts = 64

func (v *moduleVerdicts) get(sum [32]byte) (error, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	err, ok := v.verdicts[sum]
	return err, ok
}

func (v *moduleVerdicts) put(sum [32]byte, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.verdicts) >= maxModuleVerdicts {
		clear(v.verdicts)
	}
	v.verdicts[sum] = err
}

// CheckPlugin validates a whole plugin folder, given as file path (relative,
// with forward slashes) to content: manifest.json and the UI configs under
// ui/. Every problem names its file. It checks the manifest, the config of
// every extension (ui/<id>.json unless the extension names another file under
// ui/) with the extension's point and with the route parameters that the
// plugin's navigate actions pass to it, reports a missing config file, and
// warns about files under ui/ that no extension uses.
//
// It returns the manifest when the whole folder is valid, nil otherwise. When
// the manifest itself is invalid, the configs are still checked against what
// could be read of it, so that every problem is reported at once.
func CheckPlugin(files map[string][]byte) (*models.Manifest, *Report) {
	r := &Report{Valid: true, Errors: []models.Problem{}, Warnings: []models.Problem{}}
	raw, ok := files[ManifestFile]
	if !ok {
		r.Errors = append(r.Errors, models.Problem{File: ManifestFile, Path: "", Code: CodeMissingFile,
			Message: "a plugin folder has manifest.json at its root"})
		r.Valid = false
		return nil, r
	}
	m, mr := CheckManifest(raw)
	use := m
	if use == nil {
		use = ParseManifest(raw)
	}
	if use == nil {
		r.Merge(ManifestFile, mr)
		return nil, r
	}

	// Which file each extension uses; the manifest's own problems about them.
	extra := &checker{}
	type config struct {
		ext  models.Extension
		file string
	}
	var configs []config
	referenced := map[string]bool{}
	for i, e := range use.Extensions {
		file := e.ConfigFile()
		at := jsonschema.Pointer("/extensions", i, "config")
		if e.Config == "" {
			at = jsonschema.Pointer("/extensions", i)
		}
		if _, ok := files[file]; !ok {
			extra.errorf(at, CodeMissingFile, "extension %q uses %s, which is not in the plugin folder", e.ID, file)
			continue
		}
		referenced[file] = true
		configs = append(configs, config{e, file})
	}
	// Each module a capability names: a file of the plugin the host can run.
	checked := map[string]error{}
	for i, cp := range use.Capabilities {
		if cp.Module == "" {
			continue
		}
		at := jsonschema.Pointer("/capabilities", i, "module")
		wasm, ok := files[cp.Module]
		if !ok {
			if cp.Source != "" {
				extra.errorf(at, CodeMissingFile, "capability %q runs %s, which is not in the plugin folder: pluginhost build builds it from %s", cp.ID, cp.Module, cp.Source)
			} else {
				extra.errorf(at, CodeMissingFile, "capability %q runs %s, which is not in the plugin folder", cp.ID, cp.Module)
			}
			continue
		}
		err, done := checked[cp.Module]
		if !done {
			err = checkModule(wasm)
			checked[cp.Module] = err
		}
		if err != nil {
			extra.errorf(at, CodeInvalidModule, "capability %q runs %s: %v", cp.ID, cp.Module, err)
		}
	}
	if len(extra.errs) > 0 {
		mr.Errors = append(mr.Errors, extra.errs...)
		doc, _ := decode(raw, &checker{})
		sortProblems(mr.Errors, doc.order())
		mr.Valid = false
	}
	r.Merge(ManifestFile, mr)

	// The route parameters each extension receives.
	params := map[string]map[string]bool{}
	for _, cf := range configs {
		if doc, _ := decode(files[cf.file], &checker{}); doc != nil {
			navigateParams(doc.root, params)
		}
	}
	for _, cf := range configs {
		r.Merge(cf.file, checkUIConfig(files[cf.file], use, cf.ext.ID, true, params[cf.ext.ID]))
	}

	var names []string
	for name := range files {
		if strings.HasPrefix(name, "ui/") && !referenced[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		r.Warnings = append(r.Warnings, models.Problem{File: name, Path: "", Code: CodeUnreferencedFile,
			Message: "no extension of the manifest uses this file; it is packaged but never shown"})
	}
	r.Valid = len(r.Errors) == 0
	if !r.Valid {
		return nil, r
	}
	return m, r
}

// navigateParams records, for every navigate action in v, the parameters it
// passes to its target.
func navigateParams(v any, into map[string]map[string]bool) {
	switch x := v.(type) {
	case *object:
		if t, _ := x.val("type").(string); t == "navigate" {
			if target, ok := x.val("target").(string); ok {
				set := into[target]
				if set == nil {
					set = map[string]bool{}
					into[target] = set
				}
				if ps, ok := x.val("parameters").(*object); ok {
					for _, mb := range ps.list() {
						set[mb.key] = true
					}
				}
			}
		}
		for _, mb := range x.list() {
			navigateParams(mb.val, into)
		}
	case []any:
		for _, e := range x {
			navigateParams(e, into)
		}
	}
}

// ParseManifest reads manifest.json as far as it can without validating it,
// for checking UI configs against a manifest that has problems of its own
// (members of the wrong type are left empty). It returns nil when the text is
// not a JSON object. Use CheckManifest to validate.
func ParseManifest(data []byte) *models.Manifest {
	if doc, _ := decode(data, &checker{}); doc == nil {
		return nil
	} else if _, ok := doc.root.(*object); !ok {
		return nil
	}
	var m models.Manifest
	err := json.Unmarshal(data, &m)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return nil
	}
	return &m
}
