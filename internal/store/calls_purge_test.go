package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// TestPurgeCalls: entries older than the retention go, in batches, until a
// purge deletes nothing; newer ones stay, also ones of lower ID written out
// of order. Both dialects, by each one's clock.
func TestPurgeCalls(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			acct, err := s.EnsureAccount(ctx, "purge-"+name)
			if err != nil {
				t.Fatal(err)
			}
			entry := func(id string, at time.Time) store.CallLog {
				return store.CallLog{CallID: id, AccountID: acct.ID, ToolID: 1, Action: "read", Outcome: "succeeded", CreatedAt: at}
			}
			// A recent entry first (lowest ID), then more old ones than one
			// purge takes, then recent ones.
			batch := []store.CallLog{entry("c_recent_first", now.Add(-time.Minute))}
			for i := range 1500 {
				batch = append(batch, entry(fmt.Sprintf("c_old_%d", i), now.Add(-48*time.Hour+time.Duration(i)*time.Second)))
			}
			batch = append(batch, entry("c_recent_1", now.Add(-time.Minute)), entry("c_recent_2", now))
			if err := s.InsertCalls(ctx, batch); err != nil {
				t.Fatal(err)
			}

			var purged []int64
			for {
				n, err := s.PurgeCalls(ctx, 24*time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				purged = append(purged, n)
				if len(purged) > 5 {
					t.Fatalf("purges keep deleting: %v", purged)
				}
			}
			if len(purged) != 2 || purged[0]+purged[1] != 1500 {
				t.Fatalf("purges deleted %v, want 1500 in two", purged)
			}
			left, _, err := s.ListCalls(ctx, acct.ID, nil, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range left {
				ids = append(ids, c.CallID)
			}
			if fmt.Sprint(ids) != "[c_recent_first c_recent_1 c_recent_2]" {
				t.Fatalf("left %v, want the three recent entries", ids)
			}
		})
	}
}

// TestPurgeCallsSkipsLockedEntries: on Postgres a purge takes the oldest
// entries no other purge holds, so replicas purging at once delete
// different entries instead of one waiting on the other's row locks.
func TestPurgeCallsSkipsLockedEntries(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "purgeskip")
	s, err := store.Open(ctx, store.Options{DatabaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatal(err)
	}
	acct, err := s.EnsureAccount(ctx, "purge-skip")
	if err != nil {
		t.Fatal(err)
	}
	var batch []store.CallLog
	for i := range 1500 {
		batch = append(batch, store.CallLog{CallID: fmt.Sprintf("c_%d", i), AccountID: acct.ID, ToolID: 1, Action: "read",
			Outcome: "succeeded", CreatedAt: time.Now().Add(-48 * time.Hour)})
	}
	if err := s.InsertCalls(ctx, batch); err != nil {
		t.Fatal(err)
	}

	// Another purge, mid-way: it holds the oldest thousand.
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT id FROM calls ORDER BY id LIMIT 1000 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := s.PurgeCalls(pctx, 24*time.Hour)
	if err != nil || n != 500 {
		t.Fatalf("a purge beside another: %d deleted, %v; want the 500 entries the other does not hold, at once", n, err)
	}
}
