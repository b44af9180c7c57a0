package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// setup returns a migrated store of each dialect.
func setup(t *testing.T) map[string]*store.Store {
	t.Helper()
	out := map[string]*store.Store{}
	for name, opts := range map[string]store.Options{
		"postgres": {DatabaseURL: testdb.Postgres(t, "store")},
		"sqlite":   {DataDir: t.TempDir()},
	} {
		out[name] = openMigrated(t, name, opts)
	}
	return out
}

// openMigrated opens a store with opts, closed at cleanup, and migrates it
// up; name is its dialect, for the failure.
func openMigrated(t *testing.T, name string, opts store.Options) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.MigrateUp(ctx); err != nil {
		t.Fatalf("%s: migrate up: %v", name, err)
	}
	return s
}

func TestMigrateUpDownUp(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string]store.Options{
		"postgres": {DatabaseURL: testdb.Postgres(t, "migrate")},
		"sqlite":   {DataDir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := store.Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			all, _ := s.Migrations()
			// Status and down on a database Quiver never migrated read it,
			// and leave it as it was: no table of migrations appears.
			st, err := s.MigrationStatus(ctx)
			if err != nil || len(st) != len(all) || st[0].Applied {
				t.Fatalf("status before the first up: %+v, %v", st, err)
			}
			if m, err := s.MigrateDown(ctx); err != nil || m != nil {
				t.Fatalf("down before the first up: %v, %v", m, err)
			}
			if s.DB().Migrator().HasTable("schema_migrations") {
				t.Fatal("status or down created schema_migrations")
			}
			if done, err := s.MigrateUp(ctx); err != nil || len(done) != len(all) {
				t.Fatalf("up: %d applied, %v", len(done), err)
			}
			if done, err := s.MigrateUp(ctx); err != nil || len(done) != 0 {
				t.Fatalf("second up applied %d, %v", len(done), err)
			}
			for range all {
				if m, err := s.MigrateDown(ctx); err != nil || m == nil {
					t.Fatalf("down: %v, %v", m, err)
				}
			}
			if m, err := s.MigrateDown(ctx); err != nil || m != nil {
				t.Fatalf("down past the first: %v, %v", m, err)
			}
			if _, err := s.MigrateUp(ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			st, err = s.MigrationStatus(ctx)
			if err != nil || len(st) != len(all) || !st[0].Applied {
				t.Fatalf("status: %+v, %v", st, err)
			}

			// A newer binary applied a migration this one does not have:
			// status shows it, and down refuses rather than revert the
			// newest one it knows beneath it.
			if err := s.DB().Exec("INSERT INTO schema_migrations (version, name) VALUES (999, 'future')").Error; err != nil {
				t.Fatal(err)
			}
			st, err = s.MigrationStatus(ctx)
			if last := st[len(st)-1]; err != nil || len(st) != len(all)+1 || last.Version != 999 || last.Name != "future" || !last.Unknown || !last.Applied {
				t.Fatalf("status with a newer migration: %+v, %v", st, err)
			}
			if m, err := s.MigrateDown(ctx); !errors.Is(err, store.ErrUnknownMigration) || m != nil {
				t.Fatalf("down under a newer migration: %v, %v", m, err)
			}
			if st, _ := s.MigrationStatus(ctx); !st[len(st)-2].Applied {
				t.Fatal("down reverted a migration under the newer one")
			}
			if done, err := s.MigrateUp(ctx); err != nil || len(done) != 0 {
				t.Fatalf("up with a newer migration: %v, %v", done, err)
			}
		})
	}
}

