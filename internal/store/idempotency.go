package store

// The idempotency statements are written out here, one per transition, so
// their concurrency argument can be read in one place:
//
//   - (account_id, key) is the primary key: of any number of racing
//     Reserve calls, across any number of replicas, exactly one INSERT
//     creates the row; the others see it and answer from it.
//   - Every later transition (Complete, MarkUnknown, Release) is a
//     conditional statement on state = 'dispatched' AND lease_token = the
//     token its Reserve created, so a replica that lost its lease (the
//     sweeper declared the outcome unknown) cannot overwrite that decision.
//     Complete and Release also need the lease unexpired: past it, readers
//     already take the outcome as unknown.
//   - Lease and expiry times are read from the database clock (s.nowMS) in
//     the same statement that compares them, never from a replica's clock.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Idempotency key states as stored.
const (
	IdemDispatched     = "dispatched"
	IdemSucceeded      = "succeeded"
	IdemOutcomeUnknown = "outcome_unknown"
)

// IdemRecord is a row of idempotency_keys. Times are milliseconds since the
// epoch on the database clock. NowMS is the database clock when the row was
// read, so callers judge the lease without their own clock.
type IdemRecord struct {
	AccountID      int64
	Key            string
	Fingerprint    []byte
	State          string
	LeaseToken     *string
	LeaseExpiresAt *int64
	ToolID         int64
	Action         string
	ReadOnly       *bool // Action was annotated read-only when reserved; nil: not recorded (an older row)
	CallID         string
	StatusCode     *int
	ContentType    *string
	Response       []byte
	CreatedAt      int64
	ExpiresAt      int64
	NowMS          int64 `gorm:"column:now_ms"`
	// ToolVersion, when set, is the version of the tool (ToolID) the call
	// was resolved against: Reserve then creates the row only while the
	// tool's row is at that version. Not stored.
	ToolVersion int64 `gorm:"-"`
}

// LeaseExpired reports whether a dispatched row's lease had run out when it
// was read.
func (r *IdemRecord) LeaseExpired() bool {
	return r.State == IdemDispatched && r.LeaseExpiresAt != nil && *r.LeaseExpiresAt <= r.NowMS
}

const idemColumns = `account_id, key, fingerprint, state, lease_token, lease_expires_at, tool_id, action, read_only,
	call_id, status_code, content_type, response, created_at, expires_at`

// idemSQL holds the hot statements, rendered once for the store's dialect
// (placeholders and clock). They run on database/sql directly: they are
// the whole database cost of a call, and GORM's reflection would add to it.
type idemSQL struct {
	reserve, get, expire, complete, markUnknown, release, toolVersion string
	// completeLogged, markUnknownLogged and releaseLogged are complete,
	// markUnknown and release with the call's log entry in one statement
	// (Postgres only; SQLite runs the two in a transaction); each returns
	// how many rows it changed, 0 or 1. Their After forms write earlier
	// calls' entries first (changeLogged).
	completeLogged, markUnknownLogged, releaseLogged dual
}

// dual is a logged statement, alone and after earlier calls' entries.
type dual struct{ alone, after string }

