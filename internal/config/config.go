// Package config reads Quiver's configuration from the environment into one
// struct and validates it. Errors name the variable at fault. It never logs
// or prints secret values.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quiverhq/quiver/internal/secrets"
)

// Defaults, named so the README and the code agree.
const (
	DefaultAddr             = ":8080"
	DefaultDataDir          = "./data"
	DefaultCallTimeout      = 30 * time.Second
	DefaultLeaseGrace       = 5 * time.Second
	DefaultIdempotencyTTL   = 24 * time.Hour
	DefaultCallLogRetention = 30 * 24 * time.Hour
	DefaultSweepInterval    = 2 * time.Second
	DefaultPublicURL        = "http://localhost:8080"
	DefaultTavilyBaseURL    = "https://api.tavily.com"
	DefaultBodyLimit        = 1 << 20
	DefaultCacheTTL         = time.Second
	DefaultRelistInterval   = 5 * time.Second // mcp.DefaultRelistInterval
	DefaultDBMaxConns       = 32              // store.DefaultMaxConns
	DefaultShutdownDelay    = 0               // a stop closes the listener at once, as Ctrl-C expects
)

// Config is everything Quiver reads from its environment.
type Config struct {
	Addr string // QUIVER_ADDR
	// Unread lists the QUIVER_* variables that are set but that Quiver
	// does not read (a misspelling, most likely); the commands warn of each.
	Unread []UnreadVar
	// PprofAddr, when set (QUIVER_PPROF_ADDR), serves Go's runtime
	// profiles (net/http/pprof) on a listener of its own; keep it on
	// localhost.
	PprofAddr   string
	DatabaseURL string // DATABASE_URL; empty means the embedded SQLite file
	// DBMaxConns caps the connections this process opens to Postgres
	// (QUIVER_DB_MAX_CONNS), so replicas can be sized to the server's
	// max_connections. The embedded SQLite file takes one writer anyway.
	DBMaxConns int
	RedisURL   string // REDIS_URL; empty means the in-process cache
	// RedisPrefix starts every Redis key (QUIVER_REDIS_PREFIX), so several
	// deployments can share one Redis.
	RedisPrefix string
	DataDir     string // QUIVER_DATA_DIR
	// SecretKey is the base64 key from QUIVER_SECRET_KEY; empty means a key
	// generated into DataDir (embedded default only).
	SecretKey string
	// SecretKeysPrevious are the keys SecretKey replaces, from
	// QUIVER_SECRET_KEY_PREVIOUS (comma-separated): they open what they
	// sealed until serve has sealed it again with SecretKey.
	SecretKeysPrevious []string
	CallTimeout        time.Duration // QUIVER_CALL_TIMEOUT
	LeaseGrace         time.Duration // QUIVER_LEASE_GRACE: added to CallTimeout for a dispatched call's lease
	IdempotencyTTL     time.Duration // QUIVER_IDEMPOTENCY_TTL
	// CallLogRetention is how long call log entries are kept
	// (QUIVER_CALL_LOG_RETENTION); zero ("0") keeps every entry.
	CallLogRetention time.Duration
	SweepInterval    time.Duration // QUIVER_SWEEP_INTERVAL
	CacheTTL         time.Duration // QUIVER_CACHE_TTL: how long API keys and tools are cached in process
	RelistInterval   time.Duration // QUIVER_MCP_RELIST_INTERVAL: how stale an MCP tool list must be for a call of an action it lacks to re-read it
	PublicURL        string        // QUIVER_PUBLIC_URL
	TavilyBaseURL    string        // QUIVER_TAVILY_BASE_URL
	BodyLimit        int64         // QUIVER_BODY_LIMIT (bytes)
	AllowPrivate     bool          // QUIVER_EGRESS_ALLOW_PRIVATE
	LogLevel         string        // QUIVER_LOG_LEVEL: debug, info, warn, error
	// CallRateLimit is calls per second per account on each replica
	// (QUIVER_CALL_RATE_LIMIT); zero means unlimited. CallRateBurst
	// (QUIVER_CALL_RATE_BURST) is the bucket; zero means twice the rate.
	CallRateLimit float64
	CallRateBurst int
	// OAuthClients maps a provider name (lower case) to the platform's OAuth
	// app, from QUIVER_OAUTH_<PROVIDER>_CLIENT_ID / _CLIENT_SECRET, and to
	// endpoint overrides from QUIVER_OAUTH_<PROVIDER>_AUTH_URL / _TOKEN_URL /
	// _REVOCATION_URL / _TOKEN_AUTH.
	OAuthClients map[string]OAuthClient
	// MCPURLs points hosted MCP catalog entries elsewhere (private mirrors,
	// tests): QUIVER_MCP_URL_<ENTRY>, keyed by entry name ("github-mcp").
	MCPURLs map[string]string
	// ShutdownDelay (QUIVER_SHUTDOWN_DELAY) is how long a stopping serve
	// goes on taking new requests after /readyz turns 503, so that a load
	// balancer sees it not ready and sends elsewhere before the listener
	// closes; zero closes it at once.
	ShutdownDelay time.Duration
	// publicURLSet reports whether QUIVER_PUBLIC_URL was set, not taken
	// from DefaultPublicURL (PublicURLWarning).
	publicURLSet bool
}

