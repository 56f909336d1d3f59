package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pluginhost/access"
	"pluginhost/bundle"
	"pluginhost/egress"
	"pluginhost/models"
	"pluginhost/netfetch"
	"pluginhost/notify"
	"pluginhost/sandbox"
	"pluginhost/validator"
)

// SandboxFlags defines the flags of the limits of capability runs, shared by
// serve and run, and returns a function that reads them once parsed.
func SandboxFlags(fs *FlagSet) func() sandbox.Limits {
	timeout := fs.Duration("run-timeout", "PLUGINHOST_RUN_TIMEOUT", sandbox.DefaultTimeout, 100*time.Millisecond, 5*time.Minute,
		"wall time of one capability run")
	queueWait := fs.Duration("run-queue-wait", "PLUGINHOST_RUN_QUEUE_WAIT", sandbox.DefaultQueueWait, time.Millisecond, 5*time.Minute,
		"how long a run waits for a slot when the runs at once are at their bound; past it the run is busy")
	memory := fs.Int("run-memory-mib", "PLUGINHOST_RUN_MEMORY_MIB", sandbox.DefaultMemoryBytes>>20, 1, 4096, "memory of one capability run, in MiB")
	stack := fs.Int("run-stack-kib", "PLUGINHOST_RUN_STACK_KIB", sandbox.DefaultStackBytes>>10, 4, 1<<20,
		"call stack of one capability run (the weight of its frames under way), in KiB")
	total := fs.Int("run-memory-total-mib", "PLUGINHOST_RUN_MEMORY_TOTAL_MIB", sandbox.DefaultTotalMemoryBytes>>20, 1, 1<<20,
		"memory of all capability runs at once (memories, tables, stacks, instances kept ready), in MiB")
	ready := fs.Int("run-ready-mib", "PLUGINHOST_RUN_READY_MIB", sandbox.DefaultReadyBytes>>20, 0, 1<<20,
		"memory of the initialized reactor instances kept between runs, in MiB (part of the total)")
	output := fs.Int("run-output-kib", "PLUGINHOST_RUN_OUTPUT_KIB", sandbox.DefaultOutputBytes>>10, 1, 64<<10, "standard output of one capability run, in KiB")
	stderr := fs.Int("run-stderr-kib", "PLUGINHOST_RUN_STDERR_KIB", sandbox.DefaultStderrBytes>>10, 1, 1024, "standard error kept of one capability run, in KiB")
	overall := fs.Int("run-concurrency", "PLUGINHOST_RUN_CONCURRENCY", sandbox.DefaultConcurrency, 1, 4096, "capability runs at once, overall")
	perInstance := fs.Int("run-concurrency-per-instance", "PLUGINHOST_RUN_CONCURRENCY_PER_INSTANCE", sandbox.DefaultPerInstance, 1, 4096, "capability runs at once of one Instance")
	perUser := fs.Int("run-concurrency-per-user", "PLUGINHOST_RUN_CONCURRENCY_PER_USER", sandbox.DefaultPerUser(), 1, 4096,
		"capability runs at once of one user (default: half the processors)")
	compileTimeout := fs.Duration("compile-timeout", "PLUGINHOST_COMPILE_TIMEOUT", sandbox.DefaultCompileTimeout, 100*time.Millisecond, time.Hour,
		"time one module's compilation may take")
	compileMemory := fs.Int("compile-memory-mib", "PLUGINHOST_COMPILE_MEMORY_MIB", sandbox.DefaultCompileMemoryBytes>>20, 16, 1<<20,
		"memory one module's compilation may take, in MiB")
	compiles := fs.Int("compile-concurrency", "PLUGINHOST_COMPILE_CONCURRENCY", sandbox.DefaultCompileConcurrency(), 1, 256,
		"compilations at once (default: half the processors)")
	return func() sandbox.Limits {
		return sandbox.Limits{
			Timeout: *timeout, QueueWait: *queueWait, MemoryBytes: int64(*memory) << 20, StackBytes: int64(*stack) << 10,
			TotalMemoryBytes: int64(*total) << 20, ReadyBytes: int64(*ready) << 20,
			OutputBytes: *output << 10, StderrBytes: *stderr << 10,
			Concurrency: *overall, PerInstance: *perInstance, PerUser: *perUser,
			CompileTimeout: *compileTimeout, CompileMemoryBytes: int64(*compileMemory) << 20, CompileConcurrency: *compiles,
		}
	}
}

