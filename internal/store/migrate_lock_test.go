package store_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testlog"
)

// A migration that waits for another process's migration lock says so
// (it waited in silence), and goes on once the lock is let go.
func TestMigrateWaitingForTheLockSaysSo(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "miglock")
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(store.MigrationLockID)); err != nil {
		t.Fatal(err)
	}

	var log testlog.Buffer
	s, err := store.Open(ctx, store.Options{DatabaseURL: url, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { _, err := s.MigrateUp(ctx); done <- err }()

	for limit := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), "waiting for the migration lock"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatalf("no word of the wait after 5 s; log:\n%s", log.String())
		}
	}
	select {
	case err := <-done:
		t.Fatalf("migrated (%v) while another process held the lock", err)
	default:
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(store.MigrationLockID)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the lock was let go")
	}
}