// OAuthClient is the platform's OAuth application at one provider, and
// where to reach the provider when not where the catalog says.
type OAuthClient struct {
	ClientID     string
	ClientSecret string
	AuthURL      string
	TokenURL     string
	// RevocationURL (QUIVER_OAUTH_<PROVIDER>_REVOCATION_URL) is the
	// provider's RFC 7009 revocation endpoint; unset keeps the catalog's.
	RevocationURL string
	// TokenAuth, when set (QUIVER_OAUTH_<PROVIDER>_TOKEN_AUTH), is how the
	// client authenticates at the token endpoint: client_secret_post or
	// client_secret_basic; unset keeps the catalog's.
	TokenAuth string
}

// Embedded reports whether Quiver runs on its embedded SQLite database.
func (c *Config) Embedded() bool { return c.DatabaseURL == "" }

// Lease is how long a dispatched call holds its idempotency key before a
// sweeper may declare its outcome unknown.
func (c *Config) Lease() time.Duration { return c.CallTimeout + c.LeaseGrace }

// RequestTimeout bounds every API request: a call's lease (its dispatch and
// the storing of its outcome) and ten seconds more for the rest. A request
// that waits on a database that stalls ends there, and a call is not
// started unless its lease fits in what is left (calls.Engine.timeToRun).
func (c *Config) RequestTimeout() time.Duration { return c.Lease() + 10*time.Second }

// FromEnv reads the configuration of quiver serve, which opens and seals
// the tools' secrets, from the process environment (see Parse).
func FromEnv() (*Config, error) { return Parse(os.Getenv, os.Environ()) }

// FromEnvWithoutSealing reads, from the process environment, the
// configuration of a command that never opens or seals a sealed value
// (quiver migrate, quiver keys): QUIVER_SECRET_KEY is not required with
// DATABASE_URL, so that a migration job or a key-issuing script need not
// hold the key, but a malformed one is refused all the same, not passed
// over (it is most likely the one serve is given too).
func FromEnvWithoutSealing() (*Config, error) { return parseFor(os.Getenv, os.Environ(), false) }

// Parse reads the configuration through getenv; environ lists every
// variable (for the QUIVER_OAUTH_* family). It validates what it read as
// Validate does, for a process that opens and seals secrets.
func Parse(getenv func(string) string, environ []string) (*Config, error) {
	return parseFor(getenv, environ, true)
}

