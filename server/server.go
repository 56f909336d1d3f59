// Package server wires the host, once: the database and its migrations, the
// services, the capability engine and the schedule, the GraphQL API and the
// HTTP surface. New builds it, each part given what it needs at
// construction, and Close takes it down in the reverse order. The command
// (`pluginhost serve`) and the in-process tests build it the same way.
package server

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"pluginhost/access"
	"pluginhost/aitools"
	"pluginhost/auth"
	"pluginhost/bundle"
	"pluginhost/capability"
	"pluginhost/changes"
	"pluginhost/connections"
	"pluginhost/database"
	"pluginhost/egress"
	"pluginhost/extensions"
	"pluginhost/gqlhttp"
	"pluginhost/httpapi"
	"pluginhost/imageproxy"
	"pluginhost/lifecycle"
	"pluginhost/live"
	"pluginhost/metrics"
	"pluginhost/migrations"
	"pluginhost/models"
	"pluginhost/netfetch"
	"pluginhost/notify"
	"pluginhost/relay"
	"pluginhost/resolvers"
	"pluginhost/sandbox"
	"pluginhost/schedule"
	"pluginhost/secret"
	"pluginhost/storage"
	"pluginhost/webhost"
)

// Config is what the server is built from; `pluginhost serve` reads it from
// its flags. Zero fields take their defaults.
type Config struct {
	// DSN is the database: sqlite:PATH or mysql://USER:PASS@tcp(HOST:PORT)/DB.
	DSN string
	// DataDir holds the generated secret key and, by default, the
	// compilation cache.
	DataDir string
	// TrustedKeysDir is a folder of trusted *.pub publisher keys; Trusted
	// adds keys by id (tests).
	TrustedKeysDir string
	Trusted        map[string]ed25519.PublicKey
	// Redis, when set, carries change events between replicas.
	Redis string
	// Playground serves GraphiQL at /playground for admins.
	Playground bool
	// MaxSubscriptionsPerConnection and MaxSubscriptionsPerUser bound open
	// subscriptions (live defaults when zero).
	MaxSubscriptionsPerConnection, MaxSubscriptionsPerUser int
	// WebsocketInitTimeout is how long a websocket client has to send
	// connection_init.
	WebsocketInitTimeout time.Duration
	// Limits bound GraphQL requests and websockets.
	Limits gqlhttp.Limits
	// RunLimits bound capability runs and compilations; CompileCache holds
	// compiled modules (DataDir/wazero-cache when empty).
	RunLimits    sandbox.Limits
	CompileCache string
	// Background runs scheduled background capabilities on this replica.
	Background bool
	// Revision names the build, for /metrics.
	Revision string
	// EgressAllowPrivate opens address ranges outside public unicast to the
	// image proxy and capability fetches (--egress-allow-private);
	// EgressCA is a PEM file of extra roots they trust (--egress-ca).
	EgressAllowPrivate []netip.Prefix
	EgressCA           string
	// PublicURL is the server's address as browsers reach it, for OAuth
	// redirects (--public-url); empty: the address each request came to.
	PublicURL string
	// OIDC is the operator's identity provider (--oidc-*); its zero value
	// is none.
	OIDC OIDC
	// SignInAttempts bound failed sign-in attempts (--signin-*): per client
	// address and overall in a window; zero fields take their defaults.
	SignInAttempts SignInAttempts
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client (--trusted-proxies).
	TrustedProxies []netip.Prefix
}

// SignInAttempts bound failed sign-in attempts (see auth.Attempts).
type SignInAttempts struct {
	PerAddress, Overall int
	Window              time.Duration
}

// OIDC configures the operator's OpenID Connect identity provider.
type OIDC struct {
	// Issuer and Audiences accept the issuer's JWTs (--oidc-issuer,
	// --oidc-audience); AdminClaim and AdminValue make admins
	// (--oidc-admin-claim NAME=VALUE).
	Issuer                 string
	Audiences              []string
	AdminClaim, AdminValue string
	// ClientID and ClientSecret (none: a public client) offer signing in
	// to the web host with the provider, named Name (default: the
	// issuer's host), asking for Scopes (default: openid profile email).
	ClientID, ClientSecret string
	Name                   string
	Scopes                 []string
	// KeysRefetch is the least time between two fetches of the keys for
	// unknown kids (default auth.DefaultRefetchInterval); SessionTTL
	// bounds a web host session signed in with the provider (default
	// auth.DefaultIssuerSessionTTL).
	KeysRefetch time.Duration
	SessionTTL  time.Duration
	// HTTP reaches the provider (tests); nil: a client with a 10 s timeout.
	HTTP *http.Client
}