// runCmd is `pluginhost run`: a plugin author's test bench for one
// capability of a plugin folder, with the limits of the server.
func runCmd() Command {
	return Command{
		Name:    "run",
		Summary: "run one capability of a plugin folder locally, with the server's limits, and print its result",
		Detail: "The capability's module reads the request the server would write, with --arguments and, when\n" +
			"the plugin requests storage, the items of --storage (a JSON file\n" +
			"{\"storage_revision\": N, \"namespaces\": {\"NS\": [{\"key\", \"value\", \"revision\"}]}}; empty when omitted).\n" +
			"The ExtensionResult is printed on standard output (host actions and notifications are shown,\n" +
			"not applied; notifications are checked as the server checks them), or on a failure\n" +
			"{\"error\": {\"code\", \"reason\", \"message\", ...}} with exit 1; the module's standard error\n" +
			"goes to standard error. Compiled modules are cached in --cache-dir.",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_RUN_DIR", ".", "the plugin folder")
			id := fs.String("capability", "PLUGINHOST_RUN_CAPABILITY", "", "the capability id (required)")
			args := fs.String("arguments", "PLUGINHOST_RUN_ARGUMENTS", "{}", "the arguments, a JSON object")
			query := fs.String("query", "PLUGINHOST_RUN_QUERY", "", "the query handed to the capability, if any")
			storageFile := fs.String("storage", "PLUGINHOST_RUN_STORAGE", "", "a JSON file of the storage snapshot the run reads")
			trigger := fs.Enum("trigger", "PLUGINHOST_RUN_TRIGGER", sandbox.TriggerInvoke, "what the request says started the run",
				sandbox.TriggerInvoke, sandbox.TriggerSchedule, sandbox.TriggerAI)
			cacheDir := fs.String("cache-dir", "PLUGINHOST_RUN_CACHE_DIR", defaultCacheDir(), "folder of compiled modules")
			allowPrivate := fs.String("egress-allow-private", "PLUGINHOST_EGRESS_ALLOW_PRIVATE", "",
				"CIDR ranges outside public unicast the run's fetches may reach, comma-separated (as serve takes them)")
			egressCA := fs.String("egress-ca", "PLUGINHOST_EGRESS_CA", "", "PEM file of extra certificate authorities the run's fetches trust")
			apiKey := fs.String("api-key", "PLUGINHOST_RUN_API_KEY", "", "CONNECTION=KEY: the key an api_key connection's fetches carry")
			limits := SandboxFlags(fs)
			return func(ctx context.Context, out IO, pos []string) error {
				if *dir == "" || *id == "" {
					return Usagef("--capability is required, and --dir must name the plugin folder")
				}
				job, err := localJob(*dir, *id, *args, *query, *storageFile, *trigger)
				if err != nil {
					return err
				}
				if err := job.fetching(*allowPrivate, *egressCA, *apiKey); err != nil {
					return err
				}
				engine, err := sandbox.New(ctx, *cacheDir, limits())
				if err != nil {
					return err
				}
				defer engine.Close(ctx)
				return runLocal(ctx, engine, job, out)
			}
		},
	}
}

func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "pluginhost", "wazero")
}

// localJob reads the plugin folder and builds the run's job, with its module
// not yet compiled (job.Module is nil; wasm holds the bytes).
type local struct {
	sandbox.Job
	wasm     []byte
	manifest *models.Manifest
}

// fetching lets the run's fetch rounds reach the manifest's hosts, as on a
// server where the user granted the network (apiKey, CONNECTION=KEY, is the
// key of one api_key connection; nothing else is connected).
func (j *local) fetching(allowPrivate, caFile, apiKey string) error {
	open, err := egress.ParsePrefixes(allowPrivate)
	if err != nil {
		return Usagef("--egress-allow-private: %v", err)
	}
	roots, err := egress.RootCAs(caFile)
	if err != nil {
		return Usagef("%v", err)
	}
	keys := benchKeys{}
	if apiKey != "" {
		id, key, ok := strings.Cut(apiKey, "=")
		if !ok || id == "" || key == "" {
			return Usagef("--api-key is CONNECTION=KEY")
		}
		keys[id] = key
	}
	svc := &netfetch.Service{Policy: &egress.Policy{AllowPrivate: open}, RootCAs: roots, Credentials: keys}
	t := &access.Target{
		Instance:     &models.Instance{ID: j.Request.Instance.ID, Enabled: true, Grants: []string{models.PermissionNetwork}},
		Installation: &models.Installation{ID: j.Request.Instance.InstallationID, PluginID: j.manifest.ID},
		Manifest:     j.manifest,
	}
	j.Fetch = svc.Fetcher(netfetch.Run{Target: t, Capability: j.Capability.ID})
	return nil
}

