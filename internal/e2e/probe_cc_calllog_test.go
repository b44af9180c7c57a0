package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeCCCallLogCursorNeverPassesAnEntry: a log entry whose write is
// still in flight when a page is read (a keyless batch being inserted, a
// keyed completion waiting on its commit, on any replica) stands here as
// an open transaction holding an INSERT INTO calls. Three entries written
// after it commit first. A walk that pages past them must still meet it
// (openapi.json: "a page never misses an entry written after an earlier
// page was read"): the first page waits for it, or lists it. Before, the
// page came back at once with a cursor past the ID it had taken, and the
// walk never listed it; a client tailing the log of two busy replicas
// missed up to half of 420 entries so.
func TestProbeCCCallLogCursorNeverPassesAnEntry(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true})
	tx := inFlightLogEntry(t, e, "c_in_flight")
	for i := range 3 {
		if r := e.call(callBody(e.id, fmt.Sprintf("/gap/%d", i), i), fmt.Sprintf("k-gap-%d", i)); r.Status != 200 {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	seen := map[string]bool{}
	// page reads one page into seen; it runs off the test's goroutine too,
	// so it reports what went wrong instead of failing the test.
	page := func(cursor string) (*string, error) {
		p := fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=2", e.id)
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.srv.Do("GET", p, nil)
		var pg struct {
			Calls []struct {
				CallID string `json:"call_id"`
			} `json:"calls"`
			NextCursor *string `json:"next_cursor"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &pg) != nil {
			return nil, fmt.Errorf("page: %d %s", r.Status, r.Body)
		}
		for _, c := range pg.Calls {
			seen[c.CallID] = true
		}
		return pg.NextCursor, nil
	}
	if next := walkAcross(t, tx, page); next == nil {
		t.Fatal("the first page has no next_cursor")
	}
	if !seen["c_in_flight"] || len(seen) != 4 {
		t.Fatalf("the walk listed %v: the entry in flight as it began is behind its cursor", seen)
	}
}

// TestCallLogListDoesNotHoldUpCalls: a log write that stays in flight (a
// transaction left open holding an INSERT INTO calls: a stalled writer)
// is waited for by a list a bounded time, and the list then answers 503
// unavailable; a keyed call made meanwhile completes, not held up behind
// the list (as it was behind 4b3b008's table lock, until it timed out as
// tool_outcome_unknown).
func TestCallLogListDoesNotHoldUpCalls(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true})
	tx := inFlightLogEntry(t, e, "c_stalled")
	listed := make(chan *testserver.Response, 1)
	go func() { listed <- e.srv.Do("GET", "/api/v1/agents/custom-tools/calls/", nil) }()
	time.Sleep(20 * time.Millisecond) // the list is waiting for the stalled write
	start := time.Now()
	if r := e.call(callBody(e.id, "/while-listing", 1), "k-while-listing"); r.Status != 200 {
		t.Fatalf("a keyed call while a list waits: %d %s", r.Status, r.Body)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a keyed call while a list waited took %v", took)
	}
	select {
	case r := <-listed:
		wantError(t, r, 503, "unavailable")
	case <-time.After(5 * time.Second):
		t.Fatal("the list still waits on the stalled writer")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if r := e.srv.Do("GET", "/api/v1/agents/custom-tools/calls/", nil); r.Status != 200 {
		t.Fatalf("the list once the writer is done: %d %s", r.Status, r.Body)
	}
}

// inFlightLogEntry is a call log entry of e's tool whose write is in flight
// (inFlight) until the returned transaction commits.
func inFlightLogEntry(t *testing.T, e *callEnv, callID string) *sql.Tx {
	t.Helper()
	db := pgOpen(t, e.srv.DatabaseURL)
	var account int64
	if err := db.QueryRow(`SELECT account_id FROM tools WHERE id = $1`, e.id).Scan(&account); err != nil {
		t.Fatal(err)
	}
	tx, _ := inFlight(t, db, `INSERT INTO calls (call_id, account_id, tool_id, action, outcome, duration_ms, created_at)
		VALUES ($1, $2, $3, 'get', 'succeeded', 1, now()) RETURNING id`, callID, account, e.id)
	return tx
}