func TestConcurrentMigrateOnPostgres(t *testing.T) {
	ctx := context.Background()
	url := testdb.Postgres(t, "migconc")
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(ctx, store.Options{DatabaseURL: url})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			_, err = s.MigrateUp(ctx)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestIdempotencyTransitions(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "idem")
			if err != nil {
				t.Fatal(err)
			}
			tok := "lease-1"
			rec := &store.IdemRecord{AccountID: acct.ID, Key: "k1", Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: "c1"}
			if ex, err := s.Reserve(ctx, rec, time.Minute, time.Hour); err != nil || ex != nil {
				t.Fatalf("first reserve: %+v, %v", ex, err)
			}
			other := "lease-2"
			dup := &store.IdemRecord{AccountID: acct.ID, Key: "k1", Fingerprint: []byte{2}, LeaseToken: &other, ToolID: 1, Action: "a", CallID: "c2"}
			ex, err := s.Reserve(ctx, dup, time.Minute, time.Hour)
			if err != nil || ex == nil || ex.State != store.IdemDispatched || ex.CallID != "c1" || ex.LeaseExpired() {
				t.Fatalf("second reserve: %+v, %v", ex, err)
			}
			if ok, _ := s.Complete(ctx, acct.ID, "k1", "wrong-token", 200, "application/json", []byte("{}"), nil); ok {
				t.Fatal("Complete with a foreign lease token succeeded")
			}
			body := []byte("{\"x\": 1 }\n")
			if ok, err := s.Complete(ctx, acct.ID, "k1", tok, 200, "application/json", body, nil); !ok || err != nil {
				t.Fatalf("Complete: %v %v", ok, err)
			}
			got, err := s.GetIdem(ctx, acct.ID, "k1")
			if err != nil || got.State != store.IdemSucceeded || string(got.Response) != string(body) || *got.StatusCode != 200 {
				t.Fatalf("GetIdem: %+v, %v", got, err)
			}
			if ok, _ := s.MarkUnknown(ctx, acct.ID, "k1", tok, nil); ok {
				t.Fatal("MarkUnknown after Complete succeeded")
			}

			// A lease that runs out is swept to outcome_unknown, once.
			tok3 := "lease-3"
			r3 := &store.IdemRecord{AccountID: acct.ID, Key: "k3", Fingerprint: []byte{3}, LeaseToken: &tok3, ToolID: 1, Action: "a", CallID: "c3"}
			if _, err := s.Reserve(ctx, r3, time.Millisecond, time.Hour); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			var swept []store.SweptKey
			for len(swept) == 0 && time.Now().Before(deadline) {
				swept, err = s.SweepExpiredLeases(ctx)
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(swept) != 1 || swept[0].Key != "k3" {
				t.Fatalf("swept %+v", swept)
			}
			if ok, _ := s.Complete(ctx, acct.ID, "k3", tok3, 200, "application/json", []byte("{}"), nil); ok {
				t.Fatal("Complete after the sweep overwrote outcome_unknown")
			}

			// Release frees the key for a new reservation.
			tok4 := "lease-4"
			r4 := &store.IdemRecord{AccountID: acct.ID, Key: "k4", Fingerprint: []byte{4}, LeaseToken: &tok4, ToolID: 1, Action: "a", CallID: "c4"}
			if _, err := s.Reserve(ctx, r4, time.Minute, time.Hour); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Release(ctx, acct.ID, "k4", tok4, nil); !ok || err != nil {
				t.Fatalf("Release: %v %v", ok, err)
			}
			if _, err := s.GetIdem(ctx, acct.ID, "k4"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("released key still there: %v", err)
			}
			// Not once its lease has run out: readers answer outcome_unknown
			// for it by then.
			tok7 := "lease-7"
			r7 := &store.IdemRecord{AccountID: acct.ID, Key: "k7", Fingerprint: []byte{7}, LeaseToken: &tok7, ToolID: 1, Action: "a", CallID: "c7"}
			if _, err := s.Reserve(ctx, r7, time.Millisecond, time.Hour); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // the database clock must pass a 1 ms lease
			if ok, err := s.Release(ctx, acct.ID, "k7", tok7, nil); ok || err != nil {
				t.Fatalf("Release after the lease ran out: %v %v", ok, err)
			}
			if got, err := s.GetIdem(ctx, acct.ID, "k7"); err != nil || got.State != store.IdemDispatched {
				t.Fatalf("the key whose lease ran out: %+v %v", got, err)
			}

			// A key past its TTL is new again.
			tok5 := "lease-5"
			r5 := &store.IdemRecord{AccountID: acct.ID, Key: "k5", Fingerprint: []byte{5}, LeaseToken: &tok5, ToolID: 1, Action: "a", CallID: "c5"}
			if _, err := s.Reserve(ctx, r5, time.Millisecond, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			s.MarkUnknown(ctx, acct.ID, "k5", tok5, nil)
			time.Sleep(5 * time.Millisecond) // the database clock must pass a 1 ms TTL
			tok6 := "lease-6"
			r6 := &store.IdemRecord{AccountID: acct.ID, Key: "k5", Fingerprint: []byte{6}, LeaseToken: &tok6, ToolID: 1, Action: "a", CallID: "c6"}
			if ex, err := s.Reserve(ctx, r6, time.Minute, time.Hour); err != nil || ex != nil {
				t.Fatalf("reserve after TTL: %+v, %v", ex, err)
			}
		})
	}
}