// benchKeys are the API keys given to pluginhost run, by connection.
type benchKeys map[string]string

func (k benchKeys) Credential(_ context.Context, _ *access.Target, conn models.Connection) (string, string, error) {
	key, ok := k[conn.ID]
	if !ok || conn.Kind != models.ConnectionAPIKey {
		return "", "", models.ConnectionRequired(conn.ID, "connection %q is not connected here: pass --api-key %s=KEY (an api_key connection)", conn.ID, conn.ID)
	}
	header, value := conn.APIKeyHeader(key)
	return header, value, nil
}

// Answered keeps nothing: the bench's keys live as long as its run, whose
// fetches' statuses the module sees.
func (benchKeys) Answered(context.Context, string, string, int) error { return nil }

func localJob(dir, id, args, query, storageFile, trigger string) (*local, error) {
	folder, err := bundle.ReadPlugin(dir)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	files := folder.Files
	m, report := validator.CheckPlugin(files)
	if err := report.Err("the plugin"); err != nil {
		return nil, err
	}
	c, ok := m.Capability(id)
	if !ok {
		return nil, models.Errorf(models.ErrInvalid, "capability %q is not declared by plugin %s", id, m.ID)
	}
	if !json.Valid([]byte(args)) {
		return nil, Usagef("--arguments is not valid JSON")
	}
	j := &local{manifest: m, Job: sandbox.Job{Capability: c, Request: sandbox.Request{
		Capability: c.ID, Kind: c.Kind, Trigger: trigger, Arguments: json.RawMessage(args),
		Instance: sandbox.Instance{ID: "local", InstallationID: "local", Generation: 1},
	}}}
	if query != "" {
		j.Request.Query = &query
	}
	if st := m.EffectiveStorage(); st != nil {
		ps := &sandbox.PluginStorage{Namespaces: map[string][]sandbox.Item{}}
		if storageFile != "" {
			b, err := os.ReadFile(storageFile)
			if err != nil {
				return nil, Usagef("--storage: %v", err)
			}
			if err := json.Unmarshal(b, ps); err != nil {
				return nil, Usagef("--storage: %s is not a storage snapshot: %v", storageFile, err)
			}
		}
		for _, n := range st.Namespaces {
			if ps.Namespaces[n.ID] == nil {
				ps.Namespaces[n.ID] = []sandbox.Item{}
			}
		}
		j.Request.PluginStorage = ps
	}
	if c.Module != "" {
		j.wasm = files[c.Module]
	}
	return j, nil
}

// runLocal compiles and runs the job and prints what it gave.
func runLocal(ctx context.Context, engine *sandbox.Engine, j *local, out IO) error {
	if j.wasm != nil {
		mod, err := engine.Compile(ctx, j.wasm)
		if err != nil {
			return printRunError(out.Stdout, models.CapabilityFailed(models.ReasonNoModule, "module %s: %v", j.Capability.Module, err))
		}
		defer engine.Release(mod)
		j.Module = mod
	}
	res, rep, err := engine.Run(ctx, j.Job)
	if len(rep.Stderr) > 0 {
		out.Stderr.Write(rep.Stderr)
		if rep.Stderr[len(rep.Stderr)-1] != '\n' {
			io.WriteString(out.Stderr, "\n")
		}
	}
	if err != nil {
		return printRunError(out.Stdout, err)
	}
	// Notifications are checked as the server checks them.
	if _, err := notify.Parse(j.manifest, j.Capability, res.Notifications); err != nil {
		return printRunError(out.Stdout, err)
	}
	// Shown as the module returned them, not applied.
	whole := res.ExtensionResult
	if res.HostActions != nil || res.Notifications != nil {
		var data map[string]json.RawMessage
		json.Unmarshal(whole.Data, &data)
		if res.HostActions != nil {
			data["host_actions"] = res.HostActions
		}
		if res.Notifications != nil {
			data["notifications"] = res.Notifications
		}
		whole.Data, _ = json.Marshal(data)
	}
	enc := json.NewEncoder(out.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(whole)
}

// printRunError prints a failed run as {"error": {...}} and returns exit 1.
func printRunError(w io.Writer, err error) error {
	var e *models.Error
	if !errors.As(err, &e) {
		return err
	}
	body := e.Extensions()
	body["message"] = e.Message
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"error": body}); err != nil {
		return err
	}
	return Exit(1)
}
