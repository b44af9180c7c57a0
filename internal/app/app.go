// Package app wires Quiver together from a Config: the store, the replay
// cache, the connectors, the domain services and the HTTP API. The binary
// and the end-to-end tests build the same App, so what is tested is what
// runs. It holds no logic of its own beyond construction and shutdown.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/mcp"
	"github.com/quiverhq/quiver/connectors/tavily"
	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/api"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/httpserver"
	"github.com/quiverhq/quiver/internal/mcpserver"
	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/oauth"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// App is a wired Quiver server.
type App struct {
	Config   *config.Config
	Store    *store.Store
	Accounts *accounts.Service
	Tools    *toolconfig.Service
	Agents   *agents.Service
	Engine   *calls.Engine
	Metrics  *metrics.Metrics
	API      *api.Server
	OAuth    *oauth.Flow
	Logger   *slog.Logger

	redis    redis.UniversalClient
	mcp      *mcp.Connector
	agentMCP *mcpserver.Server
	closers  []func()
	// stopping is set when Serve's context ends: from then on Ready
	// answers api.ErrShuttingDown, and /readyz 503.
	stopping atomic.Bool
}

// OpenStore opens the configured database without migrating.
func OpenStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*store.Store, error) {
	return openStore(ctx, cfg, logger, nil)
}

// openStore is OpenStore, calling ended for each session of the pool
// Postgres ends (store.Options.SessionEnded); ended may be nil.
func openStore(ctx context.Context, cfg *config.Config, logger *slog.Logger, ended func()) (*store.Store, error) {
	s, err := store.Open(ctx, store.Options{DatabaseURL: cfg.DatabaseURL, MaxConns: cfg.DBMaxConns, DataDir: cfg.DataDir, Logger: logger,
		SessionEnded: ended})
	if err != nil && cfg.DatabaseURL != "" && !strings.HasPrefix(err.Error(), "DATABASE_URL") {
		err = fmt.Errorf("DATABASE_URL: %w", err)
	}
	return s, err
}

// New builds an App: it opens and migrates the database and connects to
// Redis if configured.
func New(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*App, error) {
	a := &App{Config: cfg, Logger: logger, Metrics: metrics.New()}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := errors.Join(overrideMCPURLs(cat, cfg.MCPURLs), checkOAuthProviders(cat, cfg.OAuthClients)); err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	box, madeKey, err := SecretBox(cfg)
	if err != nil {
		return nil, err
	}
	if a.Store, err = openStore(ctx, cfg, logger, a.Metrics.DBSessionsEnded.Inc); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() { a.Store.Close() })
	applied, err := a.Store.MigrateUp(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	for _, m := range applied {
		logger.Info("migration applied", "version", m.Version, "name", m.Name)
	}
	// A newer binary's migrations are left in place (they are written so
	// that the binary before them still runs, for a rollback), but said.
	if st, err := a.Store.MigrationStatus(ctx); err == nil {
		for _, m := range st {
			if m.Unknown {
				logger.Warn("the database has a migration this binary does not know: a newer quiver applied it",
					"version", m.Version, "name", m.Name)
			}
		}
	}
	if err := checkSecretKey(ctx, a.Store, box, cfg, madeKey); err != nil {
		return nil, err
	}

	var cache replaycache.Cache = replaycache.NewMemory()
	if cfg.RedisURL != "" {
		replaycache.LogTo(logger)
		if a.redis, err = replaycache.ParseURL(cfg.RedisURL); err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		a.closers = append(a.closers, func() { a.redis.Close() })
		// A Redis that is down is no reason not to start (calls run on
		// Postgres meanwhile), but one that refuses REDIS_URL's password or
		// database number will go on refusing.
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := a.redis.Ping(pctx).Err()
		cancel()
		if replaycache.RefusesSetup(err) {
			return nil, fmt.Errorf("REDIS_URL: Redis refuses it: %w", err)
		}
		cache = replaycache.NewTiered(replaycache.NewMemory(), replaycache.NewRedis(a.redis, cfg.RedisPrefix))
	}

	retired := a.Metrics.MCPSessionsRetired
	for _, reason := range mcp.RetireReasons {
		retired.WithLabelValues(reason) // each series from the start, at zero
	}
	a.mcp = mcp.New(&mcp.Options{AllowPrivate: cfg.AllowPrivate, RelistInterval: cfg.RelistInterval, Logger: logger,
		Events: mcp.SessionEvents{
			Opened:  a.Metrics.MCPSessionsOpened.Inc,
			Failed:  a.Metrics.MCPSessionFailures.Inc,
			Retired: func(reason string) { retired.WithLabelValues(reason).Inc() },
		}})
	a.closers = append(a.closers, func() { a.mcp.Close() })
	registry := connectors.Registry{
		"tavily": tavily.New(tavily.Options{BaseURL: cfg.TavilyBaseURL}),
		"mcp":    a.mcp,
	}
	addBuiltins(registry, cfg)

	a.Accounts = accounts.New(a.Store, cfg.CacheTTL, logger)
	watch := &mcpWatch{Store: a.Store}
	a.Tools = toolconfig.New(toolconfig.Options{
		Store: watch, Catalog: cat, Box: box, Connectors: registry, CacheTTL: cfg.CacheTTL, Logger: logger,
	})
	clients := map[string]oauth.Client{}
	endpoints := map[string]oauth.Endpoint{}
	for name, c := range cfg.OAuthClients {
		if c.ClientID != "" {
			clients[name] = oauth.Client{ID: c.ClientID, Secret: c.ClientSecret}
		}
		if c.AuthURL != "" || c.TokenURL != "" || c.RevocationURL != "" || c.TokenAuth != "" {
			endpoints[name] = oauth.Endpoint{AuthURL: c.AuthURL, TokenURL: c.TokenURL, RevocationURL: c.RevocationURL, TokenAuth: c.TokenAuth}
		}
	}
	a.OAuth = oauth.New(oauth.Options{
		Store: a.Store, Tools: a.Tools, Box: box, Clients: clients, Endpoints: endpoints,
		PublicURL: cfg.PublicURL, AllowPrivate: cfg.AllowPrivate, Logger: logger, Metrics: a.Metrics,
	})
	a.Tools.SetOAuth(a.OAuth)
	a.Agents = agents.New(watch)
	a.Engine = calls.New(calls.Options{
		Store: a.Store, Tools: a.Tools, Cache: cache, Metrics: a.Metrics, Logger: logger,
		CallTimeout: cfg.CallTimeout, Lease: cfg.Lease(), IdempotencyTTL: cfg.IdempotencyTTL, SweepInterval: cfg.SweepInterval,
		RateLimit: cfg.CallRateLimit, RateBurst: cfg.CallRateBurst,
		CallLogRetention: cfg.CallLogRetention, Reauth: a.Tools, DatabaseDown: a.Store.Down,
	})
	a.agentMCP = mcpserver.New(mcpserver.Options{
		Agents: a.Agents, Tools: a.Tools, Actions: a.Engine, Calls: a.Engine, Logger: a.Logger,
		ListTTL: cfg.CacheTTL, MaxBodyBytes: cfg.BodyLimit, PublicURL: cfg.PublicURL,
	})
	watch.tools, watch.mcp = a.Tools, a.agentMCP
	a.API = api.New(api.Deps{
		Accounts: a.Accounts, Tools: a.Tools, Agents: a.Agents, Calls: a.Engine, Metrics: a.Metrics,
		Logger: logger, BodyLimit: cfg.BodyLimit, RequestTimeout: cfg.RequestTimeout(), Ready: a.Ready, Extra: a.extraRoutes(),
	})
	ok = true
	return a, nil
}

