//go:generate go tool gqlgen generate

// Command pluginhost hosts signed plugins: it serves the GraphQL, websocket and
// REST API over each plugin Instance's persistent storage, and builds, signs,
// validates and previews plugins.
//
// This file holds main and the wiring of serve; the other commands are in
// package cli.
package main

import (
	"context"
	"crypto/ed25519"
	"database/sql"
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
	"strings"
	"syscall"
	"time"

	"pluginhost/aitools"
	"pluginhost/auth"
	"pluginhost/bundle"
	"pluginhost/capability"
	"pluginhost/changes"
	"pluginhost/cli"
	"pluginhost/database"
	"pluginhost/extensions"
	"pluginhost/httpapi"
	"pluginhost/imageproxy"
	"pluginhost/lifecycle"
	"pluginhost/live"
	"pluginhost/metrics"
	"pluginhost/migrations"
	"pluginhost/models"
	"pluginhost/relay"
	"pluginhost/resolvers"
	"pluginhost/sandbox"
	"pluginhost/schedule"
	"pluginhost/secret"
	"pluginhost/storage"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		smallStacks()
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, serveCommand()))
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

// newLogger logs at level and above, as logfmt text or as one JSON object a
// line (format "json").
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(level)) // the flag allows only valid levels
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
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
	engine  *sandbox.Engine
	sched   *schedule.Scheduler
	db      *database.DB
	store   *storage.Service
	hub     *live.Hub
	sockets *httpapi.Sockets
	relay   *relay.Relay
	drain   *httpapi.Drain
	stop    context.CancelFunc // stops the watch of revoked tokens
	limiter *httpapi.Limiter
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
	runLimits      sandbox.Limits
	compileCache   string
	background     bool
	shutdownGrace  time.Duration
	shutdownDelay  time.Duration
	limits         httpapi.Limits
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
	responseHandles, err := aitools.NewHandles(extensions.HandleKey(key))
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
		log.Info("change events cross replicas through Redis", "redis", relay.Redact(cfg.redis))
	}
	// Plugin capabilities: compiled once into the data folder's cache, run in
	// the sandbox, on demand and on their schedules.
	cache := cfg.compileCache
	if cache == "" {
		cache = filepath.Join(cfg.dataDir, "wazero-cache")
	}
	engine, err := sandbox.New(ctx, cache, cfg.runLimits)
	if err != nil {
		if rl != nil {
			rl.Close()
		}
		store.Close()
		db.Close()
		return nil, err
	}
	runs := &capability.Service{DB: db, Storage: store, Engine: engine, Log: log}
	life := &lifecycle.Service{DB: db, Bus: bus, Storage: store, Log: log, TrustedKeys: trusted, Modules: runs}
	ai := &aitools.Service{DB: db, Storage: store, Handles: handles}
	ext := &extensions.Service{DB: db, Handles: responseHandles}
	hub := &live.Hub{Bus: bus, Storage: store, MaxPerConnection: cfg.maxSubsPerConn, MaxPerUser: cfg.maxSubsPerUser, Log: log}
	limiter := httpapi.NewLimiter(cfg.limits)
	sockets := httpapi.NewSockets(authSvc, log)
	sockets.Limiter = limiter
	if cfg.wsInitTimeout > 0 {
		sockets.InitTimeout = cfg.wsInitTimeout
	}
	ai.Capabilities = runs
	sched := &schedule.Scheduler{DB: db, Runner: runs, Log: log}
	gql := httpapi.NewGraphQL(&resolvers.Resolver{Auth: authSvc, Lifecycle: life, Storage: store, AI: ai, UI: ext, Live: hub, Log: log,
		Capabilities: runs, Schedule: sched}, log, limiter, sockets.Transport())
	m := httpapi.NewMetrics()
	writePool, _ := db.Write.DB()
	readPool, _ := db.Read.DB()
	if err := metrics.Register(m.Registry, metrics.Sources{
		WebsocketConnections: sockets.Connections, Subscriptions: hub.Open,
		RunMemory: engine.MemoryInUse, CompiledModules: func() int { return engine.Stats().Compiled },
		DBPools: map[string]*sql.DB{"write": writePool, "read": readPool},
		Version: models.HostVersion, Revision: cli.Revision(),
	}); err != nil {
		if rl != nil {
			rl.Close()
		}
		engine.Close(ctx)
		store.Close()
		db.Close()
		return nil, err
	}
	srv := &httpapi.Server{
		Auth: authSvc, Storage: store, Sockets: sockets, DB: db, GraphQL: gql, Playground: cfg.playground, Limiter: limiter,
		Lifecycle: life, ImageProxy: &imageproxy.Proxy{Logger: log}, Metrics: m, Log: log,
	}
	if cfg.background {
		sched.Start(ctx)
	}
	// A token revoked anywhere, or expired, ends its websockets here.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	go authSvc.WatchRevocations(watchCtx, log, sockets.CloseToken)
	drain := &httpapi.Drain{}
	return &app{stop: stopWatch, engine: engine, sched: sched, db: db, store: store, hub: hub, sockets: sockets, relay: rl, drain: drain, limiter: limiter,
		handler: httpapi.AccessLog(log, drain.Handler(srv.Handler()))}, nil
}