// Server is the wired host. Its parts are exported for tests and for the
// command's shutdown; they are built by New and must not be replaced.
type Server struct {
	DB   *database.DB
	Bus  *changes.Bus
	Gate *access.Gate
	Auth *auth.Service
	// Authenticator authenticates every request; Issuer is the identity
	// provider's part of it (nil without --oidc-issuer).
	Authenticator *auth.Authenticator
	Issuer        *auth.Issuer
	Storage       *storage.Service
	Lifecycle     *lifecycle.Service
	AI            *aitools.Service
	UI            *extensions.Service
	Engine        *sandbox.Engine
	Runs          *capability.Service
	Connections   *connections.Service
	Fetch         *netfetch.Service
	Notify        *notify.Service
	Schedule      *schedule.Scheduler
	Hub           *live.Hub
	GraphQL       *gqlhttp.Server
	Relay         *relay.Relay // nil without Redis
	Drain         *httpapi.Drain
	// Handler serves every route, with the access log.
	Handler http.Handler
	Log     *slog.Logger

	closers   []func()
	closeOnce sync.Once
}

// New builds the server: it opens the database and applies the migrations,
// then wires every part. On an error, what was built is closed.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Server, err error) {
	s := &Server{Log: log}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	trusted := maps.Clone(cfg.Trusted)
	if cfg.TrustedKeysDir != "" {
		dir, err := bundle.LoadTrustedDir(cfg.TrustedKeysDir)
		if err != nil {
			return nil, err
		}
		log.Info("trusted publisher keys loaded", "dir", cfg.TrustedKeysDir, "keys", len(dir))
		if trusted == nil {
			trusted = map[string]ed25519.PublicKey{}
		}
		maps.Copy(trusted, dir)
	}

	// The database, migrated.
	if s.DB, err = database.Open(cfg.DSN); err != nil {
		return nil, err
	}
	s.onClose(func() { s.DB.Close() })
	if err := migrations.Apply(ctx, s.DB, log); err != nil {
		return nil, err
	}
	key, err := secret.Load("PLUGINHOST_SECRET_KEY", cfg.DataDir, "secret.key")
	if err != nil {
		return nil, fmt.Errorf("server secret: %w", err)
	}
	aiHandles, err := aitools.NewHandles(key)
	if err != nil {
		return nil, err
	}
	responseHandles, err := aitools.NewHandles(extensions.HandleKey(key))
	if err != nil {
		return nil, err
	}

	// Storage, and the change events between replicas.
	s.Bus = changes.NewBus()
	s.Gate = &access.Gate{DB: s.DB}
	s.Auth = &auth.Service{DB: s.DB}
	s.Authenticator = &auth.Authenticator{Tokens: s.Auth, TrustedProxies: cfg.TrustedProxies, Attempts: &auth.Attempts{
		PerAddress: cfg.SignInAttempts.PerAddress, Overall: cfg.SignInAttempts.Overall, Window: cfg.SignInAttempts.Window}}
	if cfg.OIDC.Issuer != "" {
		if err := auth.CheckIssuerURL(cfg.OIDC.Issuer); err != nil {
			return nil, err
		}
		if len(cfg.OIDC.Audiences) == 0 {
			return nil, fmt.Errorf("an identity provider needs the audiences its tokens must name (--oidc-audience)")
		}
		s.Issuer = &auth.Issuer{URL: cfg.OIDC.Issuer, Audiences: cfg.OIDC.Audiences, AdminClaim: cfg.OIDC.AdminClaim, AdminValue: cfg.OIDC.AdminValue,
			DB: s.DB, Log: log, Keys: &auth.IssuerKeys{Issuer: cfg.OIDC.Issuer, HTTP: cfg.OIDC.HTTP, RefetchInterval: cfg.OIDC.KeysRefetch, Log: log}}
		s.Authenticator.Issuer = s.Issuer
		// The keys are fetched now, so that a wrong issuer shows in the log
		// at start (a failure is logged, and the first token tries again).
		go s.Issuer.Keys.Discovery(context.WithoutCancel(ctx))
		log.Info("JWTs of the identity provider accepted", "issuer", cfg.OIDC.Issuer, "audiences", strings.Join(cfg.OIDC.Audiences, ","),
			"admin_claim", cfg.OIDC.AdminClaim)
	}
	s.Storage = &storage.Service{DB: s.DB, Bus: s.Bus, Gate: s.Gate, Log: log}
	if s.DB.Dialect == database.SQLite {
		s.Storage.StartBatching()
	}
	s.onClose(s.Storage.Close)
	if cfg.Redis != "" {
		if s.Relay, err = relay.Start(cfg.Redis, s.Bus, s.Storage, log); err != nil {
			return nil, err
		}
		s.onClose(func() { s.Relay.Close() })
		log.Info("change events cross replicas through Redis", "redis", relay.Redact(cfg.Redis))
	}

	// Plugin capabilities: compiled once into the cache, run in the
	// sandbox, on demand and on their schedules.
	cache := cfg.CompileCache
	if cache == "" {
		cache = filepath.Join(cfg.DataDir, "wazero-cache")
	}
	if s.Engine, err = sandbox.New(ctx, cache, cfg.RunLimits); err != nil {
		return nil, err
	}
	s.onClose(func() { s.Engine.Close(context.Background()) })
	if mode, why := sandbox.RestoreMode(); mode == "written pages" {
		log.Info("capability instances are restored between runs by the pages each run wrote", "restore", mode, "why", why)
	} else {
		log.Warn("capability instances are restored between runs by comparing every page: each run of a kept instance costs more", "restore", mode, "why", why)
	}
	// What plugins reach outside: one egress policy for the image proxy,
	// capability fetches and OAuth token endpoints.
	policy := &egress.Policy{AllowPrivate: cfg.EgressAllowPrivate}
	roots, err := egress.RootCAs(cfg.EgressCA)
	if err != nil {
		return nil, err
	}
	if len(cfg.EgressAllowPrivate) > 0 || cfg.EgressCA != "" {
		log.Warn("egress opened by the operator", "allow_private", fmt.Sprint(cfg.EgressAllowPrivate), "extra_ca", cfg.EgressCA)
	}
	sealer, err := secret.NewSealer(key, "connections")
	if err != nil {
		return nil, err
	}
	s.Fetch = &netfetch.Service{Policy: policy, RootCAs: roots, Storage: s.Storage, Log: log}
	s.Connections = &connections.Service{DB: s.DB, Gate: s.Gate, Sealer: sealer, HTTP: s.Fetch.Client(), Log: log}
	s.Fetch.Credentials = s.Connections
	// Notifications runs send.
	s.Notify = &notify.Service{DB: s.DB, Gate: s.Gate, Storage: s.Storage, Bus: s.Bus, Log: log}
	s.Runs = &capability.Service{DB: s.DB, Storage: s.Storage, Engine: s.Engine, Gate: s.Gate, Fetch: s.Fetch, Notify: s.Notify, Log: log}
	s.Schedule = &schedule.Scheduler{DB: s.DB, Runner: s.Runs, Gate: s.Gate, Log: log}
	s.onClose(s.Schedule.Close)

	// The services of the API.
	s.Lifecycle = &lifecycle.Service{DB: s.DB, Bus: s.Bus, Storage: s.Storage, Gate: s.Gate, Modules: s.Runs, TrustedKeys: trusted, Log: log}
	s.AI = &aitools.Service{Storage: s.Storage, Gate: s.Gate, Handles: aiHandles, Capabilities: s.Runs}
	s.UI = &extensions.Service{DB: s.DB, Handles: responseHandles, Bus: s.Bus}
	s.Hub = &live.Hub{Bus: s.Bus, Storage: s.Storage, MaxPerConnection: cfg.MaxSubscriptionsPerConnection,
		MaxPerUser: cfg.MaxSubscriptionsPerUser, Log: log}
	s.GraphQL = gqlhttp.New(&resolvers.Resolver{Auth: s.Auth, Lifecycle: s.Lifecycle, Storage: s.Storage, AI: s.AI, UI: s.UI,
		Live: s.Hub, Capabilities: s.Runs, Schedule: s.Schedule, Connections: s.Connections, Notify: s.Notify, Log: log},
		s.Authenticator, cfg.Limits, gqlhttp.Options{InitTimeout: cfg.WebsocketInitTimeout}, log)
	// Taken down first: websockets close (going away), then subscriptions end.
	s.onClose(s.Hub.Close)
	s.onClose(s.GraphQL.Sockets.Shutdown)

	// The HTTP surface, with the web host's routes.
	m := httpapi.NewMetrics()
	writePool, _ := s.DB.Write.DB()
	readPool, _ := s.DB.Read.DB()
	err = metrics.Register(m.Registry, metrics.Sources{
		WebsocketConnections: s.GraphQL.Sockets.Connections, Subscriptions: s.Hub.Open,
		RunMemory: s.Engine.MemoryInUse, CompiledModules: func() int { return s.Engine.Stats().Compiled },
		InstancesReplaced: func() int64 { return s.Engine.Stats().Replaced },
		DBPools:           map[string]*sql.DB{"write": writePool, "read": readPool},
		Version:           models.HostVersion, Revision: cfg.Revision,
	})
	if err != nil {
		return nil, err
	}
	sessionSealer, err := secret.NewSealer(key, "sessions")
	if err != nil {
		return nil, err
	}
	sessions := &auth.Sessions{Auth: s.Auth, Sealer: sessionSealer, IssuerTTL: cfg.OIDC.SessionTTL}
	s.Authenticator.Sessions = sessions
	api := &httpapi.Server{
		Auth: s.Authenticator, Storage: s.Storage, DB: s.DB, GraphQL: s.GraphQL, Playground: cfg.Playground, Gate: s.Gate,
		ImageProxy: &imageproxy.Proxy{Fetcher: imageFetcher(policy, roots), Logger: log}, Metrics: m, Log: log,
		Connections: s.Connections, PublicURL: cfg.PublicURL,
	}
	app := &webhost.Server{
		User: api.PageUser("pluginhost app"), WithUser: auth.WithUser, GraphQL: api.WithBaseURL(s.GraphQL),
		Socket: s.GraphQL.ServeSocketAs, Execute: s.GraphQL.Execute, Images: api.Images(), Reset: api.Reset(), Error: api.WriteError,
		SignIn: s.Authenticator.SignIn, PublicURL: cfg.PublicURL, SecureCookies: strings.HasPrefix(cfg.PublicURL, "https://"),
	}
	var signIn *auth.IssuerSignIn
	if s.Issuer != nil && cfg.OIDC.ClientID != "" {
		pendingSealer, err := secret.NewSealer(key, "issuer-signin")
		if err != nil {
			return nil, err
		}
		signIn = &auth.IssuerSignIn{Issuer: s.Issuer, ClientID: cfg.OIDC.ClientID, ClientSecret: cfg.OIDC.ClientSecret, Scopes: cfg.OIDC.Scopes,
			Sessions: sessions, Sealer: pendingSealer, HTTP: cfg.OIDC.HTTP}
		app.Provider = &webhost.Provider{Name: providerName(cfg.OIDC), Begin: signIn.Begin,
			Finish: func(r *http.Request, cookie, state, code string) (string, time.Time, string, error) {
				if err := s.Authenticator.Limited(r); err != nil {
					return "", time.Time{}, "", err
				}
				session, ends, next, err := signIn.Finish(r.Context(), cookie, state, code)
				if err != nil {
					s.Authenticator.Failed(r, err)
					if models.ErrorCode(err) == models.ErrInternal {
						log.Error("signing in with the identity provider failed", "err", err)
					}
				}
				return session, ends, next, err
			}}
	}
	app.SignOut = func(ctx context.Context, value, returnTo string) (string, error) {
		idToken, err := sessions.End(ctx, value)
		if err != nil || signIn == nil || idToken == "" {
			return "", err
		}
		return signIn.EndURL(ctx, idToken, returnTo), nil
	}
	s.Drain = &httpapi.Drain{}
	s.Handler = httpapi.AccessLog(log, s.Drain.Handler(api.Handler(app.Mount)))

	// What runs in the background: the schedule, and the watch of revoked
	// tokens, which closes their websockets wherever they are.
	if cfg.Background {
		s.Schedule.Start(ctx)
	}
	watch, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	go s.Auth.WatchRevocations(watch, log, s.GraphQL.Sockets.CloseToken)
	s.onClose(stopWatch)
	return s, nil
}

// providerName is how the sign-in page names the identity provider: the
// operator's name for it, else the issuer's host.
func providerName(c OIDC) string {
	if c.Name != "" {
		return c.Name
	}
	if u, err := url.Parse(c.Issuer); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return c.Issuer
}

// imageFetcher is the image proxy's fetcher under the egress policy.
func imageFetcher(p *egress.Policy, roots *x509.CertPool) *imageproxy.Fetcher {
	f := imageproxy.New()
	f.Policy, f.RootCAs = p, roots
	return f
}

// onClose adds a step to Close; steps run in the reverse order of their
// adding.
func (s *Server) onClose(f func()) { s.closers = append(s.closers, f) }

// Close takes the server down: the background work stops, websockets close
// (going away) and subscriptions end, the engine and the write path stop,
// and the database closes. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		for i := len(s.closers) - 1; i >= 0; i-- {
			s.closers[i]()
		}
	})
}
