//go:generate go tool gqlgen generate
//go:generate go run ./cmd/graphqlschema -out docs/schema.graphql

// Command pluginhost hosts signed plugins: it serves the GraphQL, websocket and
// REST API over each plugin Instance's persistent storage, and builds, signs,
// validates and previews plugins.
//
// This file holds main and the flags of serve, which it reads into a
// server.Config and hands to package server, where the host is wired; the
// other commands are in package cli.
package main

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"pluginhost/auth"
	"pluginhost/cli"
	"pluginhost/egress"
	"pluginhost/gqlhttp"
	"pluginhost/live"
	"pluginhost/server"
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
	// The variable is replaced, not added: a process reads the first of
	// two, and would start again forever.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	env = append(env, "GODEBUG="+godebug)
	syscall.Exec(exe, os.Args, env) // returns only on failure: then run as is
}

// newLogger logs at level and above, as logfmt text or as one JSON object a
// line (format "json"), to out.
func newLogger(out *logOutput, level, format string) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(level)) // the flag allows only valid levels
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewTextHandler(out, opts)
	if format == "json" {
		h = slog.NewJSONHandler(out, opts)
	}
	return slog.New(logHandler{h, out})
}

// tuneRuntime sets the garbage collector's pacing for a server, unless GOGC
// is set: the heap may grow to three times the live data between
// collections (GOGC=200), and to at least heapFloor. A server whose live
// data is a few MiB would otherwise collect every few hundred requests; one
// with hundreds of MiB live (thousands of subscribers) is paced by GOGC=200
// alone, so the floor costs it nothing.
func tuneRuntime() {
	if os.Getenv("GOGC") != "" {
		return
	}
	floorOnce.Do(func() {
		debug.SetGCPercent(gcPercent)
		floorPercent.Store(gcPercent)
		keepHeapFloor(new(floorMark))
	})
}

// The collector's pacing of tuneRuntime.
const (
	gcPercent = 200
	heapFloor = 64 << 20 // the least heap goal, in bytes
)

var floorOnce sync.Once

// floorMark is an object nothing keeps: its finalizer runs after each
// collection that finds it unreachable, that is after every cycle.
type floorMark struct{ _ *byte } // a pointer: never a tiny allocation, which finalizes late

// keepHeapFloor sets, after each collection, the GC percentage that makes
// the next heap goal about heapFloor, never below gcPercent; then arms
// itself for the next collection. The goal is the live heap plus the
// percentage of what the collector scans (heap, stacks and globals), which
// the goal the runtime computed with the percentage in force gives.
func keepHeapFloor(m *floorMark) {
	runtime.SetFinalizer(m, func(*floorMark) {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
		metrics.Read(sample)
		pct := gcPercent
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[1].Value.Kind() == metrics.KindUint64 {
			live, goal := sample[0].Value.Uint64(), sample[1].Value.Uint64()
			if scanned := (goal - live) * 100 / uint64(floorPercent.Load()); goal > live && live < heapFloor && scanned > 0 {
				pct = max(pct, int((heapFloor-live)*100/scanned))
			}
		}
		floorPercent.Store(int64(pct))
		debug.SetGCPercent(pct)
		keepHeapFloor(new(floorMark))
	})
}

