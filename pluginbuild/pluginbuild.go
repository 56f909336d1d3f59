// Package pluginbuild builds the capabilities of a plugin folder from their
// Go sources (the manifest's "source") into the reactor modules their
// "module" names, pre-initialized, reproducibly: what pluginhost build and
// pluginhost dev do, and the tests' build of the examples.
package pluginbuild

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"pluginhost/kit"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/validator"
)

// Built is one module Build wrote.
type Built struct {
	Capabilities []string // the capabilities it runs
	Source       string
	Module       string
	Bytes        int
}

// Build builds every capability of the plugin folder dir whose manifest
// entry names a source into the module it names, pre-initialized with the
// engine, and reports each module on w. Capabilities that share a source
// share its module.
func Build(ctx context.Context, dir string, engine *sandbox.Engine, w io.Writer) ([]Built, error) {
	raw, err := os.ReadFile(filepath.Join(dir, validator.ManifestFile))
	if err != nil {
		return nil, err
	}
	var m models.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v (pluginhost validate %s says more)", validator.ManifestFile, err, dir)
	}
	var out []Built
	bySource := map[string]int{}
	for _, c := range m.Capabilities {
		if c.Source == "" {
			continue
		}
		if i, ok := bySource[c.Source]; ok {
			if out[i].Module != c.Module {
				return nil, fmt.Errorf("capabilities %s and %s build source %s into two modules (%s, %s): name one", out[i].Capabilities[0], c.ID, c.Source, out[i].Module, c.Module)
			}
			out[i].Capabilities = append(out[i].Capabilities, c.ID)
			continue
		}
		if c.Module == "" {
			return nil, fmt.Errorf("capability %s is built from %s but names no module to build it into: set module, such as capabilities/NAME.wasm", c.ID, c.Source)
		}
		begun := time.Now()
		wasm, err := goBuild(ctx, filepath.Join(dir, filepath.FromSlash(c.Source)))
		if err != nil {
			return nil, fmt.Errorf("capability %s: %w", c.ID, err)
		}
		pre, err := engine.Preinitialize(ctx, wasm)
		if err != nil {
			return nil, fmt.Errorf("capability %s: %s does not give a module the host can run: %w "+
				"(a Go capability registers its handler with kit.Handle in an init function; see docs/plugins.md)", c.ID, c.Source, err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(c.Module))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, pre, 0o644); err != nil {
			return nil, err
		}
		bySource[c.Source] = len(out)
		out = append(out, Built{Capabilities: []string{c.ID}, Source: c.Source, Module: c.Module, Bytes: len(pre)})
		fmt.Fprintf(w, "built %s from %s into %s (%.1f MiB, pre-initialized) in %v\n", c.ID, c.Source, c.Module,
			float64(len(pre))/(1<<20), time.Since(begun).Round(time.Millisecond))
	}
	if len(out) == 0 {
		fmt.Fprintf(w, "nothing to build: no capability of %s names a source\n", m.ID)
	}
	return out, nil
}

// goBuild builds the Go main package in dir as a WASI preview 1 reactor,
// reproducibly: no paths, build ids or VCS stamps of the machine in it. A
// folder in a Go module of its own (or of the plugin's) is built in place,
// with that module's dependencies; one in none is built in a module made for
// it that requires pluginhost/kit, which this binary carries.
func goBuild(ctx context.Context, dir string) ([]byte, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("its source %s is not a folder of the plugin", dir)
	}
	tmp, err := os.MkdirTemp("", "pluginhost-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("pluginhost build needs Go on the PATH: %v", err)
	}
	cmdDir := dir
	if !inModule(ctx, dir) {
		if cmdDir, err = moduleFor(dir, tmp); err != nil {
			return nil, err
		}
		env = append(env, "GOFLAGS=-mod=mod", "GOWORK=off")
	}
	file := filepath.Join(tmp, "module.wasm")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared",
		"-ldflags=-s -w -buildid=", "-o", file, ".")
	cmd.Dir, cmd.Env = cmdDir, env
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build in %s failed: %v\n%s", dir, err, strings.TrimSpace(string(msg)))
	}
	return os.ReadFile(file)
}

// inModule reports whether dir is in a Go module.
func inModule(ctx context.Context, dir string) bool {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	mod := strings.TrimSpace(string(out))
	return err == nil && mod != "" && mod != os.DevNull
}

// moduleFor copies the Go sources of dir into a module made under tmp that
// requires pluginhost (its kit package, from this binary), and returns the
// copy's folder.
func moduleFor(dir, tmp string) (string, error) {
	kitDir := filepath.Join(tmp, "pluginhost", "kit")
	if err := os.MkdirAll(kitDir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "pluginhost", "go.mod"), []byte("module pluginhost\n\ngo 1.24\n"), 0o644); err != nil {
		return "", err
	}
	entries, err := kit.Source.ReadDir(".")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		b, err := kit.Source.ReadFile(e.Name())
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(kitDir, e.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	src := filepath.Join(tmp, "capability")
	if err := os.CopyFS(src, os.DirFS(dir)); err != nil {
		return "", fmt.Errorf("copy %s: %w", dir, err)
	}
	gomod := "module capability\n\ngo 1.24\n\nrequire pluginhost v0.0.0\n\nreplace pluginhost => ../pluginhost\n"
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	return src, nil
}