// parseFor is Parse, or with sealing false FromEnvWithoutSealing's.
func parseFor(getenv func(string) string, environ []string, sealing bool) (*Config, error) {
	var errs []error
	read := map[string]bool{}
	get := getenv
	getenv = func(name string) string { read[name] = true; return get(name) }
	str := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	// duration reads a positive duration, or with forever also 0, which
	// means what forever says.
	duration := func(name string, def time.Duration, forever string) time.Duration {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		switch {
		case forever == "" && (err != nil || d <= 0):
			errs = append(errs, fmt.Errorf("%s: %q is not a positive duration such as 30s or 24h", name, v))
			return def
		case err != nil || d < 0:
			errs = append(errs, fmt.Errorf("%s: %q is neither 0 (%s) nor a positive duration such as 720h", name, v, forever))
			return def
		}
		return d
	}
	dur := func(name string, def time.Duration) time.Duration { return duration(name, def, "") }
	boolean := func(name string) bool {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
		}
		return b
	}
	c := &Config{
		Addr:               str("QUIVER_ADDR", DefaultAddr),
		PprofAddr:          str("QUIVER_PPROF_ADDR", ""),
		DatabaseURL:        str("DATABASE_URL", ""),
		DBMaxConns:         DefaultDBMaxConns,
		RedisURL:           str("REDIS_URL", ""),
		RedisPrefix:        str("QUIVER_REDIS_PREFIX", "quiver:"),
		DataDir:            str("QUIVER_DATA_DIR", DefaultDataDir),
		SecretKey:          str("QUIVER_SECRET_KEY", ""),
		SecretKeysPrevious: previousKeys(getenv),
		CallTimeout:        dur("QUIVER_CALL_TIMEOUT", DefaultCallTimeout),
		LeaseGrace:         dur("QUIVER_LEASE_GRACE", DefaultLeaseGrace),
		IdempotencyTTL:     dur("QUIVER_IDEMPOTENCY_TTL", DefaultIdempotencyTTL),
		CallLogRetention:   duration("QUIVER_CALL_LOG_RETENTION", DefaultCallLogRetention, "keep every entry"),
		ShutdownDelay:      duration("QUIVER_SHUTDOWN_DELAY", DefaultShutdownDelay, "no delay"),
		SweepInterval:      dur("QUIVER_SWEEP_INTERVAL", DefaultSweepInterval),
		CacheTTL:           dur("QUIVER_CACHE_TTL", DefaultCacheTTL),
		RelistInterval:     dur("QUIVER_MCP_RELIST_INTERVAL", DefaultRelistInterval),
		PublicURL:          strings.TrimRight(str("QUIVER_PUBLIC_URL", DefaultPublicURL), "/"),
		TavilyBaseURL:      strings.TrimRight(str("QUIVER_TAVILY_BASE_URL", DefaultTavilyBaseURL), "/"),
		BodyLimit:          DefaultBodyLimit,
		AllowPrivate:       boolean("QUIVER_EGRESS_ALLOW_PRIVATE"),
		LogLevel:           strings.ToLower(str("QUIVER_LOG_LEVEL", "info")),
		OAuthClients:       map[string]OAuthClient{},
		publicURLSet:       strings.TrimSpace(getenv("QUIVER_PUBLIC_URL")) != "",
	}
	if v := strings.TrimSpace(getenv("QUIVER_CALL_RATE_LIMIT")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			errs = append(errs, fmt.Errorf("QUIVER_CALL_RATE_LIMIT: %q is not a number of calls per second (0 for no limit)", v))
		} else {
			c.CallRateLimit = f
		}
	}
	if v := strings.TrimSpace(getenv("QUIVER_CALL_RATE_BURST")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("QUIVER_CALL_RATE_BURST: %q is not a whole number of calls", v))
		} else {
			c.CallRateBurst = n
		}
	}
	if v := strings.TrimSpace(getenv("QUIVER_DB_MAX_CONNS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < MinDBMaxConns || n > MaxDBMaxConns {
			errs = append(errs, fmt.Errorf("QUIVER_DB_MAX_CONNS: %q is not a whole number of connections from %d to %d", v, MinDBMaxConns, MaxDBMaxConns))
		} else {
			c.DBMaxConns = n
		}
	}
	if v := strings.TrimSpace(getenv("QUIVER_BODY_LIMIT")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < MinBodyLimit || n > MaxBodyLimit {
			errs = append(errs, fmt.Errorf("QUIVER_BODY_LIMIT: %q is not a byte count from %d to %d (1 GiB)", v, MinBodyLimit, MaxBodyLimit))
		} else {
			c.BodyLimit = n
		}
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		value = strings.TrimSpace(value)
		if entry, ok := strings.CutPrefix(name, "QUIVER_MCP_URL_"); ok && value != "" {
			if c.MCPURLs == nil {
				c.MCPURLs = map[string]string{}
			}
			c.MCPURLs[strings.ReplaceAll(strings.ToLower(entry), "_", "-")] = value
			continue
		}
		rest, ok := strings.CutPrefix(name, "QUIVER_OAUTH_")
		if !ok || value == "" {
			continue
		}
		var provider string
		var set func(*OAuthClient)
		for _, f := range []struct {
			suffix string
			set    func(*OAuthClient)
		}{
			{"_CLIENT_ID", func(o *OAuthClient) { o.ClientID = value }},
			{"_CLIENT_SECRET", func(o *OAuthClient) { o.ClientSecret = value }},
			{"_AUTH_URL", func(o *OAuthClient) { o.AuthURL = value }},
			{"_TOKEN_URL", func(o *OAuthClient) { o.TokenURL = value }},
			{"_REVOCATION_URL", func(o *OAuthClient) { o.RevocationURL = value }},
			{"_TOKEN_AUTH", func(o *OAuthClient) { o.TokenAuth = value }},
		} {
			if p, ok := strings.CutSuffix(rest, f.suffix); ok && p != "" {
				provider, set = strings.ToLower(p), f.set
				break
			}
		}
		if set == nil {
			errs = append(errs, fmt.Errorf("%s: not a variable Quiver reads; the OAuth ones are QUIVER_OAUTH_<PROVIDER>_CLIENT_ID, _CLIENT_SECRET, _AUTH_URL, _TOKEN_URL, _REVOCATION_URL and _TOKEN_AUTH", name))
			continue
		}
		oc := c.OAuthClients[provider]
		set(&oc)
		c.OAuthClients[provider] = oc
	}
	errs = append(errs, checkDatabaseNamed(c.DatabaseURL, getenv))
	errs = append(errs, c.validate(sealing))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.Unread = unread(environ, read)
	return c, nil
}