// floorPercent is the GC percentage keepHeapFloor set last.
var floorPercent atomic.Int64

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
			initTimeout := fs.Duration("ws-init-timeout", "PLUGINHOST_WS_INIT_TIMEOUT", gqlhttp.DefaultInitTimeout,
				100*time.Millisecond, 10*time.Minute, "how long a websocket client has to send connection_init")
			runLimits := cli.SandboxFlags(fs)
			compileCache := fs.String("compile-cache", "PLUGINHOST_COMPILE_CACHE", "",
				"folder of compiled capability modules (default: wazero-cache in --data-dir); replicas on one machine may share it")
			background := fs.Bool("background", "PLUGINHOST_BACKGROUND", true, "run scheduled background capabilities on this replica")
			grace := fs.Duration("shutdown-grace", "PLUGINHOST_SHUTDOWN_GRACE", server.DefaultShutdownGrace, 0, time.Hour,
				"on SIGTERM, how long requests under way may take to finish before they are cut")
			delay := fs.Duration("shutdown-delay", "PLUGINHOST_SHUTDOWN_DELAY", 0, 0, 10*time.Minute,
				"on SIGTERM, how long to keep accepting (/readyz answering 503) before closing the listener")
			limits := limitFlags(fs)
			allowPrivate := fs.String("egress-allow-private", "PLUGINHOST_EGRESS_ALLOW_PRIVATE", "",
				"CIDR ranges outside public unicast the image proxy and capability fetches may reach, comma-separated (such as 127.0.0.0/8,::1)")
			egressCA := fs.String("egress-ca", "PLUGINHOST_EGRESS_CA", "", "PEM file of extra certificate authorities the image proxy and capability fetches trust")
			publicURL := fs.String("public-url", "PLUGINHOST_PUBLIC_URL", "",
				"the server's address as browsers reach it (https://plugins.example.com), for OAuth and sign-in redirects; default: the address of each request")
			oidc := oidcFlags(fs)
			attempts := signInFlags(fs)
			proxies := fs.String("trusted-proxies", "PLUGINHOST_TRUSTED_PROXIES", "",
				"CIDR ranges of the proxies in front of the server, comma-separated: their X-Forwarded-For names the client whose sign-in attempts are counted")
			return func(ctx context.Context, out cli.IO, args []string) error {
				tuneRuntime()
				open, err := egress.ParsePrefixes(*allowPrivate)
				if err != nil {
					return cli.Usagef("--egress-allow-private: %v", err)
				}
				trusted, err := egress.ParsePrefixes(*proxies)
				if err != nil {
					return cli.Usagef("--trusted-proxies: %v", err)
				}
				if *publicURL != "" {
					if u, err := url.Parse(*publicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
						return cli.Usagef("--public-url: %q is not an http or https URL of the server (https://HOST[:PORT][/PATH])", *publicURL)
					}
				}
				idp, err := oidc()
				if err != nil {
					return err
				}
				ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
				logs := newLogOutput(out.Stderr)
				defer logs.Flush()
				s, err := server.New(ctx, server.Config{
					DSN: *dsn, DataDir: *dataDir, TrustedKeysDir: *trustedKeys, Redis: *redis, Playground: *play,
					MaxSubscriptionsPerConnection: *perConn, MaxSubscriptionsPerUser: *perUser, WebsocketInitTimeout: *initTimeout,
					Limits: limits(), RunLimits: runLimits(), CompileCache: *compileCache, Background: *background, Revision: cli.Revision(),
					EgressAllowPrivate: open, EgressCA: *egressCA, PublicURL: *publicURL,
					OIDC: idp, SignInAttempts: attempts(), TrustedProxies: trusted,
				}, newLogger(logs, *level, *format))
				if err != nil {
					return err
				}
				// A second signal, once the first has begun the drain, ends
				// the process at once.
				go func() { <-ctx.Done(); stop() }()
				return s.Serve(ctx, *addr, *dsn, server.Shutdown{Delay: *delay, Grace: *grace})
			}
		},
	}
}

