//go:generate go tool gqlgen generate

// Command pluginhost hosts signed plugins: it serves the GraphQL, websocket and
// REST API over each plugin Instance's persistent storage, and builds, signs,
// validates and previews plugins.
//
// This file only parses the command line and wires the packages together.
package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pluginhost/aitools"
	"pluginhost/auth"
	"pluginhost/bundle"
	"pluginhost/changes"
	"pluginhost/database"
	"pluginhost/httpapi"
	"pluginhost/imageproxy"
	"pluginhost/lifecycle"
	"pluginhost/live"
	"pluginhost/migrations"
	"pluginhost/models"
	"pluginhost/preview"
	"pluginhost/relay"
	"pluginhost/resolvers"
	"pluginhost/secret"
	"pluginhost/storage"
	"pluginhost/validator"
)

const usage = `pluginhost hosts signed plugins.

Usage:
  pluginhost serve [--addr A] [--db DSN] [--data-dir DIR] [--redis URL] [--trusted-keys DIR] [--playground=false]
  pluginhost token create --user NAME [--admin] [--db DSN]
  pluginhost keygen --out PREFIX
  pluginhost package --dir DIR --key PREFIX.key --out FILE
  pluginhost validate PATH [--json]
  pluginhost preview (--dir DIR --extension ID | --config FILE [--manifest FILE]) [--fixtures FILE] --out FILE.html

Every flag has an environment twin: --addr PLUGINHOST_ADDR, --db PLUGINHOST_DB,
--data-dir PLUGINHOST_DATA_DIR, --redis PLUGINHOST_REDIS, --trusted-keys
PLUGINHOST_TRUSTED_KEYS, --log-level PLUGINHOST_LOG_LEVEL. The server's secret key
is generated into the data folder, or taken from PLUGINHOST_SECRET_KEY.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		smallStacks()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// smallStacks restarts the server once with GODEBUG=adaptivestackstart=0,
// unless GODEBUG already sets it. Go starts new goroutines with a stack sized
// to the average in use; for a server holding thousands of idle websocket
// subscribers, whose goroutines need 2 to 4 KiB, that start of 8 KiB never
// shrinks back, and costs several KiB per subscriber. The setting can only be
// given through GODEBUG, before the runtime starts.
func smallStacks() {
	if runtime.GOOS != "linux" || strings.Contains(os.Getenv("GODEBUG"), "adaptivestackstart") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	godebug := "adaptivestackstart=0"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	env := append(os.Environ(), "GODEBUG="+godebug)
	syscall.Exec(exe, os.Args, env) // returns only on failure: then run as is
}

// run executes one command and returns the process exit code: 0 success,
// 1 failure (an invalid plugin for validate), 2 usage or I/O error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stderr)
	case "token":
		err = tokenCmd(args[1:], stdout, stderr)
	case "keygen":
		err = keygen(args[1:], stdout)
	case "package":
		err = packageCmd(args[1:], stdout)
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "preview":
		return previewCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "pluginhost: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		var ue usageError
		fmt.Fprintf(stderr, "pluginhost %s: %v\n", args[0], err)
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

type usageError struct{ error }

func envInt(name string, def int) int {
	if v, ok := os.LookupEnv(name); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// tuneRuntime sets the garbage collector's pacing for a server: unless GOGC
// is set, the heap may grow to three times the live data between collections
// (GOGC=200), which halves collections for a modest amount of memory.
func tuneRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
}

// app is the wired server.
type app struct {
	db      *database.DB
	store   *storage.Service
	hub     *live.Hub
	sockets *httpapi.Sockets
	relay   *relay.Relay
	handler http.Handler
}

type config struct {
	dsn            string
	dataDir        string
	trustedKeys    string
	playground     bool
	maxSubsPerConn int
	maxSubsPerUser int
	wsInitTimeout  time.Duration
	redis          string
}

// newApp opens the store, applies migrations and wires every service.
func newApp(ctx context.Context, cfg config, log *slog.Logger) (*app, error) {
	trusted := map[string]ed25519.PublicKey{}
	if cfg.trustedKeys != "" {
		var err error
		if trusted, err = bundle.LoadTrustedDir(cfg.trustedKeys); err != nil {
			return nil, err
		}
		log.Info("trusted publisher keys loaded", "dir", cfg.trustedKeys, "keys", len(trusted))
	}
	db, err := database.Open(cfg.dsn)
	if err != nil {
		return nil, err
	}
	if err := migrations.Apply(ctx, db, log); err != nil {
		db.Close()
		return nil, err
	}
	key, err := secret.Load("PLUGINHOST_SECRET_KEY", cfg.dataDir, "secret.key")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("server secret: %w", err)
	}
	handles, err := aitools.NewHandles(key)
	if err != nil {
		db.Close()
		return nil, err
	}
	bus := changes.NewBus()
	var rl *relay.Relay
	authSvc := &auth.Service{DB: db}
	store := &storage.Service{DB: db, Bus: bus, Log: log}
	if db.Dialect == database.SQLite {
		store.StartBatching()
	}
	if cfg.redis != "" {
		if rl, err = relay.Start(cfg.redis, bus, store, log); err != nil {
			store.Close()
			db.Close()
			return nil, err
		}
		log.Info("change events cross replicas through Redis", "redis", cfg.redis)
	}
	life := &lifecycle.Service{DB: db, Bus: bus, Storage: store, Log: log, TrustedKeys: trusted}
	ai := &aitools.Service{DB: db, Storage: store, Handles: handles}
	hub := &live.Hub{Bus: bus, Storage: store, MaxPerConnection: cfg.maxSubsPerConn, MaxPerUser: cfg.maxSubsPerUser, Log: log}
	sockets := httpapi.NewSockets(authSvc, log)
	if cfg.wsInitTimeout > 0 {
		sockets.InitTimeout = cfg.wsInitTimeout
	}
	gql := httpapi.NewGraphQL(&resolvers.Resolver{Auth: authSvc, Lifecycle: life, Storage: store, AI: ai, Live: hub, Log: log}, log, sockets.Transport())
	srv := &httpapi.Server{
		Auth: authSvc, Storage: store, Sockets: sockets, DB: db, GraphQL: gql, Playground: cfg.playground,
		Lifecycle: life, ImageProxy: &imageproxy.Proxy{Logger: log}, Metrics: httpapi.NewMetrics(), Log: log,
	}
	return &app{db: db, store: store, hub: hub, sockets: sockets, relay: rl, handler: srv.Handler()}, nil
}

// close ends subscriptions (they get a shutdown error), closes every
// websocket, stops the write path and closes the store.
func (a *app) close() {
	begun := time.Now()
	a.hub.Close()
	a.sockets.Shutdown(begun)
	if a.relay != nil {
		a.relay.Close()
	}
	a.store.Close()
	a.db.Close()
}

func serve(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", env("PLUGINHOST_ADDR", "127.0.0.1:8080"), "listen address")
	dsn := fs.String("db", env("PLUGINHOST_DB", database.DefaultDSN), "database")
	dataDir := fs.String("data-dir", env("PLUGINHOST_DATA_DIR", "./data"), "folder of the server's generated secrets")
	redis := fs.String("redis", env("PLUGINHOST_REDIS", ""), "Redis URL for change events across replicas")
	trustedKeys := fs.String("trusted-keys", env("PLUGINHOST_TRUSTED_KEYS", ""), "folder of trusted *.pub publisher keys")
	play := fs.Bool("playground", env("PLUGINHOST_PLAYGROUND", "true") == "true", "serve GraphiQL at /playground for admins")
	level := fs.String("log-level", env("PLUGINHOST_LOG_LEVEL", "info"), "debug, info, warn or error")
	perConn := fs.Int("max-subscriptions-per-connection", envInt("PLUGINHOST_MAX_SUBSCRIPTIONS_PER_CONNECTION", live.DefaultMaxPerConnection), "open subscriptions one websocket may hold")
	initTimeout := fs.Duration("ws-init-timeout", httpapi.DefaultInitTimeout, "how long a websocket client has to send connection_init")
	perUser := fs.Int("max-subscriptions-per-user", envInt("PLUGINHOST_MAX_SUBSCRIPTIONS_PER_USER", live.DefaultMaxPerUser), "open subscriptions one user may hold")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, *level)
	if err != nil {
		return err
	}
	tuneRuntime()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := newApp(ctx, config{dsn: *dsn, dataDir: *dataDir, trustedKeys: *trustedKeys, playground: *play,
		maxSubsPerConn: *perConn, maxSubsPerUser: *perUser, wsInitTimeout: *initTimeout, redis: *redis}, log)
	if err != nil {
		return err
	}
	defer a.close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: a.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	log.Info("pluginhost serving", "addr", ln.Addr().String(), "db", database.Redact(*dsn), "graphql", "http://"+ln.Addr().String()+"/graphql")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "subscriptions", a.hub.Open(), "websockets", a.sockets.Connections())
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hs.SetKeepAlivesEnabled(false)
	err = hs.Shutdown(sctx)
	log.Info("stopped")
	return err
}

func tokenCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{errors.New("usage: pluginhost token create --user NAME [--admin] [--db DSN]")}
	}
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	user := fs.String("user", "", "user name")
	admin := fs.Bool("admin", false, "make the user an admin")
	dsn := fs.String("db", env("PLUGINHOST_DB", database.DefaultDSN), "database")
	if _, err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *user == "" {
		return usageError{errors.New("--user is required")}
	}
	ctx := context.Background()
	db, err := database.Open(*dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrations.Apply(ctx, db, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	token, u, err := (&auth.Service{DB: db}).CreateToken(ctx, *user, *admin)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, token)
	fmt.Fprintf(stderr, "token created for user %s (%s, admin: %t); it is shown only once\n", u.Name, u.ID, u.Admin)
	return nil
}

func keygen(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	out := fs.String("out", "", "path prefix of the key pair")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError{errors.New("--out PREFIX is required")}
	}
	pub, err := bundle.GenerateKey(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s.key (private, keep it secret) and %s.pub (key id %s)\n", *out, *out, bundle.KeyID(pub))
	return nil
}

func packageCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("package", flag.ContinueOnError)
	dir := fs.String("dir", "", "plugin source folder")
	keyPath := fs.String("key", "", "publisher private key (PREFIX.key)")
	out := fs.String("out", "", "package file to write")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" || *keyPath == "" || *out == "" {
		return usageError{errors.New("usage: pluginhost package --dir DIR --key PREFIX.key --out FILE")}
	}
	files, err := bundle.ReadDir(*dir)
	if err != nil {
		return err
	}
	m, report := validator.CheckPlugin(files)
	if !report.Valid {
		writeReport(stdout, report)
		return fmt.Errorf("%s is not a valid plugin (%d errors); nothing was packaged", *dir, len(report.Errors))
	}
	key, err := bundle.LoadPrivateKey(*keyPath)
	if err != nil {
		return err
	}
	pkg, err := bundle.Build(files, key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, pkg, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "packaged %s %s (%d files, %d bytes) signed by key %s into %s\n",
		m.ID, m.Version, len(files), len(pkg), bundle.KeyID(key.Public().(ed25519.PublicKey)), *out)
	return nil
}

// validate checks a plugin folder, a package file, a manifest.json or one UI
// config. Exit 0 valid, 1 invalid, 2 usage or I/O error.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = errors.New("usage: pluginhost validate PATH [--json]")
	}
	if err != nil {
		fmt.Fprintf(stderr, "pluginhost validate: %v\n", err)
		return 2
	}
	report, err := validatePath(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "pluginhost validate: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(report)
	} else {
		writeReport(stdout, report)
	}
	if !report.Valid {
		return 1
	}
	return 0
}

// previewCmd renders a plugin folder's extension, or one UI config, into one
// standalone HTML file. Exit 0 written, 1 invalid config or fixtures (the
// problems are printed), 2 usage or I/O error.
func previewCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	dir := fs.String("dir", "", "plugin source folder")
	ext := fs.String("extension", "", "id of the extension whose screen opens first")
	config := fs.String("config", "", "one UI config (instead of --dir)")
	manifest := fs.String("manifest", "", "manifest to check --config against (default: ../manifest.json of a config in ui/)")
	fixtures := fs.String("fixtures", "", "fixtures file: canned capability results, storage, context")
	out := fs.String("out", "", "HTML file to write")
	pos, err := parse(fs, args)
	if err == nil && (len(pos) != 0 || *out == "" || (*dir == "") == (*config == "") || (*dir != "" && *ext == "")) {
		err = errors.New("usage: pluginhost preview (--dir DIR --extension ID | --config FILE [--manifest FILE]) [--fixtures FILE] --out FILE.html")
	}
	if err != nil {
		fmt.Fprintf(stderr, "pluginhost preview: %v\n", err)
		return 2
	}
	opts, err := previewOptions(*dir, *ext, *config, *manifest, *fixtures)
	if err != nil {
		fmt.Fprintf(stderr, "pluginhost preview: %v\n", err)
		return 2
	}
	html, report, err := preview.Render(opts)
	var fe *preview.FixturesError
	switch {
	case errors.Is(err, preview.ErrInvalid):
		writeReport(stdout, report)
		fmt.Fprintf(stderr, "pluginhost preview: %v\n", err)
		return 1
	case errors.As(err, &fe):
		fmt.Fprintf(stderr, "pluginhost preview: %s: %v\n", *fixtures, err)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "pluginhost preview: %v\n", err)
		return 2
	}
	if err := os.WriteFile(*out, html, 0o644); err != nil {
		fmt.Fprintf(stderr, "pluginhost preview: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes, %d warnings)\n", *out, len(html), len(report.Warnings))
	return 0
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
					if e.Config == "ui/"+filepath.Base(config) || (e.Config == "" && filepath.Base(config) == e.ID+".json") {
						dir, ext = root, e.ID
					}
				}
			}
		}
	}
	if dir != "" {
		opts.Files, err = bundle.ReadDir(dir)
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

func validatePath(path string) (*validator.Report, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		files, err := bundle.ReadDir(path)
		if err != nil {
			return nil, err
		}
		_, r := validator.CheckPlugin(files)
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
	if raw, err := os.ReadFile(filepath.Join(dir, "..", "manifest.json")); err == nil && filepath.Base(dir) == "ui" {
		m = validator.ParseManifest(raw)
		for _, e := range m.Extensions {
			if e.Config == "ui/"+filepath.Base(path) {
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

func writeReport(w io.Writer, r *validator.Report) {
	for _, p := range r.Errors {
		fmt.Fprintf(w, "error   %s%s [%s] %s\n", fileOf(p.File), pointer(p.Path), p.Code, p.Message)
	}
	for _, p := range r.Warnings {
		fmt.Fprintf(w, "warning %s%s [%s] %s\n", fileOf(p.File), pointer(p.Path), p.Code, p.Message)
	}
	if r.Valid {
		fmt.Fprintf(w, "valid (%d warnings)\n", len(r.Warnings))
	} else {
		fmt.Fprintf(w, "invalid: %d errors, %d warnings\n", len(r.Errors), len(r.Warnings))
	}
}

func fileOf(f string) string {
	if f == "" {
		return ""
	}
	return f + " "
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
