// Command quiver is the one Quiver binary: the API server and its
// administration commands. See `quiver help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/app"
	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/filelock"
	"github.com/quiverhq/quiver/internal/logging"
	"github.com/quiverhq/quiver/internal/store"
)

const usage = `quiver — a tool platform for AI agents

Usage:
  quiver serve                        run the API (migrates first)
  quiver migrate up|down|status       database migrations
  quiver keys create --account NAME [--read-only]
                                      create the account if needed and a new API key for it
                                      (a read-only key reads, and calls only read-only actions)
  quiver keys revoke KEY              revoke an API key (every replica refuses it within QUIVER_CACHE_TTL)
  quiver catalog check                validate the embedded catalog
  quiver help                         this text

Configuration comes from the environment (see README.md): QUIVER_ADDR,
DATABASE_URL, REDIS_URL, QUIVER_DATA_DIR, QUIVER_SECRET_KEY, ...
`

func main() {
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		reexecServe()
	}
	// The first signal stops serve (readiness off, QUIVER_SHUTDOWN_DELAY,
	// then the drain: app.Serve); a second one ends the process at once, as
	// an operator expects, and says so. One channel, with room for both,
	// takes them from the start: a second signal sent right behind the
	// first is not lost while the first is being handled. SIGHUP (the
	// terminal serve ran in was closed) drains too: Go's default for it
	// cut the calls in flight off.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-signals
		stop()
		<-signals
		logging.New(os.Stderr, "error").Error("a second signal: stopping at once; requests in flight are cut off")
		os.Exit(1)
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.As(err, new(loggedError)) {
			fmt.Fprintln(os.Stderr, "quiver:", err)
		}
		os.Exit(1)
	}
}

const (
	serveUsage      = "usage: quiver serve\n(it takes no arguments: it is configured by environment variables; see README.md)"
	catalogUsage    = "usage: quiver catalog check"
	keysUsage       = "usage: quiver keys create --account NAME [--read-only] | quiver keys revoke KEY"
	keysCreateUsage = "usage: quiver keys create --account NAME [--read-only]"
	keysRevokeUsage = "usage: quiver keys revoke KEY"
)

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// commandHelp is the usage a command asked for help prints, or "" when it
// was not asked: `quiver serve --help`, `quiver keys revoke -h`.
func commandHelp(args []string) string {
	if !slices.ContainsFunc(args[1:], isHelp) {
		return ""
	}
	switch args[0] {
	case "serve":
		return serveUsage
	case "catalog":
		return catalogUsage
	case "migrate":
		return migrateUsage
	case "keys":
		switch {
		case len(args) > 1 && args[1] == "create":
			return keysCreateUsage + "\n  --account NAME  the account's name (made if new)\n  --read-only     a key that reads, and calls only actions annotated read-only"
		case len(args) > 1 && args[1] == "revoke":
			return keysRevokeUsage
		}
		return keysUsage
	}
	return ""
}

// loggedError is an error already written to the JSON log: serve's, once
// its logger exists, so that its stderr holds nothing but JSON lines (and
// the Go runtime's own output: see sysmon.go).
type loggedError struct{ error }

func (e loggedError) Unwrap() error { return e.error }

var errUsage = errors.New("unknown command; see `quiver help`")