// Bounds of QUIVER_DB_MAX_CONNS: a call's path may hold one connection
// while the sweeper, the call log's writer and a cache miss each want
// another, and Postgres itself takes at most a few thousand.
const (
	MinDBMaxConns = 4
	MaxDBMaxConns = 10000
)

// Bounds of QUIVER_BODY_LIMIT: a body is read whole into memory before it
// is parsed, and the largest int64 overflowed a reader's limit + 1 (every
// agent MCP message then read as empty).
const (
	MinBodyLimit = 1024
	MaxBodyLimit = 1 << 30
)

// Bounds of QUIVER_SWEEP_INTERVAL: the sweeper queries the database on
// each tick, and API.md promises that it records a dead replica's call as
// an unknown outcome within seconds.
const (
	MinSweepInterval = 100 * time.Millisecond
	MaxSweepInterval = 30 * time.Second
)

// Bounds of QUIVER_MCP_RELIST_INTERVAL: each re-read may list many pages
// from the tool's server, and a list is read anew every minute anyway
// (mcp.DefaultDiscoveryTTL).
const (
	MinRelistInterval = 100 * time.Millisecond
	MaxRelistInterval = time.Minute
)

// Bounds of QUIVER_CALL_TIMEOUT and QUIVER_LEASE_GRACE: a call needs some
// time to run at all, and a lease (their sum) longer than a day would hold
// a key past its TTL.
const (
	MinCallTimeout = 100 * time.Millisecond
	MaxCallTimeout = 12 * time.Hour
	MaxLeaseGrace  = time.Hour
)

// MaxShutdownDelay bounds QUIVER_SHUTDOWN_DELAY: a load balancer's probes
// see a replica not ready within seconds, and the process manager's grace
// period has to cover the delay and the drain after it.
const MaxShutdownDelay = 5 * time.Minute

// MaxCacheTTL bounds QUIVER_CACHE_TTL, how long a revoked API key may still
// be taken. MinCallRate bounds a QUIVER_CALL_RATE_LIMIT that is not 0, and
// so the Retry-After it makes (an hour at most); MaxCallRate and
// MaxCallBurst keep the bucket (twice the rate by default) a whole number
// (1e300 overflowed it, and refused every call).
const (
	MaxCacheTTL  = time.Minute
	MinCallRate  = 1.0 / 3600
	MaxCallRate  = 1e6
	MaxCallBurst = 1 << 30
)

