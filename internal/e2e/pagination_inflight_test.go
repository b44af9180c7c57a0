package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestListsWaitForCreatesInFlight: a create still being written when a page
// of the agents or tools list is read (here an open transaction holding an
// INSERT, taking its ID before three creates that commit first) is not
// passed by the page's cursor: the page waits for it or lists it, and the
// walk meets it. Before, the page came back at once with a cursor past the
// ID it had taken, and no later page listed it. The call log's is
// TestProbeCCCallLogCursorNeverPassesAnEntry.
func TestListsWaitForCreatesInFlight(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	db := pgOpen(t, srv.DatabaseURL)
	ctx := context.Background()
	var account int64
	if err := db.QueryRowContext(ctx, `SELECT id FROM accounts ORDER BY id LIMIT 1`).Scan(&account); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		table, path, field, insert string
		create                     any
	}{
		{"agents", "/api/v1/agents/", "agents",
			`INSERT INTO agents (account_id, name) VALUES ($1, 'in-flight') RETURNING id`, map[string]any{"name": "a"}},
		{"tools", "/api/v1/agents/custom-tools/", "tools",
			`INSERT INTO tools (account_id, catalog_name, name, state) VALUES ($1, 'browser', 'in-flight', 'configured') RETURNING id`,
			map[string]any{"mcp_tool": "browser"}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			tx, pending := inFlight(t, db, tc.insert, account)
			for i := range 3 {
				if r := srv.Do("POST", tc.path, tc.create); r.Status != 201 {
					t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
				}
			}
			seen := map[int64]bool{}
			page := func(cursor string) (*string, error) {
				p := tc.path + "?limit=2"
				if cursor != "" {
					p += "&cursor=" + url.QueryEscape(cursor)
				}
				r := srv.Do("GET", p, nil)
				var pg map[string]json.RawMessage
				var items []struct {
					ID int64 `json:"id"`
				}
				var next *string
				if r.Status != 200 || json.Unmarshal(r.Body, &pg) != nil || json.Unmarshal(pg[tc.field], &items) != nil ||
					json.Unmarshal(pg["next_cursor"], &next) != nil {
					return nil, fmt.Errorf("page: %d %s", r.Status, r.Body)
				}
				for _, it := range items {
					seen[it.ID] = true
				}
				return next, nil
			}
			walkAcross(t, tx, page)
			if !seen[pending] {
				t.Fatalf("the walk listed %v, not %d: the create in flight as it began is behind its cursor", seen, pending)
			}
		})
	}
}

// pgOpen opens the test server's Postgres database, closed at the test's end.
func pgOpen(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// inFlight runs insert (an INSERT … RETURNING id) in a transaction it
// leaves open, a write in flight, until the caller commits it (or the test
// ends), and returns the transaction and the row's ID.
func inFlight(t *testing.T, db *sql.DB, insert string, args ...any) (*sql.Tx, int64) {
	t.Helper()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	var id int64
	if err := tx.QueryRowContext(context.Background(), insert, args...).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return tx, id
}

// walkAcross walks a list with page (which reads the page at cursor and
// returns its next_cursor), its first page asked for while tx holds a write
// in flight: the page waits for it (up to 150 ms), and tx is committed
// meanwhile; a page that did not wait has come back by then. It returns the
// first page's next_cursor.
func walkAcross(t *testing.T, tx *sql.Tx, page func(cursor string) (*string, error)) *string {
	t.Helper()
	type answer struct {
		next *string
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		next, err := page("")
		first <- answer{next, err}
	}()
	time.Sleep(40 * time.Millisecond)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-first
	if got.err != nil {
		t.Fatalf("the first page: %v", got.err)
	}
	for next := got.next; next != nil; {
		var err error
		if next, err = page(*next); err != nil {
			t.Fatal(err)
		}
	}
	return got.next
}
