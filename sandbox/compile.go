package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// Compilation happens in a child process: the server's own binary, started
// again with compilerEnv set, which compiles one module into a folder of
// its own and exits. The server watches its memory and its time and kills it
// past the budget; a crash of the compiler is the child's, not the server's;
// and SIGTERM stops the server whatever is compiling. The server then moves
// the machine code into its cache and loads it from there.

// compilerEnv, set in a process's environment, makes it a compiler: it
// reads one module on standard input and writes its machine code into the
// folder the variable names.
const compilerEnv = "PLUGINHOST_SANDBOX_COMPILE_INTO"

// compilerMemoryEnv passes the compilation's memory budget, in bytes.
const compilerMemoryEnv = "PLUGINHOST_SANDBOX_COMPILE_MEMORY"

// Exit codes of the compiler process.
const (
	compilerInvalid = 2 // the engine refused the module; the reason is on standard error
	compilerMemory  = 3 // the compiler saw its memory pass the budget
)

func init() {
	// Any binary that links the sandbox can be its compiler: the server,
	// `pluginhost run`, and the test binaries of every package that runs
	// capabilities. A compiler does its one job before anything else of
	// the program starts.
	if dir := os.Getenv(compilerEnv); dir != "" {
		os.Exit(compilerMain(dir))
	}
}

// compilerMain is the child's whole life.
func compilerMain(dir string) int {
	lowerPriority()
	limit, _ := strconv.ParseInt(os.Getenv(compilerMemoryEnv), 10, 64)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		go watchOwnMemory(limit)
	}
	wasm, err := io.ReadAll(io.LimitReader(os.Stdin, 4*MaxModuleBytes))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rt, err := newRuntime(ctx, cache)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Functions compile in parallel, one worker a processor: the author's
	// loop waits for this compilation after every change of its code.
	if _, err := rt.CompileModule(experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0)), wasm); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return compilerInvalid
	}
	rt.Close(ctx)
	cache.Close(ctx)
	return 0
}

// watchOwnMemory ends the compiler when the memory the Go runtime holds
// passes the limit: the server's watch of the process's resident memory
// samples, so this one catches a fast climb sooner.
func watchOwnMemory(limit int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	for range time.Tick(5 * time.Millisecond) {
		metrics.Read(sample)
		if v := sample[0].Value; v.Kind() == metrics.KindUint64 && int64(v.Uint64()) > limit {
			fmt.Fprintf(os.Stderr, "compiling needed more than %d bytes of memory\n", limit)
			os.Exit(compilerMemory)
		}
	}
}

// compileInChild compiles wasm in a child process within the compilation
// budget, unless its machine code is already in the cache, and moves what
// the child wrote into the cache. It returns the machine code's size.
func (e *Engine) compileInChild(ctx context.Context, wasm []byte) (int64, error) {
	sum := sha256.Sum256(wasm)
	marker := filepath.Join(e.cacheDir, "modules", hex.EncodeToString(sum[:]))
	if size, ok := cachedCode(e.cacheDir, marker); ok {
		return size, nil
	}
	select {
	case e.compiles <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-e.compiles }()

	tmp, err := os.MkdirTemp(e.cacheDir, ".compiling-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("the compiler cannot be started: %v", err)
	}
	l := e.limits
	cctx, cancel := context.WithTimeout(ctx, l.CompileTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = append(os.Environ(), compilerEnv+"="+tmp, compilerMemoryEnv+"="+strconv.FormatInt(l.CompileMemoryBytes, 10))
	cmd.Stdin = bytes.NewReader(wasm)
	stderr := &boundedWriter{max: 4 << 10}
	cmd.Stderr = stderr
	childAttributes(cmd)
	begun := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("the compiler cannot be started: %v", err)
	}
	var over atomic.Bool
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchMemory(cctx, cmd.Process, l.CompileMemoryBytes, &over)
	}()
	err = cmd.Wait()
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	<-watched
	code := -1
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	}
	switch {
	case err == nil:
	case over.Load() || code == compilerMemory:
		return 0, fmt.Errorf("compiling the module needed more than %d bytes of memory (the compilation memory budget)", l.CompileMemoryBytes)
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case timedOut:
		return 0, fmt.Errorf("compiling the module took longer than %s (the compilation time budget)", l.CompileTimeout)
	case code == compilerInvalid:
		return 0, fmt.Errorf("not a valid WebAssembly module: %s", firstLine(stderr.bytes()))
	default:
		return 0, &crash{where: "compiling the module", value: fmt.Sprintf("%v after %s: %s", err, time.Since(begun).Round(time.Millisecond), firstLine(stderr.bytes()))}
	}
	return moveCode(tmp, e.cacheDir, marker)
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

// watchMemory kills the process when its resident memory passes limit,
// until ctx ends.
func watchMemory(ctx context.Context, p *os.Process, limit int64, over *atomic.Bool) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rss, ok := residentBytes(p.Pid); ok && rss > limit {
			over.Store(true)
			p.Kill()
			return
		}
	}
}

// moveCode moves every file the compiler wrote under tmp to the same place
// under dir, and records them in the marker with their total size.
func moveCode(tmp, dir, marker string) (int64, error) {
	var files []string
	var size int64
	err := filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(tmp, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if err := os.Rename(path, to); err != nil {
			return err
		}
		files = append(files, rel)
		size += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sandbox: compilation cache: %w", err)
	}
	if len(files) == 0 {
		return 0, errors.New("sandbox: the compiler wrote no machine code")
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		return 0, err
	}
	// The marker appears whole or not at all: servers may share the cache.
	content := strconv.FormatInt(size, 10) + "\n" + strings.Join(files, "\n") + "\n"
	f, err := os.CreateTemp(filepath.Dir(marker), ".marker-")
	if err == nil {
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), marker)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox: compilation cache: %w", err)
	}
	return size, nil
}

// cachedCode reports whether the marker's machine code is all in the cache,
// and its size.
func cachedCode(dir, marker string) (int64, bool) {
	b, err := os.ReadFile(marker)
	if err != nil {
		return 0, false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	size, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil || len(lines) < 2 {
		return 0, false
	}
	for _, rel := range lines[1:] {
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			return 0, false
		}
	}
	return size, true
}