// checkDatabaseNamed refuses a postgres:// DATABASE_URL that names no
// database when PGDATABASE (which pgx reads) does not say it either: pgx
// would fill in the user's name (or the OS user's), and serve would migrate
// whatever database that is, such as postgres. A URL without a host is
// libpq's local socket, as ever. Other malformed URLs are Validate's.
func checkDatabaseNamed(raw string, getenv func(string) string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil
	}
	if strings.Trim(u.Path, "/") == "" && strings.TrimSpace(u.Query().Get("dbname")) == "" && strings.TrimSpace(getenv("PGDATABASE")) == "" {
		return errors.New("DATABASE_URL: names no database (postgres://USER@HOST:5432/DATABASE), and PGDATABASE is not set")
	}
	return nil
}

// checkAddr checks the listen address in variable name: host:port, the
// host optional, the port a number (0 picks a free one).
func checkAddr(name, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %q is not a listen address such as :8080 or 127.0.0.1:8080", name, addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("%s: %q does not end in a port number (0 to 65535)", name, addr)
	}
	return nil
}

// Validate checks the configuration of a process that opens and seals
// secrets (quiver serve); each error names its variable.
func (c *Config) Validate() error { return c.validate(true) }

// secretKeyHelp says what QUIVER_SECRET_KEY holds and how to make one.
const secretKeyHelp = "the key is 32 random bytes in base64, 44 characters; make one with `openssl rand -base64 32`"

