package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// TestWatchOutlivesAnEndedSession: Postgres ending the watch's session while
// it stays up (pg_terminate_backend, as idle_session_timeout or an operator
// would) is not the database going down: a new session replaces it, and
// Down never reports true meanwhile. SQLite is never down, and its Watch
// returns at once.
func TestWatchOutlivesAnEndedSession(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := store.Open(ctx, store.Options{DatabaseURL: testdb.Postgres(t, "watch")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	watched := make(chan struct{})
	go func() { s.Watch(ctx); close(watched) }()
	t.Cleanup(func() { cancel(); <-watched })

	sessions := func() (pids []int64) {
		t.Helper()
		err := s.DB().Raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?`,
			store.WatchApplicationName).Scan(&pids).Error
		if err != nil {
			t.Fatal(err)
		}
		return pids
	}
	waitSession := func(not int64) int64 {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if pids := sessions(); len(pids) == 1 && pids[0] != not {
				return pids[0]
			}
		}
		t.Fatalf("no watch session other than %d: %v", not, sessions())
		return 0
	}
	pid := waitSession(0)
	for range 3 {
		if err := s.DB().Exec(`SELECT pg_terminate_backend(?)`, pid).Error; err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if s.Down() {
				t.Fatal("Down after a session Postgres ended while it stayed up")
			}
		}
		pid = waitSession(pid)
	}

	lite, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	lite.Watch(ctx) // returns at once
	if lite.Down() {
		t.Error("SQLite is down")
	}
}