// extraRoutes registers routes owned by packages beyond the core API.
func (a *App) extraRoutes() []func(*gin.Engine, *gin.RouterGroup) {
	return []func(*gin.Engine, *gin.RouterGroup){
		func(_ *gin.Engine, authed *gin.RouterGroup) { a.agentMCP.Register(authed) },
		a.oauthRoutes,
	}
}

// oauthRoutes registers the OAuth callback; it takes no API key (the state
// binds it to one tool).
func (a *App) oauthRoutes(root *gin.Engine, _ *gin.RouterGroup) {
	h := gin.WrapH(a.OAuth.Handler())
	root.GET(oauth.CallbackPath, h)
	root.GET(oauth.CallbackPath+"/", h)
}

// overrideMCPURLs points hosted MCP entries elsewhere
// (QUIVER_MCP_URL_<ENTRY>), for tests and private mirrors. It runs before
// the catalog is shared. A variable naming no hosted MCP entry (a typo) is
// an error that names it, rather than a setting silently ignored.
func overrideMCPURLs(cat *catalog.Catalog, urls map[string]string) error {
	var errs []error
	for name, u := range urls {
		if e, ok := cat.Get(name); ok && e.MCPURL != "" {
			e.MCPURL = u
			continue
		}
		errs = append(errs, fmt.Errorf("QUIVER_MCP_URL_%s: the catalog has no hosted MCP server named %q",
			strings.ToUpper(strings.ReplaceAll(name, "-", "_")), name))
	}
	return errors.Join(errs...)
}

// checkOAuthProviders refuses QUIVER_OAUTH_<PROVIDER>_* naming a provider
// no catalog entry has (a typo), as overrideMCPURLs does for its variables:
// such a setting would be silently ignored.
func checkOAuthProviders(cat *catalog.Catalog, clients map[string]config.OAuthClient) error {
	known := map[string]bool{}
	for _, e := range cat.List("") {
		if e.OAuth != nil {
			known[strings.ToLower(e.OAuth.Provider)] = true
		}
	}
	var errs []error
	for name := range clients {
		if !known[name] {
			errs = append(errs, fmt.Errorf("QUIVER_OAUTH_%s_*: the catalog has no OAuth provider named %q (it has %s)",
				strings.ToUpper(name), name, strings.Join(slices.Sorted(maps.Keys(known)), ", ")))
		}
	}
	return errors.Join(errs...)
}