func TestConcurrentReserveHasOneWinner(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, _ := s.EnsureAccount(ctx, "race")
			var wg sync.WaitGroup
			var mu sync.Mutex
			winners := 0
			for i := 0; i < 30; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					tok := "t" + string(rune('a'+i))
					ex, err := s.Reserve(ctx, &store.IdemRecord{AccountID: acct.ID, Key: "same", Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: tok}, time.Minute, time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					if ex == nil {
						mu.Lock()
						winners++
						mu.Unlock()
					}
				}(i)
			}
			wg.Wait()
			if winners != 1 {
				t.Fatalf("%d reservations won, want 1", winners)
			}
		})
	}
}

func TestAgentsAndToolDetach(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, _ := s.EnsureAccount(ctx, "agents")
			t1 := &store.Tool{AccountID: acct.ID, CatalogName: "browser", Name: "browser", State: "configured", Config: "{}"}
			t2 := &store.Tool{AccountID: acct.ID, CatalogName: "browser", Name: "b2", State: "configured", Config: "{}", OAuthToken: "sealed-token"}
			if err := s.CreateTool(ctx, t1); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateTool(ctx, t2); err != nil {
				t.Fatal(err)
			}
			a := &store.Agent{AccountID: acct.ID, Name: "x", Status: "draft", Tools: []int64{t2.ID, t1.ID}}
			if err := s.CreateAgent(ctx, a); err != nil {
				t.Fatal(err)
			}
			deleted, err := s.DeleteTool(ctx, acct.ID, t2.ID)
			if err != nil {
				t.Fatal(err)
			}
			// The row as it was deleted: what a revocation reads its tokens from.
			if deleted.ID != t2.ID || deleted.AccountID != acct.ID || deleted.Name != "b2" || deleted.OAuthToken != "sealed-token" {
				t.Fatalf("DeleteTool returned %+v, want the deleted row %+v", deleted, t2)
			}
			if _, err := s.DeleteTool(ctx, acct.ID, t2.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleting it again: %v", err)
			}
			got, err := s.GetAgent(ctx, acct.ID, a.ID)
			if err != nil || len(got.Tools) != 1 || got.Tools[0] != t1.ID {
				t.Fatalf("agent after tool delete: %+v, %v", got, err)
			}
			if _, err := s.GetAgent(ctx, acct.ID+1000, a.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("another account's agent: %v", err)
			}
			// A tool deleted between the check and the write: the foreign
			// key refuses it, as a typed error.
			gone := &store.Agent{AccountID: acct.ID, Name: "y", Status: "draft", Tools: []int64{t2.ID}}
			if err := s.CreateAgent(ctx, gone); !errors.Is(err, store.ErrForeignKey) {
				t.Fatalf("agent with a deleted tool: %v, want ErrForeignKey", err)
			}
		})
	}
}

// TestCompleteNeedsALiveLease: once a lease has run out on the database's
// clock, readers take the outcome as unknown, so Complete must not store
// one, even before the sweeper marks the row; MarkUnknown still may.
func TestCompleteNeedsALiveLease(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "lease")
			if err != nil {
				t.Fatal(err)
			}
			tok := "lease-a"
			rec := &store.IdemRecord{AccountID: acct.ID, Key: "short", Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", CallID: "ca"}
			if _, err := s.Reserve(ctx, rec, 50*time.Millisecond, time.Hour); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				r, err := s.GetIdem(ctx, acct.ID, "short")
				if err != nil {
					t.Fatal(err)
				}
				if r.LeaseExpired() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the lease did not run out")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if ok, err := s.Complete(ctx, acct.ID, "short", tok, 200, "application/json", []byte("{}"), nil); ok || err != nil {
				t.Fatalf("Complete after the lease ran out: %v, %v", ok, err)
			}
			if ok, err := s.MarkUnknown(ctx, acct.ID, "short", tok, nil); !ok || err != nil {
				t.Fatalf("MarkUnknown after the lease ran out: %v, %v", ok, err)
			}
			if r, _ := s.GetIdem(ctx, acct.ID, "short"); r.State != store.IdemOutcomeUnknown {
				t.Fatalf("state %q", r.State)
			}
		})
	}
}