// oidcFlags defines the flags of the operator's identity provider; the
// function returned reads and checks them after parsing.
func oidcFlags(fs *cli.FlagSet) func() (server.OIDC, error) {
	issuer := fs.String("oidc-issuer", "PLUGINHOST_OIDC_ISSUER", "",
		"OpenID Connect issuer whose JWTs are accepted as bearer tokens (https://id.example.com/realms/main; http only on loopback)")
	audience := fs.String("oidc-audience", "PLUGINHOST_OIDC_AUDIENCE", "",
		"audiences accepted in the issuer's tokens (aud), comma-separated; needed with --oidc-issuer")
	admin := fs.String("oidc-admin-claim", "PLUGINHOST_OIDC_ADMIN_CLAIM", "",
		"NAME=VALUE: users whose claim NAME equals or contains VALUE are admins, decided on every token (groups=pluginhost-admins)")
	clientID := fs.String("oidc-client-id", "PLUGINHOST_OIDC_CLIENT_ID", "",
		"client id at the issuer: the web host's sign-in page offers signing in with it (redirect URI: PUBLIC_URL/app/oidc/callback)")
	clientSecret := fs.String("oidc-client-secret", "PLUGINHOST_OIDC_CLIENT_SECRET", "",
		"the client's secret (better given in the environment); none: a public client (PKCE alone)")
	name := fs.String("oidc-name", "PLUGINHOST_OIDC_NAME", "", `what the sign-in button calls the provider ("Sign in with NAME"); default: the issuer's host`)
	scopes := fs.String("oidc-scopes", "PLUGINHOST_OIDC_SCOPES", strings.Join(auth.DefaultScopes, " "),
		"scopes the web host's sign-in asks for, space-separated (add groups for Dex)")
	refetch := fs.Duration("oidc-keys-refetch", "PLUGINHOST_OIDC_KEYS_REFETCH", auth.DefaultRefetchInterval, time.Second, time.Hour,
		"least time between two fetches of the issuer's keys for tokens that name an unknown key")
	sessionTTL := fs.Duration("oidc-session-ttl", "PLUGINHOST_OIDC_SESSION_TTL", auth.DefaultIssuerSessionTTL, time.Minute, 30*24*time.Hour,
		"how long a web host sign-in with the identity provider lasts (its claims, admin included, are read when it begins)")
	return func() (server.OIDC, error) {
		c := server.OIDC{Issuer: strings.TrimSpace(*issuer), ClientID: *clientID, ClientSecret: *clientSecret, Name: *name,
			Scopes: strings.Fields(*scopes), KeysRefetch: *refetch, SessionTTL: *sessionTTL}
		for a := range strings.SplitSeq(*audience, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.Audiences = append(c.Audiences, a)
			}
		}
		if *admin != "" {
			n, v, ok := strings.Cut(*admin, "=")
			if !ok || strings.TrimSpace(n) == "" || v == "" {
				return c, cli.Usagef("--oidc-admin-claim: %q is not NAME=VALUE (groups=pluginhost-admins)", *admin)
			}
			c.AdminClaim, c.AdminValue = strings.TrimSpace(n), v
		}
		switch {
		case c.Issuer == "" && (len(c.Audiences) > 0 || c.AdminClaim != "" || c.ClientID != ""):
			return c, cli.Usagef("--oidc-audience, --oidc-admin-claim and --oidc-client-id need --oidc-issuer")
		case c.Issuer == "":
			return c, nil
		case len(c.Audiences) == 0:
			return c, cli.Usagef("--oidc-issuer needs --oidc-audience: the audiences (aud) its tokens must name")
		case c.ClientSecret != "" && c.ClientID == "":
			return c, cli.Usagef("--oidc-client-secret needs --oidc-client-id")
		case c.ClientID != "" && !slices.Contains(c.Scopes, "openid"):
			return c, cli.Usagef("--oidc-scopes must hold openid")
		}
		if err := auth.CheckIssuerURL(c.Issuer); err != nil {
			return c, cli.Usagef("--oidc-issuer: %v", err)
		}
		return c, nil
	}
}

// signInFlags defines the bounds of failed sign-in attempts.
func signInFlags(fs *cli.FlagSet) func() server.SignInAttempts {
	perAddress := fs.Int("signin-attempts-per-address", "PLUGINHOST_SIGNIN_ATTEMPTS_PER_ADDRESS", auth.DefaultAttemptsPerAddress, 1, 1000000,
		"failed sign-in attempts one client address may make in a window; past them it is refused (429) until the window ends")
	overall := fs.Int("signin-attempts", "PLUGINHOST_SIGNIN_ATTEMPTS", auth.DefaultAttemptsOverall, 1, 100000000,
		"failed sign-in attempts all clients together may make in a window; past them, credentials not already known are refused (429) until it ends")
	window := fs.Duration("signin-window", "PLUGINHOST_SIGNIN_WINDOW", auth.DefaultAttemptsWindow, time.Second, 24*time.Hour,
		"the window of the sign-in attempt bounds, from its first failure")
	return func() server.SignInAttempts {
		return server.SignInAttempts{PerAddress: *perAddress, Overall: *overall, Window: *window}
	}
}

