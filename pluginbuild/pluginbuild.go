// Package pluginbuild builds the capabilities of a plugin folder from their
// sources (the manifest's "source": a Go main package, or C files) into the
// reactor modules their "module" names, pre-initialized, reproducibly: what
// pluginhost build and pluginhost dev do, and the tests' build of the
// examples. It reads and writes only inside the plugin folder.
package pluginbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/validator"
)

// CPackages are the Debian and Ubuntu packages that build a capability from
// C: clang, its WebAssembly linker, wasi-libc and clang's runtime for
// wasm32. The documents, the scaffold and CI install exactly these.
const CPackages = "clang lld wasi-libc libclang-rt-dev-wasm32"

// Built is one module Build wrote.
type Built struct {
	Capabilities []string // the capabilities it runs
	Source       string
	Module       string
	Bytes        int
	// Reused is set when the source's files did not change since the
	// Builder's last build of it, which wrote the same module.
	Reused bool
}

// Build builds every capability of the plugin folder dir whose manifest
// entry names a source into the module it names, pre-initialized with the
// engine, and reports each module on w. Capabilities that share a source
// share its module.
func Build(ctx context.Context, dir string, engine *sandbox.Engine, w io.Writer) ([]Built, error) {
	b := &Builder{Engine: engine, Log: w}
	return b.Build(ctx, dir)
}

// Builder builds plugin folders, and remembers what it built: a source none
// of whose files changed since is not built again (pluginhost dev).
type Builder struct {
	Engine *sandbox.Engine // pre-initializes the modules
	Log    io.Writer       // where each module built is reported

	last map[string]memo // by plugin folder and source
}

// memo is a source's last build: the sum of its inputs and the module.
type memo struct {
	inputs [32]byte
	module []byte
}

// Build builds the capabilities of the plugin folder dir, as the function
// Build does. Before it reads or writes anything else it applies the
// validator's rules to the paths the manifest names: a module or a source
// out of the folder, through .. or a symbolic link, is refused.
func (b *Builder) Build(ctx context.Context, dir string) ([]Built, error) {
	if b.Log == nil {
		b.Log = io.Discard
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("the plugin folder: %w", err)
	}
	defer root.Close()
	if err := Inside(root, validator.ManifestFile); err != nil {
		return nil, err
	}
	raw, err := root.ReadFile(validator.ManifestFile)
	if err != nil {
		return nil, err
	}
	m, err := manifestPaths(raw, dir)
	if err != nil {
		return nil, err
	}
	if err := refreshKit(root); err != nil {
		return nil, err
	}
	var sources []string
	for _, c := range m.Capabilities {
		if c.Source != "" && !slices.Contains(sources, c.Source) {
			sources = append(sources, c.Source)
		}
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
		built, err := b.one(ctx, root, dir, c, sources)
		if err != nil {
			return nil, fmt.Errorf("capability %s: %w", c.ID, err)
		}
		bySource[c.Source] = len(out)
		out = append(out, built)
	}
	if len(out) == 0 {
		fmt.Fprintf(b.Log, "nothing to build: no capability of %s names a source\n", m.ID)
	}
	return out, nil
}

// one builds the source of capability c into its module.
func (b *Builder) one(ctx context.Context, root *os.Root, dir string, c models.Capability, sources []string) (Built, error) {
	out := Built{Capabilities: []string{c.ID}, Source: c.Source, Module: c.Module}
	for _, p := range []string{c.Source, c.Module} {
		if err := Inside(root, p); err != nil {
			return out, err
		}
	}
	lang, err := sourceLanguage(root, c.Source)
	if err != nil {
		return out, err
	}
	begun := time.Now()
	inputs, err := inputsSum(root, c.Source, sources)
	if err != nil {
		return out, err
	}
	abs, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(c.Source)))
	if err != nil {
		return out, err
	}
	key := abs + "\x00" + c.Module
	if last, ok := b.last[key]; ok && last.inputs == inputs {
		if have, err := root.ReadFile(c.Module); err == nil && bytes.Equal(have, last.module) {
			out.Bytes, out.Reused = len(last.module), true
			return out, nil
		}
	}
	var wasm []byte
	if lang == "c" {
		wasm, err = cBuild(ctx, abs)
	} else {
		wasm, err = goBuild(ctx, abs)
	}
	if err != nil {
		return out, err
	}
	pre, err := b.Engine.Preinitialize(ctx, wasm)
	if err != nil {
		how := "a Go capability registers its handler with kit.Handle in an init function"
		if lang == "c" {
			how = `a C capability is a reactor (clang -mexec-model=reactor) that exports pluginhost_run: __attribute__((export_name("pluginhost_run")))`
		}
		return out, fmt.Errorf("%s does not give a module the host can run: %w (%s; see docs/plugins.md)", c.Source, err, how)
	}
	if err := root.MkdirAll(path.Dir(c.Module), 0o755); err != nil {
		return out, err
	}
	if have, err := root.ReadFile(c.Module); err != nil || !bytes.Equal(have, pre) {
		if err := root.WriteFile(c.Module, pre, 0o644); err != nil {
			return out, err
		}
	}
	if b.last == nil {
		b.last = map[string]memo{}
	}
	b.last[key] = memo{inputs: inputs, module: pre}
	out.Bytes = len(pre)
	size := fmt.Sprintf("%.1f MiB", float64(len(pre))/(1<<20))
	if len(pre) < 1<<20 {
		size = fmt.Sprintf("%d KiB", (len(pre)+1023)/1024)
	}
	fmt.Fprintf(b.Log, "built %s from %s into %s (%s, pre-initialized) in %v\n", c.ID, c.Source, c.Module,
		size, time.Since(begun).Round(time.Millisecond))
	return out, nil
}