// close closes every websocket (going away), ends what subscriptions remain,
// stops the write path and closes the store.
func (a *app) close() {
	a.stop()
	a.sockets.Shutdown()
	a.hub.Close()
	a.sched.Close()
	if a.relay != nil {
		a.relay.Close()
	}
	a.store.Close()
	a.engine.Close(context.Background())
	a.db.Close()
}

// serveCommand is `pluginhost serve`: its flags, then the server's life from
// start to a clean shutdown on SIGINT or SIGTERM.
func serveCommand() cli.Command {
	return cli.Command{
		Name:    "serve",
		Summary: "start the HTTP server: GraphQL, websocket subscriptions, REST, playground, dashboard",
		Detail: "The server's secret key is generated into --data-dir (mode 0600) on first start,\n" +
			"or taken from PLUGINHOST_SECRET_KEY (base64 of 32 bytes; replicas must share it).",
		Setup: func(fs *cli.FlagSet) cli.Runner {
			addr := fs.String("addr", "PLUGINHOST_ADDR", "127.0.0.1:8080", "listen address")
			dsn := cli.DBFlag(fs)
			dataDir := fs.String("data-dir", "PLUGINHOST_DATA_DIR", "./data", "folder of the server's generated secrets")
			redis := fs.String("redis", "PLUGINHOST_REDIS", "", "Redis URL (redis://HOST:PORT/N) for change events across replicas")
			trustedKeys := fs.String("trusted-keys", "PLUGINHOST_TRUSTED_KEYS", "", "folder of trusted *.pub publisher keys")
			play := fs.Bool("playground", "PLUGINHOST_PLAYGROUND", true, "serve GraphiQL at /playground for admins")
			level := fs.Enum("log-level", "PLUGINHOST_LOG_LEVEL", "info", "least severe level logged", "debug", "info", "warn", "error")
			format := fs.Enum("log-format", "PLUGINHOST_LOG_FORMAT", "text", "log line format: logfmt text or one JSON object a line", "text", "json")
			perConn := fs.Int("max-subscriptions-per-connection", "PLUGINHOST_MAX_SUBSCRIPTIONS_PER_CONNECTION",
				live.DefaultMaxPerConnection, 1, 100000, "open subscriptions one websocket may hold")
			perUser := fs.Int("max-subscriptions-per-user", "PLUGINHOST_MAX_SUBSCRIPTIONS_PER_USER",
				live.DefaultMaxPerUser, 1, 1000000, "open subscriptions one user may hold")
			initTimeout := fs.Duration("ws-init-timeout", "PLUGINHOST_WS_INIT_TIMEOUT", httpapi.DefaultInitTimeout,
				100*time.Millisecond, 10*time.Minute, "how long a websocket client has to send connection_init")
			runLimits := cli.SandboxFlags(fs)
			compileCache := fs.String("compile-cache", "PLUGINHOST_COMPILE_CACHE", "",
				"folder of compiled capability modules (default: wazero-cache in --data-dir); replicas on one machine may share it")
			background := fs.Bool("background", "PLUGINHOST_BACKGROUND", true, "run scheduled background capabilities on this replica")
			grace := fs.Duration("shutdown-grace", "PLUGINHOST_SHUTDOWN_GRACE", DefaultShutdownGrace, 0, time.Hour,
				"on SIGTERM, how long requests under way may take to finish before they are cut")
			delay := fs.Duration("shutdown-delay", "PLUGINHOST_SHUTDOWN_DELAY", 0, 0, 10*time.Minute,
				"on SIGTERM, how long to keep accepting (/readyz answering 503) before closing the listener")
			limits := limitFlags(fs)
			return func(ctx context.Context, out cli.IO, args []string) error {
				return serve(ctx, config{dsn: *dsn, dataDir: *dataDir, trustedKeys: *trustedKeys, playground: *play,
					maxSubsPerConn: *perConn, maxSubsPerUser: *perUser, wsInitTimeout: *initTimeout, redis: *redis,
					runLimits: runLimits(), compileCache: *compileCache, background: *background, shutdownGrace: *grace, shutdownDelay: *delay, limits: limits()},
					*addr, newLogger(out.Stderr, *level, *format))
			}
		},
	}
}

