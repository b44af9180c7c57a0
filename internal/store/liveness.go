package store

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// liveness is what Watch knows of Postgres: down while its session has
// ended and none could be opened since.
type liveness struct {
	dsn  string
	down atomic.Bool
}

// Down reports whether the database is known to be down now (Watch). It is
// one atomic load, for the call path; SQLite is never down.
func (s *Store) Down() bool {
	return s.live != nil && s.live.down.Load()
}

// WatchApplicationName is the application_name of Watch's session, unless
// the database URL names one.
const WatchApplicationName = "quiver liveness watch"

// The pauses between Watch's attempts to open a session while Postgres is
// down, doubling from the first to the last.
const (
	watchPauseMin = 50 * time.Millisecond
	watchPauseMax = time.Second
	// watchConnectTimeout bounds one attempt to open a session.
	watchConnectTimeout = 2 * time.Second
)

// Watch keeps one session of its own open to Postgres until ctx ends, so
// that the database going away is seen when it happens, not at the next
// query: Postgres ends every session when it shuts down, and its crash or a
// cut connection ends them too, while a call resolved from this replica's
// caches would otherwise meet no database before it is dispatched. When the
// session ends Watch opens another at once, and only if that fails is the
// database down (Down), until a session opens again. A session Postgres
// ended while it stays up (pg_terminate_backend, idle_session_timeout) is
// so replaced without a moment down, and a refusal Postgres itself gives
// (too many connections, a password refused) does not make it down either:
// it answers, and the pool's sessions may well work. Returns at once on
// SQLite.
func (s *Store) Watch(ctx context.Context) {
	if s.live == nil {
		return
	}
	cfg, err := pgx.ParseConfig(s.live.dsn)
	if err != nil {
		s.log.Warn("cannot watch the database's sessions", "error", hidePassword(err, s.live.dsn))
		return
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > watchConnectTimeout {
		cfg.ConnectTimeout = watchConnectTimeout
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = WatchApplicationName // for pg_stat_activity
	}
	pause := watchPauseMin
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if gone(err) && !s.live.down.Swap(true) {
				s.log.Warn("the database is down: calls without an Idempotency-Key are refused (503) until it answers again",
					"error", hidePassword(err, s.live.dsn))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, watchPauseMax)
			continue
		}
		pause = watchPauseMin
		if s.live.down.Swap(false) {
			s.log.Info("the database answers again")
		}
		// No LISTEN: nothing is ever notified, and this returns when the
		// session ends, or with ctx.
		_, _ = conn.WaitForNotification(ctx)
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}
}

// gone reports whether a failure to open a session means Postgres is not
// there: anything but an answer of its own, or its answer that it is
// starting up or shutting down (SQLSTATE class 57P, operator intervention).
func gone(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return true
	}
	return strings.HasPrefix(pg.Code, "57P")
}