// TestInsertCallsRoundTrip writes a batch in each dialect and reads it back
// field by field; a call ID logged twice is kept once, in the order given,
// and pages the same way.
func TestInsertCallsRoundTrip(t *testing.T) {
	ctx := context.Background()
	key := "key-1"
	at := time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.FixedZone("CET", 3600))
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			acct, err := s.EnsureAccount(ctx, "calls-"+name)
			if err != nil {
				t.Fatal(err)
			}
			in := []store.CallLog{
				{CallID: "c_1", AccountID: acct.ID, ToolID: 7, Action: "read", Outcome: "ok", DurationMS: 3, CreatedAt: at},
				{CallID: "c_2", AccountID: acct.ID, ToolID: 8, Action: "send", Outcome: "tool_outcome_unknown", DurationMS: 30000,
					IdempotencyKey: &key, CreatedAt: at.Add(time.Second)},
			}
			if err := s.InsertCalls(ctx, in); err != nil {
				t.Fatal(err)
			}
			// c_1 again (a batch written twice) is skipped; c_3 is new.
			again := []store.CallLog{in[0], {CallID: "c_3", AccountID: acct.ID, ToolID: 7, Action: "read", Outcome: "error", CreatedAt: at}}
			again[0].Outcome = "changed"
			if err := s.InsertCalls(ctx, again); err != nil {
				t.Fatal(err)
			}
			got, _, err := s.ListCalls(ctx, acct.ID, nil, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			want := []store.CallLog{in[0], in[1], again[1]} // as written, whatever their times
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
			}
			for i, g := range got {
				w := want[i]
				if g.CallID != w.CallID || g.AccountID != w.AccountID || g.ToolID != w.ToolID || g.Action != w.Action ||
					g.Outcome != w.Outcome || g.DurationMS != w.DurationMS || !g.CreatedAt.Equal(w.CreatedAt) ||
					(g.IdempotencyKey == nil) != (w.IdempotencyKey == nil) || (g.IdempotencyKey != nil && *g.IdempotencyKey != *w.IdempotencyKey) {
					t.Errorf("entry %d: got %+v, want %+v", i, g, w)
				}
			}
			// One at a time, through the cursors: the same order.
			p := store.Page{Limit: 1, List: "calls"}
			for i := range want {
				page, next, err := s.ListCalls(ctx, acct.ID, nil, p)
				if err != nil || len(page) != 1 || page[0].CallID != want[i].CallID || (next == "") != (i == len(want)-1) {
					t.Fatalf("page %d: %v %+v next %q", i, err, page, next)
				}
				after, err := store.DecodeCursor("calls", next)
				if err != nil {
					t.Fatal(err)
				}
				p.After = max(p.After, after) // "" (the end) decodes to 0
			}
		})
	}
}

// Complete given a call log entry writes it with the outcome, or neither:
// a call whose lease is lost is not logged by it.
func TestCompleteWritesTheLogEntry(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "logged")
			if err != nil {
				t.Fatal(err)
			}
			reserve := func(key, tok, callID string) {
				rec := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 7, Action: "send", CallID: callID}
				if ex, err := s.Reserve(ctx, rec, time.Minute, time.Hour); err != nil || ex != nil {
					t.Fatalf("reserve %s: %+v, %v", key, ex, err)
				}
			}
			key := "k-logged"
			entry := func(callID, key string) *store.CallLog {
				return &store.CallLog{CallID: callID, AccountID: acct.ID, ToolID: 7, Action: "send", Outcome: "tool_error",
					DurationMS: 12, IdempotencyKey: &key, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
			}
			reserve("k-logged", "tok-a", "c_logged")
			if ok, err := s.Complete(ctx, acct.ID, key, "tok-a", 200, "application/json", []byte("{}"), entry("c_logged", key)); !ok || err != nil {
				t.Fatalf("Complete: %v %v", ok, err)
			}
			reserve("k-lost", "tok-b", "c_lost")
			if ok, err := s.Complete(ctx, acct.ID, "k-lost", "not-the-lease", 200, "application/json", []byte("{}"), entry("c_lost", "k-lost")); ok || err != nil {
				t.Fatalf("Complete with a foreign lease: %v %v", ok, err)
			}
			calls, _, err := s.ListCalls(ctx, acct.ID, nil, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 {
				t.Fatalf("the log holds %d entries (%+v); want the completed call's alone", len(calls), calls)
			}
			if c := calls[0]; c.CallID != "c_logged" || c.ToolID != 7 || c.Action != "send" || c.Outcome != "tool_error" ||
				c.DurationMS != 12 || c.IdempotencyKey == nil || *c.IdempotencyKey != key {
				t.Fatalf("the entry: %+v", c)
			}
		})
	}
}
