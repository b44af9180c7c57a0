package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// leaseSetup returns, for each dialect, a migrated store on a database of
// its own, opened twice (two replicas, each with a pool of one), and a tool
// in it.
func leaseSetup(t *testing.T) map[string][2]*store.Store {
	t.Helper()
	out := map[string][2]*store.Store{}
	for name, opts := range map[string]store.Options{
		"postgres": {DatabaseURL: testdb.Postgres(t, "lease"), MaxConns: 1},
		"sqlite":   {DataDir: t.TempDir()},
	} {
		out[name] = [2]*store.Store{openMigrated(t, name, opts), openMigrated(t, name, opts)}
	}
	return out
}

func leaseTool(t *testing.T, s *store.Store) *store.Tool {
	t.Helper()
	ctx := context.Background()
	acct, err := s.EnsureAccount(ctx, "lease")
	if err != nil {
		t.Fatal(err)
	}
	tool := &store.Tool{AccountID: acct.ID, CatalogName: "github-mcp", Name: "gh", State: "configured", Config: "{}", OAuthToken: "first"}
	if err := s.CreateTool(ctx, tool); err != nil {
		t.Fatal(err)
	}
	return tool
}

// leaseOf returns the tool's refresh lease owner as stored.
func leaseOf(t *testing.T, s *store.Store, id int64) string {
	t.Helper()
	var owner string
	if err := s.DB().Raw("SELECT refresh_lease FROM tools WHERE id = ?", id).Scan(&owner).Error; err != nil {
		t.Fatal(err)
	}
	return owner
}

// setLease gives the tool a lease of another owner that ends after left.
func setLease(t *testing.T, s *store.Store, id int64, owner string, left time.Duration) {
	t.Helper()
	now, err := s.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Exec("UPDATE tools SET refresh_lease = ?, refresh_lease_until = ? WHERE id = ?", owner, now+left.Milliseconds(), id).Error; err != nil {
		t.Fatal(err)
	}
}

// LockTool holds no connection while fn runs: with a pool of one, fn (a
// refresh at its provider) does not keep the store from answering a read.
// On Postgres it used to hold the row lock's transaction, and the read
// waited for it.
func TestLockToolHoldsNoConnection(t *testing.T) {
	for name, pair := range leaseSetup(t) {
		t.Run(name, func(t *testing.T) {
			s := pair[0]
			tool := leaseTool(t, s)
			err := s.LockTool(context.Background(), tool.AccountID, tool.ID, func(lt *store.Tool, save store.SaveToolFunc) error {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if _, err := s.GetTool(ctx, tool.AccountID, tool.ID); err != nil {
					t.Errorf("a read while fn runs, on a pool of one: %v", err)
				}
				lt.OAuthToken = "next"
				return save(lt)
			})
			if err != nil {
				t.Fatal(err)
			}
			row, err := s.GetTool(context.Background(), tool.AccountID, tool.ID)
			if err != nil || row.OAuthToken != "next" || row.Version != tool.Version+1 || leaseOf(t, s, tool.ID) != "" {
				t.Fatalf("after the save: %+v, lease %q, %v", row, leaseOf(t, s, tool.ID), err)
			}
		})
	}
}