func newIdemSQL(d Dialect, now string) idemSQL {
	q := func(s string) string { return rebind(d, strings.ReplaceAll(s, "{now}", now)) }
	// Complete needs a live lease, not only our token: once the lease
	// has run out, any replica reading the row answers (and caches)
	// outcome_unknown before the sweeper gets to it, so a late Complete
	// would contradict them.
	const markUnknown = `UPDATE idempotency_keys
			SET state = 'outcome_unknown', lease_token = NULL, lease_expires_at = NULL
			WHERE account_id = ? AND key = ? AND state = 'dispatched' AND lease_token = ?`
	// Like Complete, Release needs a live lease: once it has run out,
	// readers answer outcome_unknown for the key, and freeing it then
	// would contradict them.
	const release = `DELETE FROM idempotency_keys
			WHERE account_id = ? AND key = ? AND state = 'dispatched' AND lease_token = ? AND lease_expires_at > {now}`
	const complete = `UPDATE idempotency_keys
			SET state = 'succeeded', status_code = ?, content_type = ?, response = ?, lease_token = NULL, lease_expires_at = NULL
			WHERE account_id = ? AND key = ? AND state = 'dispatched' AND lease_token = ? AND lease_expires_at > {now}`
	s := idemSQL{
		// ON CONFLICT DO NOTHING RETURNING returns a row only when this
		// statement inserted it: one round trip tells "new" from "taken".
		// The tool's row is read in the same statement: a call resolved
		// from a replica's cached copy of a tool another replica has since
		// deleted or changed (reconfigured, its token refreshed) reserves
		// nothing, and runs on the tool as it is or not at all.
		reserve: q(`INSERT INTO idempotency_keys
			(account_id, key, fingerprint, state, lease_token, lease_expires_at, tool_id, action, read_only, call_id, created_at, expires_at)
			SELECT ?, ?, ?, 'dispatched', ?, {now} + ?, ?, ?, ?, ?, {now}, {now} + ?
			WHERE ? = 0 OR EXISTS (SELECT 1 FROM tools WHERE id = ? AND account_id = ? AND version = ?)
			ON CONFLICT (account_id, key) DO NOTHING
			RETURNING created_at`),
		toolVersion: q(`SELECT version FROM tools WHERE id = ? AND account_id = ?`),
		get:         q(`SELECT ` + idemColumns + `, {now} FROM idempotency_keys WHERE account_id = ? AND key = ?`),
		// A key past its TTL is new again; a dispatched row with a live
		// lease never is, whatever the TTL says.
		expire: q(`DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND expires_at <= {now}
			AND (state <> 'dispatched' OR lease_expires_at <= {now})`),
		complete:    q(complete),
		markUnknown: q(markUnknown),
		release:     q(release),
	}
	if d == Postgres {
		const entry = `SELECT ?::text, ?::bigint, ?::bigint, ?::text, ?::text, ?::bigint, ?::text, ?::timestamptz`
		logged := func(change string) dual {
			return dual{
				alone: q(`WITH done AS (` + change + ` RETURNING 1), logged AS (
			INSERT INTO calls (` + callColumns + `)
			` + entry + ` FROM done
			ON CONFLICT (call_id) DO NOTHING)
		SELECT count(*) FROM done`),
				// The earlier entries whatever the change does, then
				// the call's if it did; one INSERT takes IDs in the
				// order its rows come, which ORDER BY sets.
				after: q(`WITH done AS (` + change + ` RETURNING 1), logged AS (
			INSERT INTO calls (` + callColumns + `)
			SELECT ` + callColumns + ` FROM (
				SELECT * FROM unnest(` + callArrayParams + `)
					WITH ORDINALITY AS earlier(` + callColumns + `, n)
				UNION ALL
				` + entry + `, 9223372036854775807 FROM done) entries
			ORDER BY n
			ON CONFLICT (call_id) DO NOTHING)
		SELECT count(*) FROM done`),
			}
		}
		s.completeLogged, s.markUnknownLogged, s.releaseLogged = logged(complete), logged(markUnknown), logged(release)
	}
	return s
}

// rebind turns ? placeholders into Postgres's $1, $2, …
func rebind(d Dialect, q string) string {
	if d != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Reserve inserts r in state dispatched with a lease, unless the key exists.
// It returns (nil, nil) when this call created the row, and the existing
// row otherwise. A row past its TTL is deleted and the insert tried again.
// With r.ToolVersion set, a key that is free while the tool is deleted or
// at another version is ErrToolChanged, and nothing is written. An error
// with ErrInterrupted means the insert may have been written.
//
// An insert whose session Postgres ended is sent once more, on another
// session: the first may have been written all the same, so a row holding
// r's lease token (unique to the call) is r's own, created by this Reserve.
func (s *Store) Reserve(ctx context.Context, r *IdemRecord, lease, ttl time.Duration) (*IdemRecord, error) {
	resent := false
	for attempt := 0; ; attempt++ {
		var created int64
		err := s.sql.QueryRowContext(ctx, s.idem.reserve,
			r.AccountID, r.Key, r.Fingerprint, r.LeaseToken, lease.Milliseconds(), r.ToolID, r.Action, r.ReadOnly, r.CallID, ttl.Milliseconds(),
			r.ToolVersion, r.ToolID, r.AccountID, r.ToolVersion,
		).Scan(&created)
		if err == nil {
			r.State, r.CreatedAt = IdemDispatched, created
			return nil, nil
		}
		if sessionEnded(err) && !resent {
			resent = true
			attempt--
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, resentErr(resent, interpretWrite(err))
		}
		existing, err := s.GetIdem(ctx, r.AccountID, r.Key)
		if err == nil && resent && existing.State == IdemDispatched && r.LeaseToken != nil && existing.LeaseToken != nil &&
			*existing.LeaseToken == *r.LeaseToken {
			r.State, r.CreatedAt = IdemDispatched, existing.CreatedAt
			return nil, nil // the insert that lost its session was written
		}
		if err == ErrNotFound && r.ToolVersion != 0 {
			if changed, terr := s.toolChanged(ctx, r); terr != nil || changed {
				return nil, cmp.Or(terr, ErrToolChanged)
			}
		}
		if err == ErrNotFound && attempt < 3 {
			continue // released between our insert and our read
		}
		if err != nil {
			return nil, resentErr(resent, err)
		}
		if existing.ExpiresAt > existing.NowMS || attempt > 0 {
			return existing, nil
		}
		if _, err := s.sql.ExecContext(ctx, s.idem.expire, r.AccountID, r.Key); err != nil {
			return nil, interpret(err)
		}
	}
}

// resentErr is err as Reserve returns it: once an insert that lost its
// session was sent again, the first may have been written whatever the
// statements after it met (a database shut down refuses the new session),
// so the error says so (ErrInterrupted) and the caller releases what it
// may hold, or the key would stay dispatched for a call that never ran.
func resentErr(resent bool, err error) error {
	if !resent || errors.Is(err, ErrInterrupted) {
		return err
	}
	return fmt.Errorf("%w (%w): %v", ErrUnavailable, ErrInterrupted, err)
}

// toolChanged reports whether r's tool is gone or at another version than
// r.ToolVersion.
func (s *Store) toolChanged(ctx context.Context, r *IdemRecord) (bool, error) {
	var version int64
	err := s.sql.QueryRowContext(ctx, s.idem.toolVersion, r.ToolID, r.AccountID).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, interpret(err)
	}
	return version != r.ToolVersion, nil
}

