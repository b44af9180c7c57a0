// Package store is Quiver's persistence: GORM models and queries over
// Postgres in production and a pure-Go SQLite file as the embedded default.
// It owns the schema migrations and translates database errors into the
// domain errors below, in one place (interpret). It knows nothing of HTTP or
// of the packages above it.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Errors the store returns instead of driver errors.
var (
	// ErrNotFound: no such row (or it belongs to another account).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique constraint refused the write.
	ErrConflict = errors.New("store: conflict")
	// ErrForeignKey: a write named a row that does not exist.
	ErrForeignKey = errors.New("store: foreign key violation")
	// ErrUnavailable: the database could not be reached.
	ErrUnavailable = errors.New("store: database unavailable")
	// ErrToolChanged: Reserve found the call's tool deleted or at another
	// version than the one the call was resolved against.
	ErrToolChanged = errors.New("store: the tool changed")
	// ErrInterrupted comes with ErrUnavailable from a write whose
	// connection failed once it was made: the change may have been applied
	// (a commit sent, its answer lost), and must not be assumed undone.
	ErrInterrupted = errors.New("store: the database connection failed during a write")
	// ErrWritesInFlight comes with ErrUnavailable from a list that waits
	// for the writes in flight when it was asked for, and they did not end
	// in time: the database answers, slowly.
	ErrWritesInFlight = errors.New("store: writes in flight did not end in time")
)

// Dialect names the database behind a Store.
type Dialect string

// The supported databases.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Store is the database handle. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	sql     *sql.DB // the same pool, for the hot statements
	idem    idemSQL
	dialect Dialect
	// nowMS is the SQL expression for the database clock in milliseconds.
	nowMS string
	// migrateLock is the file whose lock SQLite's migrations hold, so that
	// two processes starting on one data folder do not both apply them.
	migrateLock string
	log         *slog.Logger   // never nil
	ended       *endedSessions // Postgres only
	live        *liveness      // Postgres only
}

// Options configures Open.
type Options struct {
	// DatabaseURL is a postgres:// URL; empty means SQLite in DataDir.
	DatabaseURL string
	// MaxConns caps the connections to Postgres; 0 means DefaultMaxConns.
	MaxConns int
	DataDir  string
	Logger   *slog.Logger
	// SessionEnded, if set, is called once for each session of the pool
	// Postgres ends (sessions.go), for a metric: not for one ended by
	// idle_session_timeout, nor for one Postgres refused to open. It runs on
	// the goroutine that met the ending, and must not block.
	SessionEnded func()
}

// DefaultMaxConns is Options.MaxConns's default (QUIVER_DB_MAX_CONNS).
const DefaultMaxConns = 32

// openTimeout bounds Open's first round trip to Postgres.
const openTimeout = 30 * time.Second