// A second replica's LockTool waits while the first one's fn runs, and is
// then given what the first saved: a refresh token is spent once.
func TestLockToolAcrossReplicas(t *testing.T) {
	for name, pair := range leaseSetup(t) {
		t.Run(name, func(t *testing.T) {
			a, b := pair[0], pair[1]
			tool := leaseTool(t, a)
			ctx := context.Background()
			entered, release := make(chan struct{}), make(chan struct{})
			var saved atomic.Bool
			errs := make(chan error, 1)
			go func() {
				errs <- a.LockTool(ctx, tool.AccountID, tool.ID, func(lt *store.Tool, save store.SaveToolFunc) error {
					close(entered)
					<-release
					lt.OAuthToken = "from-a"
					err := save(lt)
					saved.Store(err == nil)
					return err
				})
			}()
			<-entered
			bdone := make(chan error, 1)
			go func() {
				bdone <- b.LockTool(ctx, tool.AccountID, tool.ID, func(lt *store.Tool, _ store.SaveToolFunc) error {
					if !saved.Load() || lt.OAuthToken != "from-a" || lt.Version != tool.Version+1 {
						t.Errorf("replica b ran with token %q version %d, before a saved (saved %t)", lt.OAuthToken, lt.Version, saved.Load())
					}
					return nil
				})
			}()
			select {
			case err := <-bdone:
				t.Fatalf("replica b's lock did not wait for a's: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(release)
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if err := <-bdone; err != nil {
				t.Fatal(err)
			}
			if owner := leaseOf(t, a, tool.ID); owner != "" {
				t.Fatalf("lease left behind: %q", owner)
			}
			row, _ := a.GetTool(ctx, tool.AccountID, tool.ID)
			if row.Version != tool.Version+1 {
				t.Fatalf("version %d after one save and one lock that saved nothing, want %d", row.Version, tool.Version+1)
			}
		})
	}
}

// The lease of an owner that is gone (a crashed replica) is taken over
// once it expires, not before; an expired one at once.
func TestLockToolTakesOverAnExpiredLease(t *testing.T) {
	for name, pair := range leaseSetup(t) {
		t.Run(name, func(t *testing.T) {
			s := pair[0]
			tool := leaseTool(t, s)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, left := range []time.Duration{-time.Second, 400 * time.Millisecond} {
				setLease(t, s, tool.ID, "gone", left)
				began := time.Now()
				err := s.LockTool(ctx, tool.AccountID, tool.ID, func(*store.Tool, store.SaveToolFunc) error { return nil })
				took := time.Since(began)
				if err != nil {
					t.Fatal(err)
				}
				if left > 0 && took < left-100*time.Millisecond || took > left+2*time.Second {
					t.Errorf("a lease with %s left was taken over after %s", left, took.Round(time.Millisecond))
				}
				if owner := leaseOf(t, s, tool.ID); owner != "" {
					t.Fatalf("lease after the take-over: %q", owner)
				}
			}
			// A live lease and a deadline that comes first: the caller
			// gives up, and the lease stays its owner's.
			setLease(t, s, tool.ID, "busy", time.Minute)
			short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := s.LockTool(short, tool.AccountID, tool.ID, func(*store.Tool, store.SaveToolFunc) error {
				t.Error("fn ran under another's live lease")
				return nil
			})
			if !errors.Is(err, store.ErrUnavailable) || leaseOf(t, s, tool.ID) != "busy" {
				t.Fatalf("waiting out a live lease past the deadline: %v, lease %q", err, leaseOf(t, s, tool.ID))
			}
		})
	}
}

// save is conditional on the lease as on the version: an owner whose lease
// was taken over, or whose tool changed, writes nothing, and frees no
// lease it no longer holds. A lock whose fn saves nothing frees its lease
// and leaves the version as it was.
func TestLockToolSaveNeedsTheLease(t *testing.T) {
	for name, pair := range leaseSetup(t) {
		t.Run(name, func(t *testing.T) {
			s := pair[0]
			tool := leaseTool(t, s)
			ctx := context.Background()
			err := s.LockTool(ctx, tool.AccountID, tool.ID, func(lt *store.Tool, save store.SaveToolFunc) error {
				setLease(t, s, tool.ID, "successor", time.Minute)
				lt.OAuthToken = "late"
				return save(lt)
			})
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("save after a take-over: %v, want ErrConflict", err)
			}
			row, _ := s.GetTool(ctx, tool.AccountID, tool.ID)
			if row.OAuthToken != "first" || row.Version != tool.Version || leaseOf(t, s, tool.ID) != "successor" {
				t.Fatalf("after a save without the lease: token %q version %d lease %q", row.OAuthToken, row.Version, leaseOf(t, s, tool.ID))
			}

			setLease(t, s, tool.ID, "", 0)
			err = s.LockTool(ctx, tool.AccountID, tool.ID, func(lt *store.Tool, save store.SaveToolFunc) error {
				cur := *lt
				cur.Name = "renamed"
				if err := s.UpdateToolConfig(ctx, &cur, cur.State, cur.Version); err != nil {
					t.Errorf("a configuration change under the lease: %v", err)
				}
				lt.OAuthToken = "late"
				return save(lt)
			})
			if !errors.Is(err, store.ErrConflict) || leaseOf(t, s, tool.ID) != "" {
				t.Fatalf("save after the tool changed: %v, lease %q", err, leaseOf(t, s, tool.ID))
			}

			fail := errors.New("provider down")
			row, _ = s.GetTool(ctx, tool.AccountID, tool.ID)
			err = s.LockTool(ctx, tool.AccountID, tool.ID, func(*store.Tool, store.SaveToolFunc) error { return fail })
			after, _ := s.GetTool(ctx, tool.AccountID, tool.ID)
			if !errors.Is(err, fail) || leaseOf(t, s, tool.ID) != "" || after.Version != row.Version {
				t.Fatalf("a lock that saved nothing: %v, lease %q, version %d→%d", err, leaseOf(t, s, tool.ID), row.Version, after.Version)
			}
			if err := s.LockTool(ctx, tool.AccountID, tool.ID+1000, nil); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("lock of no tool: %v", err)
			}
		})
	}
}