// Ready reports whether the database and Redis (if configured) answer;
// once the server is stopping, it is api.ErrShuttingDown without asking them.
func (a *App) Ready(ctx context.Context) error {
	if a.stopping.Load() {
		return api.ErrShuttingDown
	}
	var dbErr, redisErr error
	var wg sync.WaitGroup
	wg.Go(func() { dbErr = a.Store.Ready(ctx) })
	if a.redis != nil {
		wg.Go(func() { redisErr = a.redis.Ping(ctx).Err() })
	}
	wg.Wait()
	var down api.NotReady
	if dbErr != nil {
		down.Add("the database", dbErr)
	}
	if redisErr != nil {
		down.Add("Redis", redisErr)
	}
	if len(down.Components) == 0 {
		return nil
	}
	return &down
}

// Handler is the HTTP handler to serve.
func (a *App) Handler() http.Handler { return a.API.Handler() }

// HTTPServer is the server Serve runs Handler on; tests serve through it
// too, so what they exercise is what runs.
func (a *App) HTTPServer() *httpserver.Server {
	return httpserver.New(a.Handler(), &httpserver.Options{ErrorBody: api.RefusalBody, OnRefusal: a.API.Refused, Logger: a.Logger})
}

// RunBackground runs the sweeper, purge and call log writer, and the
// watch of the database's liveness (store.Store.Watch), until ctx ends,
// and, once at start, seals what an older build stored plain
// (toolconfig.Service.ResealStored).
func (a *App) RunBackground(ctx context.Context) {
	watched := make(chan struct{})
	go func() { a.Store.Watch(ctx); close(watched) }()
	defer func() { <-watched }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := a.Tools.ResealStored(ctx, a.Store)
		switch {
		case err != nil && ctx.Err() == nil:
			a.Logger.Warn("sealing tool URLs an older build stored plain stopped; it runs again at the next start", "sealed", n, "error", err)
		case err != nil:
			a.Logger.Debug("sealing tool URLs an older build stored plain stopped with the server", "sealed", n)
		case n > 0:
			a.Logger.Info("sealed tool URLs an older build stored plain", "tools", n)
		}
		if ctx.Err() == nil && a.Tools.Rotating() {
			a.rekey(ctx)
		}
	}()
	a.Engine.Run(ctx)
	<-done
}

// Serve listens on cfg.Addr until ctx ends, then shuts down gracefully
// (see shutdown): in-flight calls finish and are recorded. ready, if set, runs once the
// addresses are bound (the API's, and the profiles' if set) and before
// anything is served; its error stops Serve.
func (a *App) Serve(ctx context.Context, ready func(addr string) error) error {
	srv := a.HTTPServer()
	ln, err := listen(a.Config.Addr)
	if err != nil {
		return fmt.Errorf("QUIVER_ADDR: %w", err)
	}
	if a.Config.PprofAddr != "" {
		stop, err := servePprof(a.Config.PprofAddr, a.Logger)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	if ready != nil {
		if err := ready(ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() { a.RunBackground(bgCtx); close(bgDone) }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = a.shutdown(srv, errc)
	}
	stopBg()
	<-bgDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err == nil {
		a.Logger.Info("stopped")
	}
	return err
}

// shutdown stops srv. Readiness turns 503 at once, so that a load
// balancer stops sending new requests here; for QUIVER_SHUTDOWN_DELAY,
// the time its probes take to see that, srv goes on serving them, each
// answer closing its connection so that its client reconnects through the
// balancer. Then srv stops accepting and drains the requests in flight. A
// second signal ends the process at any point of it (cmd/quiver). Serve's
// error, should it end during the delay, is returned after the drain.
func (a *App) shutdown(srv *httpserver.Server, errc <-chan error) error {
	a.stopping.Store(true)
	delay := a.Config.ShutdownDelay
	a.Logger.Info("shutting down: not ready (/readyz answers 503); serving new requests for the shutdown delay", "delay", delay.String())
	var serveErr error
	if delay > 0 {
		srv.CloseAfterEachAnswer()
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case serveErr = <-errc:
			t.Stop()
		}
	}
	// Every request ends within its bound (a call's lease, ten seconds
	// more for the rest: a database that stalls ends there with 503), so a
	// drain a second longer lets each one answer: none is cut off.
	drain := a.Config.RequestTimeout() + time.Second
	a.Logger.Info("shutting down: no new connections; finishing the requests in flight", "drain", drain.String(), "after_delay", delay.String())
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	err := srv.Shutdown(sctx)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: requests were still running after %s, and were cut off", drain)
	}
	// Deletes and resets that answered may still be telling providers to
	// revoke their tokens; each is bounded (oauth.RevocationTimeout).
	if n := a.Tools.Revoking(); n > 0 {
		a.Logger.Info("shutting down: waiting for token revocations at providers", "tools", n)
		a.Tools.WaitRevocations()
	}
	if serveErr != nil {
		return serveErr
	}
	return err
}

// Close releases connections.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}