// Open connects to the database. It does not migrate.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	gcfg := &gorm.Config{Logger: logger.New(discardWriter{}, logger.Config{LogLevel: logger.Silent}), TranslateError: false}
	if opts.DatabaseURL != "" {
		// GORM's own ping at open takes no context: a database host that
		// drops packets would hold the process, deaf to SIGTERM, for as
		// long as the kernel keeps trying. Ours below has the caller's
		// context and a bound.
		pgcfg := *gcfg
		pgcfg.DisableAutomaticPing = true
		ended := &endedSessions{log: opts.Logger, count: opts.SessionEnded}
		db, err := gorm.Open(postgres.New(postgres.Config{DSN: opts.DatabaseURL, OptionOpenDB: ended.options()}), &pgcfg)
		if err != nil {
			return nil, hidePassword(fmt.Errorf("store: open postgres: %w", err), opts.DatabaseURL)
		}
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		maxConns := opts.MaxConns
		if maxConns <= 0 {
			maxConns = DefaultMaxConns
		}
		sqlDB.SetMaxOpenConns(maxConns)
		sqlDB.SetMaxIdleConns(maxConns)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		s := &Store{db: db, sql: sqlDB, dialect: Postgres, nowMS: "(extract(epoch from clock_timestamp()) * 1000)::bigint", log: opts.Logger, ended: ended,
			live: &liveness{dsn: opts.DatabaseURL}}
		s.idem = newIdemSQL(s.dialect, s.nowMS)
		pctx, cancel := context.WithTimeout(ctx, openTimeout)
		defer cancel()
		err = s.Ping(pctx)
		if err != nil && ctx.Err() == nil && pctx.Err() != nil {
			err = fmt.Errorf("no answer within %s (connect_timeout in the URL bounds each attempt): %w", openTimeout, err)
		}
		return s, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("QUIVER_DATA_DIR: cannot create %s: %w", opts.DataDir, err)
	}
	path := filepath.Join(opts.DataDir, "quiver.db")
	// The file holds stored call results and sealed secrets: only its owner
	// may read it (SQLite gives its -wal and -shm files the same mode).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("QUIVER_DATA_DIR: cannot open %s: %w", path, err)
	}
	f.Close()
	// The pragmas run in this order on each new connection: busy_timeout
	// first, so that switching a new file to WAL, which takes a lock, waits
	// for another process doing the same rather than failing at once
	// (SQLITE_BUSY, seen with four commands starting on a new folder).
	dsn := path +
		"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := openSQLite(ctx, dsn, gcfg)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	// SQLite has one writer; a single connection serializes writes without
	// "database is locked" errors. No transaction is held across a tool call.
	sqlDB.SetMaxOpenConns(1)
	s := &Store{db: db, sql: sqlDB, dialect: SQLite, nowMS: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
		migrateLock: path + ".migrate-lock", log: opts.Logger}
	s.idem = newIdemSQL(s.dialect, s.nowMS)
	return s, s.Ping(ctx)
}

// sqliteOpenWait bounds how long openSQLite retries a busy database.
const sqliteOpenWait = 10 * time.Second

// openSQLite opens the embedded database, trying again while it answers
// SQLITE_BUSY. The busy handler does not cover every lock the first
// connection's pragmas take: SQLite returns SQLITE_BUSY at once, without
// waiting, where waiting could deadlock, as when several processes switch
// a new file to WAL together (TestFoundationOneServePerDataDir met it with
// four commands starting on a new folder).
func openSQLite(ctx context.Context, dsn string, gcfg *gorm.Config) (*gorm.DB, error) {
	deadline := time.Now().Add(sqliteOpenWait)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		db, err := gorm.Open(sqlite.Open(dsn), gcfg)
		var code interface{ Code() int }
		if err == nil || !errors.As(err, &code) || code.Code()&0xff != sqliteBusy || time.Now().Add(pause).After(deadline) {
			return db, err
		}
		if db != nil {
			if sqlDB, derr := db.DB(); derr == nil {
				sqlDB.Close()
			}
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

type discardWriter struct{}

func (discardWriter) Printf(string, ...any) {}

// Dialect reports which database the store uses.
func (s *Store) Dialect() Dialect { return s.dialect }

// DB exposes the GORM handle to tests of this package's users.
func (s *Store) DB() *gorm.DB { return s.db }

// Ping checks the database is reachable.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return interpret(sqlDB.PingContext(ctx))
}

// ErrReadOnly is a database that takes no changes now (wrapped in
// ErrUnavailable): a Postgres standby, or one with
// default_transaction_read_only set.
var ErrReadOnly = errors.New("store: the database takes no changes (read-only)")

// Ready reports whether the database can take requests, which all write:
// it answers, and (Postgres) it is not read-only, as a standby a failover
// has not promoted, or a DATABASE_URL pointing at a replica, is. Ping alone
// would call such a database ready while every change fails.
func (s *Store) Ready(ctx context.Context) error {
	if s.dialect != Postgres {
		return s.Ping(ctx)
	}
	var ro string
	err := s.again(ctx, func() error {
		return s.sql.QueryRowContext(ctx, "SELECT current_setting('transaction_read_only')").Scan(&ro)
	})
	if err != nil {
		return interpret(err)
	}
	if ro == "on" {
		return fmt.Errorf("%w: %w", ErrUnavailable, ErrReadOnly)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Now returns the database clock in milliseconds since the epoch.
func (s *Store) Now(ctx context.Context) (int64, error) {
	var ms int64
	err := s.db.WithContext(ctx).Raw("SELECT " + s.nowMS).Scan(&ms).Error
	return ms, interpret(err)
}

// interpretWrite is interpret for a statement or transaction that changes
// something. Only a connection that could not be made provably sent
// nothing; any other lost connection leaves the change unknown. (pgx may
// report a commit whose answer was lost as "conn closed", safe to retry,
// so its own SafeToRetry cannot tell.)
func interpretWrite(err error) error {
	out := interpret(err)
	if !errors.Is(out, ErrUnavailable) {
		return out
	}
	if notConnected(err) || outOfResources(err) || readOnly(err) || stopped(err) {
		return out
	}
	return fmt.Errorf("%w (%w): %v", ErrUnavailable, ErrInterrupted, err)
}

// outOfResources reports whether the database refused a statement for want
// of disk, memory or connections (Postgres's disk_full, out_of_memory and
// too_many_connections; SQLite's full disk). The database answered, so a
// change was not applied; it cannot take requests until an operator frees
// what ran out. (Postgres's configuration_limit_exceeded, one statement
// over a limit, is the statement's fault and stays an error.)
func outOfResources(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "53100" || pgErr.Code == "53200" || pgErr.Code == "53300"
	}
	return strings.Contains(err.Error(), "database or disk is full")
}

// readOnly reports whether the database refused a change because it takes
// none now: a Postgres standby or default_transaction_read_only
// (read_only_sql_transaction), SQLite's read-only file. It answered, so
// nothing was applied; it cannot take requests until it is writable again.
func readOnly(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "25006"
	}
	return strings.Contains(err.Error(), "attempt to write a readonly database")
}

// stopped reports whether Postgres stopped a statement and rolled it back:
// statement_timeout or a cancel (query_canceled), lock_timeout
// (lock_not_available), a deadlock or a serialization failure. Nothing was
// applied; the same request may well succeed a moment later.
func stopped(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "57014", "55P03", "40001", "40P01":
		return true
	}
	return false
}