// limitFlags defines the flags of the bounds on GraphQL requests and
// websockets (httpapi.Limits); the function returned reads them after parsing.
func limitFlags(fs *cli.FlagSet) func() httpapi.Limits {
	const maxInt = 1<<31 - 1
	bodyBytes := fs.Int("max-body-bytes", "PLUGINHOST_MAX_BODY_BYTES", httpapi.DefaultMaxBodyBytes, 1024, 1<<30,
		"largest GraphQL request body, in bytes (larger: 413)")
	bodyTimeout := fs.Duration("body-read-timeout", "PLUGINHOST_BODY_READ_TIMEOUT", httpapi.DefaultBodyReadTimeout,
		10*time.Millisecond, 10*time.Minute, "how long a client has to send a request body (slower: 408)")
	jsonDepth := fs.Int("max-json-depth", "PLUGINHOST_MAX_JSON_DEPTH", httpapi.DefaultMaxJSONDepth, 2, 10000,
		"deepest nesting of a request body's JSON")
	queryBytes := fs.Int("max-query-bytes", "PLUGINHOST_MAX_QUERY_BYTES", httpapi.DefaultMaxQueryBytes, 64, 1<<24,
		"longest GraphQL document, in bytes")
	queryTokens := fs.Int("max-query-tokens", "PLUGINHOST_MAX_QUERY_TOKENS", httpapi.DefaultMaxQueryTokens, 16, 1<<20,
		"most lexical tokens of a GraphQL document")
	queryFields := fs.Int("max-query-fields", "PLUGINHOST_MAX_QUERY_FIELDS", httpapi.DefaultMaxQueryFields, 1, 1<<20,
		"most fields an operation selects, fragments expanded")
	queryCost := fs.Int("max-query-cost", "PLUGINHOST_MAX_QUERY_COST", httpapi.DefaultMaxQueryCost, 1, maxInt,
		"highest cost of an operation (objects times list sizes, plus the weights of expensive fields)")
	responseBytes := fs.Int("max-response-bytes", "PLUGINHOST_MAX_RESPONSE_BYTES", httpapi.DefaultMaxResponseBytes, 1024, 1<<30,
		"most bytes of results one operation may produce")
	cacheBytes := fs.Int("query-cache-bytes", "PLUGINHOST_QUERY_CACHE_BYTES", httpapi.DefaultQueryCacheBytes, 1024, 1<<30,
		"memory of parsed GraphQL documents kept, in bytes")
	apqBytes := fs.Int("apq-cache-bytes", "PLUGINHOST_APQ_CACHE_BYTES", httpapi.DefaultAPQCacheBytes, 1024, 1<<30,
		"memory of automatic persisted queries kept, in bytes")
	inFlight := fs.Int("max-in-flight", "PLUGINHOST_MAX_IN_FLIGHT", httpapi.DefaultMaxInFlight, 1, 100000,
		"GraphQL HTTP requests served at once (more wait, then 503)")
	inFlightUser := fs.Int("max-in-flight-per-user", "PLUGINHOST_MAX_IN_FLIGHT_PER_USER", httpapi.DefaultMaxInFlightPerUser, 1, 100000,
		"GraphQL HTTP requests one user has served at once (more wait, then 429)")
	inFlightBytes := fs.Int("max-in-flight-body-bytes", "PLUGINHOST_MAX_IN_FLIGHT_BODY_BYTES", httpapi.DefaultMaxInFlightBodyBytes, 1024, maxInt,
		"request bodies held in memory at once, in bytes (at least --max-body-bytes)")
	wait := fs.Duration("in-flight-wait", "PLUGINHOST_IN_FLIGHT_WAIT", httpapi.DefaultInFlightWait, time.Millisecond, time.Minute,
		"how long a request waits for its turn under the in-flight bounds")
	work := fs.Int("max-user-work-rate", "PLUGINHOST_MAX_USER_WORK_RATE", httpapi.DefaultUserWorkPerSecond, 1, maxInt,
		"work one user may have done per second: 10 a request, 1 a KiB of body, plus each operation's cost (more wait, then 429)")
	sockets := fs.Int("max-websockets", "PLUGINHOST_MAX_WEBSOCKETS", httpapi.DefaultMaxWebsockets, 1, 10000000,
		"websockets open at once on this server (more: close 1013)")
	socketsUser := fs.Int("max-websockets-per-user", "PLUGINHOST_MAX_WEBSOCKETS_PER_USER", httpapi.DefaultMaxWebsocketsPerUser, 1, 1000000,
		"websockets one user holds open (more: close 1008)")
	return func() httpapi.Limits {
		return httpapi.Limits{
			MaxBodyBytes: int64(*bodyBytes), BodyReadTimeout: *bodyTimeout, MaxJSONDepth: *jsonDepth,
			MaxQueryBytes: *queryBytes, MaxQueryTokens: *queryTokens, MaxQueryFields: *queryFields, MaxQueryCost: *queryCost,
			MaxResponseBytes: int64(*responseBytes), QueryCacheBytes: int64(*cacheBytes), APQCacheBytes: int64(*apqBytes),
			MaxInFlight: *inFlight, MaxInFlightPerUser: *inFlightUser, MaxInFlightBodyBytes: int64(*inFlightBytes), InFlightWait: *wait, UserWorkPerSecond: *work,
			MaxWebsockets: *sockets, MaxWebsocketsPerUser: *socketsUser,
		}
	}
}

