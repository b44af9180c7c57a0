package store

import (
	"context"
	"strings"
	"time"

	"gorm.io/gorm"
)

// CallLog is one entry of the call log: no arguments, no results.
type CallLog struct {
	ID             int64     `json:"-"`
	CallID         string    `json:"call_id"`
	AccountID      int64     `json:"-"`
	ToolID         int64     `json:"tool"`
	Action         string    `json:"action"`
	Outcome        string    `json:"outcome"`
	DurationMS     int64     `json:"duration_ms"`
	IdempotencyKey *string   `json:"idempotency_key"`
	CreatedAt      time.Time `json:"created_at"`
}

// TableName maps CallLog to the calls table.
func (CallLog) TableName() string { return "calls" }

// InsertCalls writes a batch of call log entries; an entry whose call_id is
// already logged is skipped.
func (s *Store) InsertCalls(ctx context.Context, cs []CallLog) error {
	if len(cs) == 0 {
		return nil
	}
	if s.dialect == Postgres {
		return s.insertCallsPostgres(ctx, cs)
	}
	return interpret(s.db.WithContext(ctx).Exec(insertCallsSQL(len(cs)), callArgs(cs)...).Error)
}

// insertCallsPostgresSQL inserts a batch as one array per column: eight
// parameters whatever the batch's size, so neither the statement nor its
// parameters grow with it, and pgx encodes each column in one go.
var insertCallsPostgresSQL = rebind(Postgres, `INSERT INTO calls (`+callColumns+`)
SELECT * FROM unnest(`+callArrayParams+`)
ON CONFLICT (call_id) DO NOTHING`)

// callArrayParams are the parameters of callArrays, typed.
const callArrayParams = "?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::text[], ?::timestamptz[]"

func (s *Store) insertCallsPostgres(ctx context.Context, cs []CallLog) error {
	_, err := s.sql.ExecContext(ctx, insertCallsPostgresSQL, callArrays(cs)...)
	return interpret(err)
}

// callArrays are entries cs as one array per column, in callColumns'
// order.
func callArrays(cs []CallLog) []any {
	var (
		ids, actions, outcomes = make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs))
		accounts, tools, ms    = make([]int64, len(cs)), make([]int64, len(cs)), make([]int64, len(cs))
		keys                   = make([]*string, len(cs))
		at                     = make([]time.Time, len(cs))
	)
	for i, c := range cs {
		ids[i], accounts[i], tools[i], actions[i] = c.CallID, c.AccountID, c.ToolID, c.Action
		outcomes[i], ms[i], keys[i], at[i] = c.Outcome, c.DurationMS, c.IdempotencyKey, c.CreatedAt.UTC()
	}
	return []any{ids, accounts, tools, actions, outcomes, ms, keys, at}
}

// callColumns are the calls table's columns in the order callArgs gives
// them, for every statement that writes log entries.
const callColumns = "call_id, account_id, tool_id, action, outcome, duration_ms, idempotency_key, created_at"

func insertCallsSQL(n int) string {
	const head = "INSERT INTO calls (" + callColumns + ") VALUES "
	const row, tail = "(?, ?, ?, ?, ?, ?, ?, ?)", " ON CONFLICT (call_id) DO NOTHING"
	var b strings.Builder // one allocation: a batch has up to hundreds of rows
	b.Grow(len(head) + n*(len(row)+2) + len(tail))
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	return b.String()
}

func callArgs(cs []CallLog) []any {
	args := make([]any, 0, len(cs)*8)
	for _, c := range cs {
		args = append(args, c.CallID, c.AccountID, c.ToolID, c.Action, c.Outcome, c.DurationMS, c.IdempotencyKey, c.CreatedAt.UTC())
	}
	return args
}

// ListCalls returns one page of the account's call log, optionally of one
// tool, in the order the entries were written (by ID), so a page never
// misses an entry written after an earlier page was read. A keyed call's
// entry is written with its outcome, after the entries of keyless calls
// its replica has queued (Complete's earlier); one without a key in a batch
// up to logInterval later (calls.Engine.Calls writes its replica's batch
// first).
//
// Concurrent writers (keyed completions on every replica, the keyless
// batches, the sweeper) commit out of ID order, so the page is read settled
// (see settled). Settled waits for every writer of the table in flight,
// PurgeCalls' deletes too, though they add no ID: hence its short batches.
func (s *Store) ListCalls(ctx context.Context, accountID int64, toolID *int64, p Page) ([]CallLog, string, error) {
	var cs []CallLog
	find := func(db *gorm.DB, horizon int64) error {
		cs = nil
		q := db.Where("account_id = ? AND id > ? AND id <= ?", accountID, p.After, horizon)
		if toolID != nil {
			q = q.Where("tool_id = ?", *toolID)
		}
		return q.Order("id").Limit(p.Limit + 1).Find(&cs).Error
	}
	err := s.settled(ctx, "calls", find)
	if err != nil {
		return nil, "", interpret(err)
	}
	cs, next := trim(cs, p.Limit, p.List, func(c *CallLog) int64 { return c.ID })
	return cs, next, nil
}

// purgeBatch is how many of the call log's oldest entries one PurgeCalls
// looks at: one short delete, so lists waiting for the writes in flight
// (settled) and the log's own inserts hardly wait for it.
const purgeBatch = 1000

// PurgeCalls deletes call log entries older than retention, by the
// database's clock, among the purgeBatch entries of lowest ID, and returns
// how many it deleted. IDs follow the entries' times but for the order in
// which concurrent writers committed, so a sweep that repeats it until it
// deletes nothing leaves only entries within retention, bar a few written
// out of order, which a later sweep takes; no entry is deleted early. The
// lowest IDs come off the primary key's index, so it never reads the whole
// log, however much of it is kept.
func (s *Store) PurgeCalls(ctx context.Context, retention time.Duration) (int64, error) {
	db := s.db.WithContext(ctx)
	const oldest = `SELECT id FROM calls ORDER BY id LIMIT ?`
	var res *gorm.DB
	if s.dialect == Postgres {
		// SKIP LOCKED: replicas purging at once take different entries
		// rather than queue on each other's row locks.
		res = db.Exec(`DELETE FROM calls WHERE id IN (`+oldest+` FOR UPDATE SKIP LOCKED) AND created_at < now() - make_interval(secs => ?)`,
			purgeBatch, retention.Seconds())
	} else {
		// The embedded file has one process, whose clock is the database's.
		res = db.Exec(`DELETE FROM calls WHERE id IN (`+oldest+`) AND created_at < ?`, purgeBatch, time.Now().Add(-retention).UTC())
	}
	return res.RowsAffected, interpret(res.Error)
}
