package e2e

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestReadOnlyDatabase: a Postgres that takes no changes (a standby a
// failover has not promoted, a DATABASE_URL pointing at a replica, or
// default_transaction_read_only) answers every statement that writes with
// an error. Before, that error was a 500 on every call with a key and every
// create, and /readyz said ready. Now /readyz says not ready, naming the
// database, and each such request is 503 unavailable with nothing run; once
// the database takes changes again, so does Quiver.
func TestReadOnlyDatabase(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	tool := startToolServer(t)
	id := connectHTTPTool(t, srv.URL, srv.Key, tool.URL)
	if r := srv.Do("POST", callPath, callBody(id, "/echo", 1), "Idempotency-Key", "k-before"); r.Status != 200 {
		t.Fatalf("call before: %d %s", r.Status, r.Body)
	}

	ctx := context.Background()
	db, err := sql.Open("pgx", srv.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	admin, err := db.Conn(ctx) // its session keeps the default it began with
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() }) // after the cleanup below, which uses it
	readOnly := func(on bool) {
		t.Helper()
		v := "off"
		if on {
			v = "on"
		}
		for _, q := range []string{
			"ALTER DATABASE " + dbName(t, srv.DatabaseURL) + " SET default_transaction_read_only = " + v,
			// New sessions take the new default: end Quiver's.
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
		} {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	readOnly(true)
	t.Cleanup(func() { readOnly(false) })

	testserver.Eventually(t, 10*time.Second, "/readyz to say not ready", func() bool {
		return srv.Do("GET", "/readyz", nil).Status == 503
	})
	ran := tool.count("/echo")
	for _, key := range []string{"k-ro-1", "k-ro-2"} {
		r := srv.Do("POST", callPath, callBody(id, "/echo", 2), "Idempotency-Key", key)
		wantError(t, r, 503, "unavailable")
	}
	if r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"}); r.Status != 503 || r.JSON()["error"] != "unavailable" {
		t.Errorf("create while read-only: %d %s, want 503 unavailable", r.Status, r.Body)
	}
	if n := tool.count("/echo"); n != ran {
		t.Errorf("the tool ran %d times while the database took no changes", n-ran)
	}
	// By now Quiver's connections are new ones, which answer a ping.
	if r := srv.Do("GET", "/readyz", nil); r.Status != 503 || !strings.Contains(string(r.Body), "database") {
		t.Errorf("/readyz: %d %s, want 503 naming the database", r.Status, r.Body)
	}

	readOnly(false)
	testserver.Eventually(t, 10*time.Second, "/readyz to say ready again", func() bool {
		return srv.Do("GET", "/readyz", nil).Status == 200
	})
	testserver.Eventually(t, 10*time.Second, "a call to succeed again", func() bool {
		return srv.Do("POST", callPath, callBody(id, "/echo", 3), "Idempotency-Key", "k-ro-1").Status == 200
	})
}

// dbName is the database of a postgres:// URL, quoted as an identifier.
func dbName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return `"` + strings.TrimPrefix(u.Path, "/") + `"`
}
