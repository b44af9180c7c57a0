package e2e

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestDatabaseRefusingConnections: a Postgres that answers but refuses a
// new session (ALLOW_CONNECTIONS false here; a database dropped or a
// password changed refuse it the same way, with a FATAL error) provably ran
// nothing of ours. Before, once the pool's sessions were gone, every keyed
// call, every key lookup and the call log answered 500 internal: pgx
// reports the refusal as a Postgres error, and its code was none of those
// read as unavailable. Now each is 503 unavailable, nothing is dispatched,
// and once the database takes sessions again the call runs, once.
func TestDatabaseRefusingConnections(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true})
	if r := e.call(callBody(e.id, "/warm", 1), "k-warm"); r.Status != 200 {
		t.Fatalf("warm-up: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := dbName(t, e.srv.DatabaseURL)
	allow := func(on bool) {
		t.Helper()
		qs := []string{"ALTER DATABASE " + name + " ALLOW_CONNECTIONS true"}
		if !on {
			qs = []string{"ALTER DATABASE " + name + " ALLOW_CONNECTIONS false",
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name[1:len(name)-1] + "'"}
		}
		for _, q := range qs {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	allow(false)
	t.Cleanup(func() { allow(true) })

	// The first request may meet a session the terminate ended (57P01,
	// already unavailable); the rest need new sessions, which are refused.
	for _, k := range []string{"k-down-1", "k-down-2", "k-down-3"} {
		wantError(t, e.call(callBody(e.id, "/down", 1), k), 503, "unavailable")
	}
	wantError(t, e.srv.Do("GET", "/api/v1/idempotency-keys/k-warm", nil), 503, "unavailable")
	wantError(t, e.srv.Do("GET", "/api/v1/agents/custom-tools/calls/", nil), 503, "unavailable")
	wantError(t, e.srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "down"}), 503, "unavailable")
	if n := e.tool.count("/down"); n != 0 {
		t.Fatalf("the tool ran %d times while the database refused sessions", n)
	}

	allow(true)
	testserver.Eventually(t, 10*time.Second, "the database to take sessions again", func() bool {
		return e.call(callBody(e.id, "/down", 1), "k-down-2").Status == 200
	})
	if n := e.tool.count("/down"); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}