// validate is Validate; with sealing false, for a command that never opens
// or seals a sealed value, QUIVER_SECRET_KEY is not required. A key that is
// set is checked either way, before anything runs; the key file of the
// embedded default is checked where its box is made (app.SecretBox).
func (c *Config) validate(sealing bool) error {
	var errs []error
	if c.DatabaseURL != "" {
		// Parse's own error would quote the URL, password and all.
		if u, err := url.Parse(c.DatabaseURL); err != nil {
			errs = append(errs, errors.New("DATABASE_URL: cannot be parsed as a URL (postgres://USER:PASSWORD@HOST:5432/DATABASE)"))
		} else if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			errs = append(errs, errors.New("DATABASE_URL: must be a postgres:// (or postgresql://) URL"))
		} else if port, ok := badHostPort(u.Host); ok {
			// pgx refused it only once a command opened the database.
			errs = append(errs, fmt.Errorf("DATABASE_URL: port %q is not from 1 to 65535", port))
		}
		if c.SecretKey == "" && sealing {
			errs = append(errs, errors.New("QUIVER_SECRET_KEY: required when DATABASE_URL is set (32 bytes, base64)"))
		}
	}
	if c.SecretKey != "" {
		if _, err := secrets.ParseKey(c.SecretKey); err != nil {
			errs = append(errs, fmt.Errorf("QUIVER_SECRET_KEY: %w (%s)", err, secretKeyHelp))
		}
	}
	errs = append(errs, c.checkPreviousKeys())
	if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil {
			errs = append(errs, errors.New("REDIS_URL: cannot be parsed as a URL (redis://[:PASSWORD@]HOST:PORT/DB)"))
		} else if u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "redis-sentinel" && u.Scheme != "redis-cluster" {
			errs = append(errs, errors.New("REDIS_URL: must be a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL"))
		} else if u.Port() != "" && !validPort(u.Port()) {
			// Serve would start on a Redis it can never dial, as if down.
			errs = append(errs, fmt.Errorf("REDIS_URL: port %q is not from 1 to 65535", u.Port()))
		} else if u.Hostname() == "" {
			// go-redis would fill in localhost:6379: someone else's Redis,
			// or none, never what a URL without a host meant.
			errs = append(errs, errors.New("REDIS_URL: names no host (redis://HOST:PORT/DB); unset it for the in-process cache"))
		} else if u.Scheme == "redis-sentinel" && strings.TrimSpace(u.Query().Get("master_name")) == "" {
			// Without it every command fails, and serve would run on as if
			// Redis were down.
			errs = append(errs, errors.New("REDIS_URL: a redis-sentinel:// URL needs ?master_name=NAME, the master its Sentinels watch"))
		}
	}
	if err := checkAddr("QUIVER_ADDR", c.Addr); err != nil {
		errs = append(errs, err)
	}
	if c.PprofAddr != "" { // unset: no pprof listener
		if err := checkAddr("QUIVER_PPROF_ADDR", c.PprofAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if c.SweepInterval < MinSweepInterval || c.SweepInterval > MaxSweepInterval {
		errs = append(errs, fmt.Errorf("QUIVER_SWEEP_INTERVAL: must be from %s to %s (a dead replica's calls are recorded within it)", MinSweepInterval, MaxSweepInterval))
	}
	if c.RelistInterval < MinRelistInterval || c.RelistInterval > MaxRelistInterval {
		errs = append(errs, fmt.Errorf("QUIVER_MCP_RELIST_INTERVAL: must be from %s to %s", MinRelistInterval, MaxRelistInterval))
	}
	if c.CallTimeout < MinCallTimeout || c.CallTimeout > MaxCallTimeout {
		errs = append(errs, fmt.Errorf("QUIVER_CALL_TIMEOUT: must be from %s to %s", MinCallTimeout, MaxCallTimeout))
	}
	if c.LeaseGrace > MaxLeaseGrace {
		errs = append(errs, fmt.Errorf("QUIVER_LEASE_GRACE: must be at most %s", MaxLeaseGrace))
	}
	if c.IdempotencyTTL <= c.Lease() {
		errs = append(errs, fmt.Errorf("QUIVER_IDEMPOTENCY_TTL: must be longer than a call's lease (QUIVER_CALL_TIMEOUT + QUIVER_LEASE_GRACE = %s): a key must outlive its call", c.Lease()))
	}
	if c.ShutdownDelay > MaxShutdownDelay {
		errs = append(errs, fmt.Errorf("QUIVER_SHUTDOWN_DELAY: must be at most %s (the process manager's grace period must cover it and the drain after it)", MaxShutdownDelay))
	}
	if c.CacheTTL > MaxCacheTTL {
		errs = append(errs, fmt.Errorf("QUIVER_CACHE_TTL: must be at most %s (a revoked API key is refused by every replica within it)", MaxCacheTTL))
	}
	if c.CallRateLimit != 0 && (c.CallRateLimit < MinCallRate || c.CallRateLimit > MaxCallRate) {
		errs = append(errs, fmt.Errorf("QUIVER_CALL_RATE_LIMIT: must be 0 (no limit) or from %g (one call an hour) to %g", MinCallRate, MaxCallRate))
	}
	if c.CallRateBurst > 0 && c.CallRateLimit == 0 {
		// The burst sizes the limit's bucket: alone it limited nothing.
		errs = append(errs, errors.New("QUIVER_CALL_RATE_BURST: sizes the bucket of QUIVER_CALL_RATE_LIMIT, which is not set (or 0: no limit); set QUIVER_CALL_RATE_LIMIT to the calls per second it allows, or unset the burst"))
	}
	if c.CallRateBurst > MaxCallBurst {
		errs = append(errs, fmt.Errorf("QUIVER_CALL_RATE_BURST: must be at most %d", MaxCallBurst))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("QUIVER_DATA_DIR: must not be empty"))
	} else {
		c.DataDir = filepath.Clean(c.DataDir)
	}
	if err := checkBaseURL("QUIVER_PUBLIC_URL", c.PublicURL, true); err != nil {
		errs = append(errs, err)
	}
	if err := checkBaseURL("QUIVER_TAVILY_BASE_URL", c.TavilyBaseURL, false); err != nil {
		errs = append(errs, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("QUIVER_LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel))
	}
	for p, oc := range c.OAuthClients {
		name := "QUIVER_OAUTH_" + strings.ToUpper(p)
		if (oc.ClientID == "") != (oc.ClientSecret == "") {
			errs = append(errs, fmt.Errorf("%s_CLIENT_ID and _CLIENT_SECRET: set both or neither", name))
		}
		for suffix, u := range map[string]string{"_AUTH_URL": oc.AuthURL, "_TOKEN_URL": oc.TokenURL, "_REVOCATION_URL": oc.RevocationURL} {
			if u != "" {
				if err := checkHTTPURL(name+suffix, u); err != nil {
					errs = append(errs, err)
				}
			}
		}
		switch oc.TokenAuth {
		case "", "client_secret_post", "client_secret_basic":
		default:
			errs = append(errs, fmt.Errorf("%s_TOKEN_AUTH: %q is not client_secret_post or client_secret_basic", name, oc.TokenAuth))
		}
	}
	for entry, u := range c.MCPURLs {
		if err := checkHTTPURL("QUIVER_MCP_URL_"+strings.ToUpper(strings.ReplaceAll(entry, "-", "_")), u); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
