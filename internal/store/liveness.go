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
// down or refuses it, doubling from the first to the last.
const (
	watchPauseMin = 50 * time.Millisecond
	watchPauseMax = time.Second
	// watchConnectTimeout bounds one attempt to open a session.
	watchConnectTimeout = 2 * time.Second
	// A session quiet for watchProbeEvery is asked whether Postgres still
	// answers, and ended if it does not within watchProbeTimeout.
	watchProbeEvery   = time.Second
	watchProbeTimeout = 2 * time.Second
)

// Watch keeps one session of its own open to Postgres until ctx ends, so
// that the database going away is seen when it happens, not at the next
// query: Postgres ends every session when it shuts down, and its crash or a
// cut connection ends them too, while a call resolved from this replica's
// caches would otherwise meet no database before it is dispatched. A
// database that stops answering without ending anything (a network
// partition, a frozen host) is found by asking the session every
// watchProbeEvery: no answer within watchProbeTimeout ends it.
//
// When the session ends Watch opens another at once, and only if that
// fails is the database down (Down), until Postgres answers again. A
// session Postgres ended while it stays up (pg_terminate_backend,
// idle_session_timeout) is so replaced without a moment down, and a
// refusal Postgres itself gives (too many connections, a password refused)
// is an answer: not down, and the pool's sessions may well work; Watch
// logs it and keeps trying. Returns at once on SQLite.
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
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
		pause = min(2*pause, watchPauseMax)
		return true
	}
	refused := false // the last attempt was refused by Postgres
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if ctx.Err() != nil {
			if err == nil {
				closeWatch(conn)
			}
			return
		}
		if err != nil {
			if gone(err) {
				refused = false
				if !s.live.down.Swap(true) {
					s.log.Warn("the database is down: calls without an Idempotency-Key are refused (503) until it answers again",
						"error", hidePassword(err, s.live.dsn))
				}
			} else {
				s.answers()
				if !refused {
					refused = true
					s.log.Warn("the database refuses a session to watch it; trying again", "error", hidePassword(err, s.live.dsn))
				}
			}
			if !wait() {
				return
			}
			continue
		}
		refused = false
		s.answers()
		opened := time.Now()
		s.watchSession(ctx, conn)
		closeWatch(conn)
		// A session that ended soon after it opened is not opened again at
		// once: something ends every session (a pooler, a short
		// idle_session_timeout), and a loop would only spin.
		if time.Since(opened) >= watchPauseMax {
			pause = watchPauseMin
		} else if !wait() {
			return
		}
	}
}

// answers marks the database up, if it was down.
func (s *Store) answers() {
	if s.live.down.Swap(false) {
		s.log.Info("the database answers again")
	}
}

// watchSession returns when conn's session ends, when it stops answering,
// or with ctx. No LISTEN: nothing is ever notified, and the wait for a
// notification returns when the session ends, or after watchProbeEvery,
// which leaves the session as it was.
func (s *Store) watchSession(ctx context.Context, conn *pgx.Conn) {
	for {
		wctx, cancel := context.WithTimeout(ctx, watchProbeEvery)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil || conn.IsClosed() {
			return
		}
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			return // the session ended, or said something unasked
		}
		pctx, cancel := context.WithTimeout(ctx, watchProbeTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return
		}
	}
}

func closeWatch(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
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