// notConnected reports whether err is a connection that could not be made
// (or that database/sql gave up on before sending): nothing was sent.
func notConnected(err error) bool {
	var connErr *pgconn.ConnectError
	msg := err.Error()
	return errors.As(err, &connErr) || errors.Is(err, driver.ErrBadConn) ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "failed to connect")
}

// interpret is the one place where database errors become store errors.
func interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	// A session that could not be made sent nothing, whatever the server
	// said when it refused one (a FATAL error: the database does not take
	// connections, was dropped, or refused the credentials): pgx reports
	// that as a Postgres error too, but its code is no statement's.
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		case pgErr.Code == "23503":
			return fmt.Errorf("%w: %s", ErrForeignKey, pgErr.ConstraintName)
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", outOfResources(err), readOnly(err), stopped(err):
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "UNIQUE constraint failed") {
		return fmt.Errorf("%w: %s", ErrConflict, msg)
	}
	if strings.Contains(msg, "FOREIGN KEY constraint failed") {
		return fmt.Errorf("%w: %s", ErrForeignKey, msg)
	}
	var netErr net.Error
	// A failed disk I/O may or may not have rolled a change back (SQLite's
	// words): unavailable, and for a write interrupted.
	if notConnected(err) || outOfResources(err) || readOnly(err) || strings.Contains(msg, "disk I/O error") || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(msg, "conn closed") || strings.Contains(msg, "broken pipe") {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}

// hidePassword masks in err's text the password a query of dsn carries
// (postgres://host/db?password=…): the driver's parse error quotes the URL
// with the user information's password masked, not the query's.
func hidePassword(err error, dsn string) error {
	u, perr := url.Parse(dsn)
	if perr != nil {
		return err
	}
	var pairs []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		if k != "password" || v == "" {
			continue
		}
		pairs = append(pairs, v, "xxxxx")
		if d, derr := url.QueryUnescape(v); derr == nil && d != v {
			pairs = append(pairs, d, "xxxxx")
		}
	}
	if pairs == nil {
		return err
	}
	return &maskedError{msg: strings.NewReplacer(pairs...).Replace(err.Error()), err: err}
}

// maskedError is err with its text as msg.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