// pathRule matches the JSON Pointers of the paths a build reads or writes.
var pathRule = regexp.MustCompile(`^/capabilities/[0-9]+/(module|source)$`)

// manifestPaths decodes the manifest and applies the validator's rules to
// each capability's module and source path.
func manifestPaths(raw []byte, dir string) (*models.Manifest, error) {
	var m models.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v (pluginhost validate %s says more)", validator.ManifestFile, err, dir)
	}
	_, report := validator.CheckManifest(raw)
	var bad []string
	for _, p := range report.Errors {
		if pathRule.MatchString(p.Path) {
			bad = append(bad, fmt.Sprintf("%s %s: %s", validator.ManifestFile, p.Path, p.Message))
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s\n(pluginhost build reads and writes only inside the plugin folder)", strings.Join(bad, "\n"))
	}
	return &m, nil
}

// Inside checks that the relative path rel stays in the folder of root:
// none of its parts that exist is a symbolic link out of it.
func Inside(root *os.Root, rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		info, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // made by the build, inside
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if _, err := root.Stat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s is a symbolic link out of the plugin folder: pluginhost build reads and writes only inside it", p)
			}
		}
	}
	return nil
}

// sourceLanguage checks that source is a folder of the plugin none of whose
// files is a symbolic link out of it, and says what it holds: "go" (a
// main package) or "c" (C files).
func sourceLanguage(root *os.Root, source string) (string, error) {
	if info, err := root.Stat(source); err != nil || !info.IsDir() {
		return "", fmt.Errorf("its source %s is not a folder of the plugin", source)
	}
	lang := ""
	err := fs.WalkDir(root.FS(), source, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if err := Inside(root, p); err != nil {
				return err
			}
		}
		if path.Dir(p) == source {
			switch {
			case strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go"):
				lang = "go"
			case strings.HasSuffix(p, ".c") && lang == "":
				lang = "c"
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if lang == "" {
		return "", fmt.Errorf("its source %s holds no .go and no .c file", source)
	}
	return lang, nil
}

// inputsSum sums what a build of source reads in the plugin folder: its own
// files, and the Go and C files, go.mod and go.sum outside every source
// folder (shared packages, the kit). Dot folders are left out.
func inputsSum(root *os.Root, source string, sources []string) ([32]byte, error) {
	h := sha256.New()
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != source && slices.Contains(sources, p) {
				return fs.SkipDir
			}
			return nil
		}
		own := strings.HasPrefix(p, source+"/")
		switch ext := path.Ext(p); {
		case own, ext == ".go", ext == ".c", ext == ".h", ext == ".s", d.Name() == "go.mod", d.Name() == "go.sum", d.Name() == "go.work":
		default:
			return nil
		}
		b, err := root.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, err
}

// goBuild builds the Go main package in dir as a WASI preview 1 reactor,
// reproducibly: no paths, build ids or VCS stamps of the machine in it. A
// folder in a Go module (the plugin's, made by pluginhost new) is built in
// place, with that module's dependencies; one in none is built in a module
// made for it that requires the kit this binary carries.
func goBuild(ctx context.Context, dir string) ([]byte, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("pluginhost build needs Go 1.24 or later on the PATH for a Go source: %v", err)
	}
	tmp, err := os.MkdirTemp("", "pluginhost-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	cmdDir := dir
	if !inModule(dir) {
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

// inModule reports whether dir is in a Go module: whether it or a folder
// above it holds a go.mod.
func inModule(dir string) bool {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return false
		}
		dir = up
	}
}

// moduleFor copies the Go sources of dir into a module made under tmp that
// requires the kit's module (from this binary), and returns the copy's
// folder.
func moduleFor(dir, tmp string) (string, error) {
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if _, err := WriteKit(root, KitDir); err != nil {
		return "", err
	}
	src := filepath.Join(tmp, "capability")
	if err := os.CopyFS(src, os.DirFS(dir)); err != nil {
		return "", fmt.Errorf("copy %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(GoMod("capability", "../"+KitDir)), 0o644); err != nil {
		return "", err
	}
	return src, nil
}

// cBuild builds the C files of dir into a WASI preview 1 reactor with clang
// and wasi-libc.
func cBuild(ctx context.Context, dir string) ([]byte, error) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		return nil, fmt.Errorf("pluginhost build needs clang for a C source (Debian, Ubuntu: apt-get install %s)", CPackages)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.c"))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "pluginhost-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "module.wasm")
	args := []string{"--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Wl,--strip-all", "-o", file}
	for _, f := range files {
		args = append(args, filepath.Base(f))
	}
	cmd := exec.CommandContext(ctx, clang, args...)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		text := strings.TrimSpace(string(msg))
		if strings.Contains(text, "file not found") || strings.Contains(text, "cannot open") || strings.Contains(text, "unable to") {
			text += fmt.Sprintf("\n(a part of the C toolchain for WebAssembly may be missing: on Debian and Ubuntu, apt-get install %s)", CPackages)
		}
		return nil, fmt.Errorf("clang in %s failed: %v\n%s", dir, err, text)
	}
	return os.ReadFile(file)
}