// commandLineError is the usage error of a command line that names no
// command quiver has, or a command in a shape it does not take; nil lets
// the command read its configuration and check the rest (keys create's
// flags).
func commandLineError(args []string) error {
	switch args[0] {
	case "serve":
		if len(args) > 1 {
			return fmt.Errorf("serve takes no arguments (got %q); it is configured by environment variables", args[1])
		}
	case "migrate":
		if len(args) != 2 || !slices.Contains([]string{"up", "down", "status", "help"}, args[1]) {
			return errors.New(migrateUsage)
		}
	case "keys":
		if len(args) < 2 || (args[1] != "create" && (args[1] != "revoke" || len(args) != 3)) {
			return errors.New(keysUsage)
		}
	default:
		return fmt.Errorf("unknown command %q; see `quiver help`", args[0])
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if u := commandHelp(args); u != "" {
		fmt.Fprintln(stdout, u) // before the configuration is read: help needs none
		return nil
	}
	if args[0] == "catalog" { // needs no configuration either
		if len(args) != 2 || args[1] != "check" {
			return errors.New(catalogUsage)
		}
		return catalogCheck(stdout)
	}
	if err := commandLineError(args); err != nil { // before the configuration too: it is the first thing wrong
		return err
	}
	// Only serve opens and seals the tools' secrets: migrate and keys run
	// without QUIVER_SECRET_KEY (the secret reaches only the processes that
	// use it), and refuse a malformed one.
	fromEnv := config.FromEnvWithoutSealing
	if args[0] == "serve" {
		fromEnv = config.FromEnv
	}
	cfg, err := fromEnv()
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	logger := logging.New(stderr, cfg.LogLevel)
	for _, u := range cfg.Unread {
		msg, attrs := u.Name+" is set, but Quiver reads no such variable", []any{"variable", u.Name}
		if u.Suggest != "" {
			msg, attrs = msg+": did you mean "+u.Suggest+"?", append(attrs, "did_you_mean", u.Suggest)
		}
		logger.Warn(msg, attrs...)
	}
	switch args[0] { // each command line's shape is commandLineError's, checked above
	case "serve":
		if w := cfg.PublicURLWarning(); w != "" {
			logger.Warn(w, "variable", "QUIVER_PUBLIC_URL")
		}
		if w := cfg.PprofWarning(); w != "" {
			logger.Warn(w, "variable", "QUIVER_PPROF_ADDR")
		}
		if sysmonNote != "" {
			logger.Info("serving without adding GODEBUG "+serveGODEBUG+" (the setting saves CPU on every call: README, Performance)", "reason", sysmonNote)
		}
		err := serve(ctx, cfg, logger, stdout)
		var stopped stoppedStarting
		switch {
		case errors.As(err, &stopped):
			logger.Info("stopped by a signal before serving", "interrupted", stopped.err.Error())
		case err != nil:
			logger.Error("quiver serve failed", "error", err.Error())
			return loggedError{err}
		}
		return nil
	case "migrate":
		return migrate(ctx, cfg, logger, args[1], stdout)
	case "keys":
		return keys(ctx, cfg, logger, args[1:], stdout)
	}
	return errUsage
}

func catalogCheck(stdout io.Writer) error {
	if problems := catalog.Check(catalog.Embedded()); len(problems) > 0 {
		return problems
	}
	c, err := catalog.Load()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "catalog ok: %d tools\n", len(c.List("")))
	return nil
}

// firstKey makes the embedded database's first account and prints its API
// key, once: while no API key was ever made. A signal does not cut it
// short (it is two quick local writes); a crash between them leaves an
// account without a key, and the next start makes the key.
func firstKey(ctx context.Context, accts *accounts.Service, stdout io.Writer) error {
	ctx = context.WithoutCancel(ctx)
	has, err := accts.HasKeys(ctx)
	if err != nil || has {
		return err
	}
	key, _, err := accts.CreateKey(ctx, "default")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Created account \"default\". Its API key (shown once, keep it):\n%s\n", key)
	return nil
}

// stoppedStarting is a start a signal cut short (while the database did
// not answer, say): asked to stop, serve stopped, and exits 0.
type stoppedStarting struct{ err error }

func (s stoppedStarting) Error() string { return "stopped while starting: " + s.err.Error() }

func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger, stdout io.Writer) error {
	if cfg.Embedded() {
		// The embedded database serves one process: a second serve on the
		// folder would race the first for its migrations and first key.
		unlock, err := lockDataDir(cfg, "another quiver serve: the embedded database serves one process (for several replicas, set DATABASE_URL)")
		if err != nil {
			return err
		}
		defer unlock()
	}
	a, err := app.New(ctx, cfg, logger)
	if err != nil {
		if ctx.Err() != nil {
			return stoppedStarting{err}
		}
		return err
	}
	defer a.Close()
	return a.Serve(ctx, func(addr string) error {
		// The first key is made once the address is bound: a start that
		// fails to listen shows no key, which the next start would not
		// show again.
		if cfg.Embedded() {
			if err := firstKey(ctx, a.Accounts, stdout); err != nil {
				return err
			}
		}
		db := "postgres"
		if cfg.Embedded() {
			db = "sqlite (" + cfg.DataDir + ")"
		}
		cache := "redis"
		if cfg.RedisURL == "" {
			cache = "in-process"
		}
		logger.Info("quiver listening", "addr", addr, "database", db, "cache", cache)
		fmt.Fprintf(stdout, "Quiver listening on %s\n", addr)
		return nil
	})
}

func migrate(ctx context.Context, cfg *config.Config, logger *slog.Logger, verb string, stdout io.Writer) error {
	switch verb {
	case "up", "down", "status":
	case "help": // the -h forms are commandHelp's, before the configuration is read
		fmt.Fprintln(stdout, migrateUsage)
		return nil
	default:
		return errors.New(migrateUsage) // before the database is opened (or, embedded, made)
	}
	if cfg.Embedded() && verb != "status" {
		// Not under a running serve: reverting its schema would leave it
		// answering 500 to everything, and still ready.
		unlock, err := lockDataDir(cfg, "a quiver serve: stop it before migrating")
		if err != nil {
			return err
		}
		defer unlock()
	}
	s, err := app.OpenStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer s.Close()
	switch verb {
	case "up":
		done, err := s.MigrateUp(ctx)
		for _, m := range done {
			fmt.Fprintf(stdout, "applied %03d_%s\n", m.Version, m.Name)
		}
		if err == nil && len(done) == 0 {
			fmt.Fprintln(stdout, "up to date")
		}
		return err
	case "down":
		m, err := s.MigrateDown(ctx)
		if m != nil {
			fmt.Fprintf(stdout, "reverted %03d_%s\n", m.Version, m.Name)
		} else if err == nil {
			fmt.Fprintln(stdout, "nothing to revert")
		}
		return err
	default: // status
		st, err := s.MigrationStatus(ctx)
		for _, m := range st {
			state := "pending"
			switch {
			case m.Unknown:
				state = "applied (unknown to this binary: a newer one applied it)"
			case m.Applied:
				state = "applied"
			}
			fmt.Fprintf(stdout, "%03d_%s\t%s\n", m.Version, m.Name, state)
		}
		return err
	}
}

