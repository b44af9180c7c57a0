package e2e

import (
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCallLogBacklogIsPurgedOnTheNextSweeps: a purge that stops at its bound
// of batches (fifty thousand entries) with more left goes on at the next
// sweep, not thirty sweeps later. Before, a replica deleted at most fifty
// thousand entries a minute (about 833 a second) at the default sweep
// interval, fewer than one replica writes under load, so a busy log grew
// without bound past its retention.
func TestCallLogBacklogIsPurgedOnTheNextSweeps(t *testing.T) {
	// The first server only makes the schema, and keeps every entry.
	first := testserver.Start(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_CALL_LOG_RETENTION": "0"}})
	db := pgOpen(t, first.DatabaseURL)
	const old = 120000 // more than two purges' bound
	if _, err := db.Exec(`INSERT INTO calls (call_id, account_id, tool_id, action, outcome, duration_ms, created_at)
		SELECT 'c_backlog_' || g, 1, 1, 'get', 'succeeded', 1, now() - interval '2 days' FROM generate_series(1, $1) g`, old); err != nil {
		t.Fatal(err)
	}
	// The second purges at its start, then every 30th sweep: 30 s apart,
	// and one sweep (1 s) apart while a backlog is left.
	srv := testserver.Start(t, testserver.Options{DatabaseURL: first.DatabaseURL, Env: map[string]string{
		"QUIVER_CALL_LOG_RETENTION": "1h", "QUIVER_SWEEP_INTERVAL": "1s"}})
	left := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM calls WHERE call_id LIKE 'c_backlog_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Three stretches of 50 000 at most: about 2 s, and the bound is
	// generous for a slow machine, but well short of the 30 s a purge
	// would otherwise wait.
	for deadline := time.Now().Add(15 * time.Second); left() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d entries past their retention are left 15 s after the replica started (purged: %v)",
				left(), old, metricValue(t, srv, "quiver_call_log_purged_total"))
		}
	}
	if n := metricValue(t, srv, "quiver_call_log_purged_total"); n != old {
		t.Fatalf("quiver_call_log_purged_total = %v, want %d", n, old)
	}
}