// serve runs the server until SIGINT or SIGTERM, then shuts it down.
func serve(ctx context.Context, cfg config, addr string, log *slog.Logger) error {
	tuneRuntime()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: a.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	log.Info("pluginhost serving", "addr", ln.Addr().String(), "db", database.Redact(cfg.dsn), "graphql", "http://"+ln.Addr().String()+"/graphql")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal ends the process at once
	drain(a, hs, cfg, log)
	log.Info("stopped")
	return nil
}

// DefaultShutdownGrace is how long requests under way may take to finish
// after SIGTERM: as long as a GraphQL request may take.
const DefaultShutdownGrace = 30 * time.Second

// drain shuts the server down without cutting anyone off, in order:
//  1. /readyz answers 503 and every response says "Connection: close", so
//     that load balancers and clients move on (httpapi.Drain);
//  2. every websocket gets the protocol's "going away" close (1001), so that
//     subscribers reconnect to another replica and resubscribe;
//  3. for cfg.shutdownDelay the listener stays open: clients still sending
//     here are answered while the load balancer notices;
//  4. the listener closes and idle connections with it, and requests under
//     way get up to cfg.shutdownGrace to finish; then what remains is cut.
func drain(a *app, hs *http.Server, cfg config, log *slog.Logger) {
	log.Info("draining", "subscriptions", a.hub.Open(), "websockets", a.sockets.Connections(),
		"delay", cfg.shutdownDelay, "grace", cfg.shutdownGrace)
	a.drain.Start()
	a.sockets.Shutdown()
	a.hub.Close()
	time.Sleep(cfg.shutdownDelay)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		log.Warn("shutdown grace period over: cutting the requests still under way", "grace", cfg.shutdownGrace)
		hs.Close()
	}
}