const migrateUsage = "usage: quiver migrate up|down|status"

// lockDataDir holds the embedded data folder for this process (the lock a
// serve holds while it runs), or says by whom it is held.
func lockDataDir(cfg *config.Config, holder string) (unlock func(), err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("QUIVER_DATA_DIR: cannot create %s: %w", cfg.DataDir, err)
	}
	unlock, err = filelock.TryLock(filepath.Join(cfg.DataDir, "serve.lock"))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("QUIVER_DATA_DIR %s is in use by %s", cfg.DataDir, holder)
	}
	if err != nil {
		return nil, fmt.Errorf("QUIVER_DATA_DIR: %w", err)
	}
	return unlock, nil
}

// accountFlag is --account, which may be given once: a second one would
// otherwise quietly win.
type accountFlag struct {
	value string
	set   bool
}

func (f *accountFlag) String() string { return f.value }

func (f *accountFlag) Set(v string) error {
	if f.set {
		return errors.New("given twice; one key belongs to one account")
	}
	f.value, f.set = v, true
	return nil
}

func keys(ctx context.Context, cfg *config.Config, logger *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 2 && args[0] == "revoke" {
		// A key pasted with the space or line break beside it is that key;
		// what is no key at all is not quoted back (it may be most of one).
		key := strings.TrimSpace(args[1])
		if !accounts.WellFormed(key) {
			return errors.New("revoke: no such key: that is not an API key (qv_ and 40 letters and digits, as keys create prints it)")
		}
		s, err := app.OpenStore(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer s.Close()
		if _, err := s.MigrateUp(ctx); err != nil {
			return err
		}
		if err := accounts.New(s, 0, nil).Revoke(ctx, key); errors.Is(err, store.ErrNotFound) {
			return errors.New("revoke: no such key, or it is already revoked")
		} else if err != nil {
			return fmt.Errorf("revoke: %w", err)
		}
		fmt.Fprintln(stdout, "revoked")
		return nil
	}
	if len(args) == 0 || args[0] != "create" {
		return errors.New(keysUsage)
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors come back once, below; -h prints the flags
	var name accountFlag
	fs.Var(&name, "account", "account name")
	readOnly := fs.Bool("read-only", false, "a key that reads, and calls only actions annotated read-only")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("keys create: unexpected argument %q", fs.Arg(0))
	}
	name.value = strings.TrimSpace(name.value) // " alice" is alice, not a second account
	// Blank: nothing, or only characters that show nothing.
	if agents.Blank(name.value) {
		return errors.New("usage: quiver keys create --account NAME (a name that is not blank)")
	}
	if isKeysCreateFlag(name.value) {
		// `--account --read-only`, the name forgotten: flag took the next
		// argument as the name, and the key asked to be read-only was not.
		return fmt.Errorf("keys create: --account needs the account's name, and %q is a flag of keys create: %s", name.value, keysCreateUsage)
	}
	if !utf8.ValidString(name.value) {
		return errors.New("keys create: --account must be valid UTF-8")
	}
	// The rule an agent's or a tool's name keeps: one line of text.
	if utf8.RuneCountInString(name.value) > 200 || agents.HasControl(name.value) {
		return errors.New("keys create: --account must be at most 200 characters, without control characters")
	}
	s, err := app.OpenStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.MigrateUp(ctx); err != nil {
		return err
	}
	svc := accounts.New(s, 0, nil)
	create := svc.CreateKey
	if *readOnly {
		create = svc.CreateReadOnlyKey
	}
	key, acct, err := create(ctx, name.value)
	if err != nil {
		return err
	}
	kind := "API key"
	if *readOnly {
		kind = "Read-only API key"
	}
	fmt.Fprintf(stdout, "%s for account %q (id %d), shown once:\n%s\n", kind, acct.Name, acct.ID, key)
	return nil
}

// isKeysCreateFlag reports whether name, given as --account's value, is
// one of keys create's own flags (-read-only, --account=x, -h).
func isKeysCreateFlag(name string) bool {
	if !strings.HasPrefix(name, "-") {
		return false
	}
	flagName, _, _ := strings.Cut(strings.TrimLeft(name, "-"), "=")
	switch flagName {
	case "account", "read-only", "h", "help":
		return true
	}
	return false
}