// GetIdem reads one key with the database clock. A read whose session
// Postgres ended runs once more, on another.
func (s *Store) GetIdem(ctx context.Context, accountID int64, key string) (*IdemRecord, error) {
	var r IdemRecord
	err := s.again(ctx, func() error {
		return s.sql.QueryRowContext(ctx, s.idem.get, accountID, key).Scan(
			&r.AccountID, &r.Key, &r.Fingerprint, &r.State, &r.LeaseToken, &r.LeaseExpiresAt, &r.ToolID, &r.Action, &r.ReadOnly,
			&r.CallID, &r.StatusCode, &r.ContentType, &r.Response, &r.CreatedAt, &r.ExpiresAt, &r.NowMS)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, interpret(err)
	}
	return &r, nil
}

// affectedOne runs a conditional statement and reports whether it changed
// its one row.
func (s *Store) affectedOne(ctx context.Context, q string, args ...any) (bool, error) {
	res, err := s.sql.ExecContext(ctx, q, args...)
	if err != nil {
		return false, interpret(err)
	}
	n, err := res.RowsAffected()
	return n == 1, interpret(err)
}

// Complete stores a known outcome: the exact response bytes. It returns
// false when the lease was lost (the row is no longer ours to decide) or
// has run out (on the database's clock), swept or not. Given a call log
// entry, it writes it with the outcome, in one statement on Postgres and
// one transaction on SQLite: a call whose outcome is stored is in the log,
// even if the process dies a moment later (a batched entry would be lost).
// earlier are entries of calls that ended before this one, written ahead
// of it whatever the outcome's fate (changeLogged).
func (s *Store) Complete(ctx context.Context, accountID int64, key, leaseToken string, status int, contentType string, body []byte, entry *CallLog, earlier ...CallLog) (bool, error) {
	return s.changeLogged(ctx, s.idem.complete, s.idem.completeLogged, entry, earlier, status, contentType, body, accountID, key, leaseToken)
}

// changeLogged runs the conditional statement change with args and, given
// a call log entry, writes the entry if (and only if) it changed its row:
// in one statement on Postgres (logged), in one transaction on SQLite.
// The entries of earlier calls, if any, are written first, and whether or
// not the change is made: the log is read in the order its entries were
// written, and a keyed call's entry would otherwise come before those of
// keyless calls that ended before it and wait in a batch (calls' log).
func (s *Store) changeLogged(ctx context.Context, change string, logged dual, entry *CallLog, earlier []CallLog, args ...any) (bool, error) {
	if entry == nil {
		if len(earlier) > 0 {
			if err := s.InsertCalls(ctx, earlier); err != nil {
				return false, err
			}
		}
		return s.affectedOne(ctx, change, args...)
	}
	if s.dialect == Postgres {
		q := logged.alone
		if len(earlier) > 0 {
			q, args = logged.after, append(args, callArrays(earlier)...)
		}
		var n int
		err := s.sql.QueryRowContext(ctx, q, append(args, callArgs([]CallLog{*entry})...)...).Scan(&n)
		return n == 1, interpretWrite(err)
	}
	tx, err := s.sql.BeginTx(ctx, nil)
	if err != nil {
		return false, interpret(err)
	}
	defer tx.Rollback()
	for batch := range slices.Chunk(earlier, 256) { // SQLite's bound on parameters
		if _, err := tx.ExecContext(ctx, insertCallsSQL(len(batch)), callArgs(batch)...); err != nil {
			return false, interpretWrite(err)
		}
	}
	res, err := tx.ExecContext(ctx, change, args...)
	if err != nil {
		return false, interpretWrite(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err == nil && len(earlier) > 0 {
			err = tx.Commit()
		}
		return false, interpretWrite(err)
	}
	if _, err := tx.ExecContext(ctx, insertCallsSQL(1), callArgs([]CallLog{*entry})...); err != nil {
		return false, interpretWrite(err)
	}
	return true, interpretWrite(tx.Commit())
}

// MarkUnknown records that a dispatched call has no known outcome. The key
// is terminal from then on. Given a call log entry, it writes it with the
// outcome, as Complete does: a call dispatched with no outcome, perhaps run,
// is in the log even if the process dies a moment after answering.
func (s *Store) MarkUnknown(ctx context.Context, accountID int64, key, leaseToken string, entry *CallLog, earlier ...CallLog) (bool, error) {
	return s.changeLogged(ctx, s.idem.markUnknown, s.idem.markUnknownLogged, entry, earlier, accountID, key, leaseToken)
}

// Release deletes a reservation whose call provably never reached the tool,
// so the key can be used again. Given a call log entry (a call the tool
// refused), it writes it with the release, as Complete does.
func (s *Store) Release(ctx context.Context, accountID int64, key, leaseToken string, entry *CallLog, earlier ...CallLog) (bool, error) {
	return s.changeLogged(ctx, s.idem.release, s.idem.releaseLogged, entry, earlier, accountID, key, leaseToken)
}

// SweptKey is a key the sweeper declared outcome_unknown.
type SweptKey struct {
	AccountID int64
	Key       string
	ToolID    int64
	Action    string
	CallID    string
	CreatedAt int64
}

// SweepExpiredLeases turns every dispatched row whose lease ran out into
// outcome_unknown, writes each one's call log entry with it (the replica
// that dispatched the call died before it could, and a sweeper that dies
// a moment later must not lose it either), and returns them. Safe to run
// concurrently in every replica: the WHERE clause re-checks each row under
// its row lock, so a row is swept once and a completion that won the race
// is never overwritten. On Postgres it is one statement; SQLite runs the
// two in a transaction.
func (s *Store) SweepExpiredLeases(ctx context.Context) ([]SweptKey, error) {
	sweep := `UPDATE idempotency_keys
		SET state = 'outcome_unknown', lease_token = NULL, lease_expires_at = NULL
		WHERE state = 'dispatched' AND lease_expires_at <= ` + s.nowMS + `
		RETURNING account_id, key, tool_id, action, call_id, created_at`
	if s.dialect == Postgres {
		rows, err := s.sql.QueryContext(ctx, `WITH swept AS (`+sweep+`), logged AS (
			INSERT INTO calls (`+callColumns+`)
			SELECT call_id, account_id, tool_id, action, 'outcome_unknown', 0, key, to_timestamp(created_at / 1000.0) FROM swept
			ON CONFLICT (call_id) DO NOTHING)
		SELECT account_id, key, tool_id, action, call_id, created_at FROM swept`)
		if err != nil {
			return nil, interpret(err)
		}
		return scanSwept(rows)
	}
	tx, err := s.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, interpret(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, sweep)
	if err != nil {
		return nil, interpret(err)
	}
	out, err := scanSwept(rows)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	entries := make([]CallLog, len(out))
	for i, k := range out {
		key := k.Key
		entries[i] = CallLog{CallID: k.CallID, AccountID: k.AccountID, ToolID: k.ToolID, Action: k.Action,
			Outcome: "outcome_unknown", IdempotencyKey: &key, CreatedAt: time.UnixMilli(k.CreatedAt).UTC()}
	}
	// SQLite takes a bounded number of parameters per statement.
	for batch := range slices.Chunk(entries, 256) {
		if _, err := tx.ExecContext(ctx, insertCallsSQL(len(batch)), callArgs(batch)...); err != nil {
			return nil, interpret(err)
		}
	}
	return out, interpret(tx.Commit())
}

func scanSwept(rows *sql.Rows) ([]SweptKey, error) {
	defer rows.Close()
	var out []SweptKey
	for rows.Next() {
		var k SweptKey
		if err := rows.Scan(&k.AccountID, &k.Key, &k.ToolID, &k.Action, &k.CallID, &k.CreatedAt); err != nil {
			return nil, interpret(err)
		}
		out = append(out, k)
	}
	return out, interpret(rows.Err())
}

// PurgeExpiredKeys deletes keys past their TTL (never one still leased) and
// returns how many.
func (s *Store) PurgeExpiredKeys(ctx context.Context) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM idempotency_keys WHERE expires_at <= ` + s.nowMS + `
		AND (state <> 'dispatched' OR lease_expires_at <= ` + s.nowMS + `)`)
	return res.RowsAffected, interpret(res.Error)
}
