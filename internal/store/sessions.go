package store

// Sessions Postgres ended. When Postgres ends the pool's sessions at once
// (pg_terminate_backend, a fast shutdown or failover, a pooler restarted),
// each idle connection holds an unread FATAL and does not know it is dead.
// pgx pings a connection before reusing it only after a second idle, so
// under load every one of them would be handed to a statement, fail it,
// and answer 503 while the database is up. Instead, the first FATAL of
// the kind is noted, and every connection idle since before it is pinged
// before its next use (one round trip each, only after such an event), so
// database/sql drops the dead ones and opens new sessions. The statement
// that met the FATAL runs once more where that is safe (sessionEnded).
// Connections cut with no word from Postgres (a network failure, a
// failover that moved the address) are the same news for the pool when a
// read meets one (connectionLost): the read runs once more, after the same
// mark.

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// endedSessions notes when Postgres last ended a session of the pool.
type endedSessions struct {
	at     atomic.Int64 // unix nanoseconds; 0: never
	logged atomic.Int64 // when one was last logged, likewise
	log    *slog.Logger
	count  func() // Options.SessionEnded; may be nil
}

// idleSessionTimeout is the SQLSTATE of a session Postgres ended for
// idling past idle_session_timeout.
const idleSessionTimeout = "57P05"

// endedQuiet is how long after a logged ended session others are taken as
// part of the same event, and not logged.
const endedQuiet = 10 * time.Second

// pgxIdlePing is how long a connection may sit idle before pgx pings it
// on reuse, as pgx does by default.
const pgxIdlePing = time.Second

// options are the pool's pgx options: note every session Postgres ends,
// and ping each connection idle since before the last one.
func (e *endedSessions) options() []stdlib.OptionOpenDB {
	return []stdlib.OptionOpenDB{
		stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
			next := c.OnPgError
			c.OnPgError = func(pc *pgconn.PgConn, pe *pgconn.PgError) bool {
				if endsSession(pe) {
					// A session that never started has no backend PID: it
					// was refused (57P03 while Postgres starts or stops).
					e.noted(pe, pc.PID() != 0)
				}
				if next == nil {
					return !strings.EqualFold(pe.Severity, "FATAL") // pgx's default: close on FATAL
				}
				return next(pc, pe)
			}
			return nil
		}),
		stdlib.OptionShouldPing(func(_ context.Context, p stdlib.ShouldPingParams) bool {
			if p.IdleDuration > pgxIdlePing {
				return true
			}
			at := e.at.Load()
			return at != 0 && time.Now().Add(-p.IdleDuration).UnixNano() <= at
		}),
	}
}

// noted records that Postgres ended a session, counts it
// (Options.SessionEnded), and logs the first of an event: an operator sees
// a failover, a pooler restart or a pg_terminate_backend once, not once
// per connection. A session refused as it started (57P03: Postgres is
// starting or stopping, so its other sessions are likely gone) marks the
// idle ones for a ping but ended nothing of ours: it is neither counted
// nor logged. Nor is an idle session's timeout, routine where a DBA set
// idle_session_timeout.
func (e *endedSessions) noted(pe *pgconn.PgError, started bool) {
	now := time.Now().UnixNano()
	e.at.Store(now)
	if !started || pe.Code == idleSessionTimeout {
		return
	}
	if e.count != nil {
		e.count()
	}
	if last := e.logged.Load(); now-last > int64(endedQuiet) && e.logged.CompareAndSwap(last, now) {
		e.log.Warn("postgres ended sessions of the pool; connections idle since are checked before reuse, and the statement that met one runs again where that is safe",
			"sqlstate", pe.Code, "message", pe.Message)
	}
}

// endsSession reports whether pe is Postgres ending the session it came
// on for an operator's reason (class 57P: a terminated backend, a shutdown,
// a crash of another backend, a server still starting): others of the pool
// are likely gone too.
func endsSession(pe *pgconn.PgError) bool {
	return strings.EqualFold(pe.Severity, "FATAL") && strings.HasPrefix(pe.Code, "57P")
}

// again runs f, a read, and once more when its statement met a session
// Postgres ended (sessionEnded) or a connection that failed under it
// (connectionLost: a network cut, a failover that moved the address).
// Either is the pool's news that its idle connections may be dead too:
// those idle since are pinged before reuse, so the repeat runs on a live
// one. Only statements safe to repeat go through it.
func (s *Store) again(ctx context.Context, f func() error) error {
	err := f()
	switch {
	case sessionEnded(err):
	case s.ended != nil && ctx.Err() == nil && connectionLost(err):
		s.ended.at.Store(time.Now().UnixNano())
	default:
		return err
	}
	return f()
}

// connectionLost reports whether err is the connection failing under a
// statement (reset, closed, cut short), not Postgres answering it, a
// session that could not be made, or a timeout (the statement may be
// slow, not lost).
func connectionLost(err error) bool {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case err == nil, errors.As(err, &pe), errors.As(err, &ce), pgconn.Timeout(err),
		errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, net.ErrClosed)
}

// sessionEnded reports whether err is a statement's session ended by
// Postgres (endsSession): the statement was never run or was rolled back
// with its session, bar a write whose commit was written just before (a
// write repeated on that account must be one that recognises its own).
// The pool has noted it, so a repeat runs on another session. A session
// Postgres refused to make (57P03 while it starts or stops) is not one:
// nothing was sent, and a repeat would only be refused again.
func sessionEnded(err error) bool {
	var pe *pgconn.PgError
	return err != nil && !notConnected(err) && errors.As(err, &pe) && endsSession(pe)
}