// limitFlags defines the flags of the bounds on GraphQL requests and
// websockets (gqlhttp.Limits); the function returned reads them after parsing.
func limitFlags(fs *cli.FlagSet) func() gqlhttp.Limits {
	const maxInt = 1<<31 - 1
	bodyBytes := fs.Int("max-body-bytes", "PLUGINHOST_MAX_BODY_BYTES", gqlhttp.DefaultMaxBodyBytes, 1024, 1<<30,
		"largest GraphQL request body, in bytes (larger: 413)")
	bodyTimeout := fs.Duration("body-read-timeout", "PLUGINHOST_BODY_READ_TIMEOUT", gqlhttp.DefaultBodyReadTimeout,
		10*time.Millisecond, 10*time.Minute, "how long a client has to send a request body (slower: 408)")
	jsonDepth := fs.Int("max-json-depth", "PLUGINHOST_MAX_JSON_DEPTH", gqlhttp.DefaultMaxJSONDepth, 2, 10000,
		"deepest nesting of a request body's JSON")
	queryBytes := fs.Int("max-query-bytes", "PLUGINHOST_MAX_QUERY_BYTES", gqlhttp.DefaultMaxQueryBytes, 64, 1<<24,
		"longest GraphQL document, in bytes")
	queryTokens := fs.Int("max-query-tokens", "PLUGINHOST_MAX_QUERY_TOKENS", gqlhttp.DefaultMaxQueryTokens, 16, 1<<20,
		"most lexical tokens of a GraphQL document")
	queryFields := fs.Int("max-query-fields", "PLUGINHOST_MAX_QUERY_FIELDS", gqlhttp.DefaultMaxQueryFields, 1, 1<<20,
		"most fields an operation selects, fragments expanded")
	queryCost := fs.Int("max-query-cost", "PLUGINHOST_MAX_QUERY_COST", gqlhttp.DefaultMaxQueryCost, 1, maxInt,
		"highest cost of an operation (objects times list sizes, plus the weights of expensive fields)")
	responseBytes := fs.Int("max-response-bytes", "PLUGINHOST_MAX_RESPONSE_BYTES", gqlhttp.DefaultMaxResponseBytes, 1024, 1<<30,
		"most bytes of results one operation may produce")
	cacheBytes := fs.Int("query-cache-bytes", "PLUGINHOST_QUERY_CACHE_BYTES", gqlhttp.DefaultQueryCacheBytes, 1024, 1<<30,
		"memory of parsed GraphQL documents kept, in bytes")
	apqBytes := fs.Int("apq-cache-bytes", "PLUGINHOST_APQ_CACHE_BYTES", gqlhttp.DefaultAPQCacheBytes, 1024, 1<<30,
		"memory of automatic persisted queries kept, in bytes")
	inFlight := fs.Int("max-in-flight", "PLUGINHOST_MAX_IN_FLIGHT", gqlhttp.DefaultMaxInFlight, 1, 100000,
		"GraphQL HTTP requests served at once (more wait, then 503)")
	inFlightUser := fs.Int("max-in-flight-per-user", "PLUGINHOST_MAX_IN_FLIGHT_PER_USER", gqlhttp.DefaultMaxInFlightPerUser, 1, 100000,
		"GraphQL HTTP requests one user has served at once (more wait, then 429)")
	inFlightBytes := fs.Int("max-in-flight-body-bytes", "PLUGINHOST_MAX_IN_FLIGHT_BODY_BYTES", gqlhttp.DefaultMaxInFlightBodyBytes, 1024, maxInt,
		"request bodies held in memory at once, in bytes (at least --max-body-bytes)")
	wait := fs.Duration("in-flight-wait", "PLUGINHOST_IN_FLIGHT_WAIT", gqlhttp.DefaultInFlightWait, time.Millisecond, time.Minute,
		"how long a request waits for its turn under the in-flight bounds")
	work := fs.Int("max-user-work-rate", "PLUGINHOST_MAX_USER_WORK_RATE", gqlhttp.DefaultUserWorkPerSecond, 1, maxInt,
		"work one user may have done per second: 10 a request, 1 a KiB of body, plus each operation's cost (more wait, then 429)")
	sockets := fs.Int("max-websockets", "PLUGINHOST_MAX_WEBSOCKETS", gqlhttp.DefaultMaxWebsockets, 1, 10000000,
		"websockets open at once on this server (more: close 1013)")
	socketsUser := fs.Int("max-websockets-per-user", "PLUGINHOST_MAX_WEBSOCKETS_PER_USER", gqlhttp.DefaultMaxWebsocketsPerUser, 1, 1000000,
		"websockets one user holds open (more: close 1008)")
	return func() gqlhttp.Limits {
		return gqlhttp.Limits{
			MaxBodyBytes: int64(*bodyBytes), BodyReadTimeout: *bodyTimeout, MaxJSONDepth: *jsonDepth,
			MaxQueryBytes: *queryBytes, MaxQueryTokens: *queryTokens, MaxQueryFields: *queryFields, MaxQueryCost: *queryCost,
			MaxResponseBytes: int64(*responseBytes), QueryCacheBytes: int64(*cacheBytes), APQCacheBytes: int64(*apqBytes),
			MaxInFlight: *inFlight, MaxInFlightPerUser: *inFlightUser, MaxInFlightBodyBytes: int64(*inFlightBytes), InFlightWait: *wait, UserWorkPerSecond: *work,
			MaxWebsockets: *sockets, MaxWebsocketsPerUser: *socketsUser,
		}
	}
}
