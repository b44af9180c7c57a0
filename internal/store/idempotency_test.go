package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// A reservation records whether its action was read-only, and every later
// read of the row (a duplicate's Reserve, GetIdem, after the outcome is
// stored or declared unknown) gives it back; a row reserved without it
// reads as not known.
func TestReserveKeepsReadOnly(t *testing.T) {
	yes, no := true, false
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "readonly")
			if err != nil {
				t.Fatal(err)
			}
			for i, ro := range []*bool{&yes, &no, nil} {
				key, tok := fmt.Sprint("ro-", i), fmt.Sprint("lease-ro-", i)
				rec := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 1, Action: "a", ReadOnly: ro, CallID: key}
				if ex, err := s.Reserve(ctx, rec, time.Minute, time.Hour); err != nil || ex != nil {
					t.Fatalf("reserve %s: %+v, %v", key, ex, err)
				}
				other := tok + "-dup"
				dup := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &other, ToolID: 1, Action: "a", ReadOnly: &yes, CallID: key + "-dup"}
				ex, err := s.Reserve(ctx, dup, time.Minute, time.Hour)
				if err != nil || ex == nil || !sameBool(ex.ReadOnly, ro) {
					t.Fatalf("%s: a duplicate's Reserve read %v (%+v, %v), want %v", key, show(ex), ex, err, showBool(ro))
				}
				if i == 0 {
					_, err = s.Complete(ctx, acct.ID, key, tok, 200, "application/json", []byte("{}"), nil)
				} else {
					_, err = s.MarkUnknown(ctx, acct.ID, key, tok, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got, err := s.GetIdem(ctx, acct.ID, key); err != nil || !sameBool(got.ReadOnly, ro) || got.State == store.IdemDispatched {
					t.Fatalf("%s: GetIdem read %v (%+v, %v), want %v", key, show(got), got, err, showBool(ro))
				}
			}
		})
	}
}

// A row reserved before the read_only column existed reads as not known
// once it does.
func TestReadOnlyOfARowFromBeforeTheColumn(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string]store.Options{
		"postgres": {DatabaseURL: testdb.Postgres(t, "store")},
		"sqlite":   {DataDir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := store.Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.MigrateUp(ctx); err != nil {
				t.Fatal(err)
			}
			for { // down to before the column, past the migrations since
				m, err := s.MigrateDown(ctx)
				if err != nil || m == nil {
					t.Fatalf("down: %+v, %v", m, err)
				}
				if m.Name == "idempotency_read_only" {
					break
				}
			}
			acct, err := s.EnsureAccount(ctx, "older")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DB().Exec(`INSERT INTO idempotency_keys (account_id, key, fingerprint, state, tool_id, action, call_id,
				status_code, content_type, response, created_at, expires_at) VALUES (?, 'old', ?, 'succeeded', 1, 'a', 'c_old', 200, 'application/json', ?, 0, ?)`,
				acct.ID, []byte{1}, []byte("{}"), time.Now().Add(time.Hour).UnixMilli()).Error; err != nil {
				t.Fatal(err)
			}
			if _, err := s.MigrateUp(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := s.GetIdem(ctx, acct.ID, "old"); err != nil || got.ReadOnly != nil || got.CallID != "c_old" {
				t.Fatalf("the older row: %+v (read_only %v), %v", got, show(got), err)
			}
		})
	}
}

func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func showBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

func show(r *store.IdemRecord) string {
	if r == nil {
		return "no row"
	}
	return showBool(r.ReadOnly)
}

// A reservation that names its tool's version creates its row only while
// the tool is at that version: a tool deleted, or changed since the call
// resolved it (on another replica's cached copy), is ErrToolChanged and
// leaves the key free. A key already taken answers from its row, whatever
// the tool's version.
func TestReserveChecksTheToolsVersion(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, _ := s.EnsureAccount(ctx, "version")
			tool := &store.Tool{AccountID: acct.ID, CatalogName: "browser", Name: "browser", State: "configured", Config: "{}"}
			if err := s.CreateTool(ctx, tool); err != nil {
				t.Fatal(err)
			}
			rec := func(key string, version int64) *store.IdemRecord {
				tok := "tok-" + key
				return &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok,
					ToolID: tool.ID, Action: "a", CallID: "c-" + key, ToolVersion: version}
			}
			if ex, err := s.Reserve(ctx, rec("current", tool.Version), time.Minute, time.Hour); err != nil || ex != nil {
				t.Fatalf("the tool's own version: %+v, %v", ex, err)
			}
			if _, err := s.Reserve(ctx, rec("stale", tool.Version+1), time.Minute, time.Hour); !errors.Is(err, store.ErrToolChanged) {
				t.Fatalf("another version: %v, want ErrToolChanged", err)
			}
			if _, err := s.GetIdem(ctx, acct.ID, "stale"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the key a stale reservation named: %v, want it free", err)
			}
			if ex, err := s.Reserve(ctx, rec("current", tool.Version+1), time.Minute, time.Hour); err != nil || ex == nil {
				t.Fatalf("a key taken, named with another version: %+v, %v, want its row", ex, err)
			}
			if _, err := s.DeleteTool(ctx, acct.ID, tool.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Reserve(ctx, rec("deleted", tool.Version), time.Minute, time.Hour); !errors.Is(err, store.ErrToolChanged) {
				t.Fatalf("a deleted tool: %v, want ErrToolChanged", err)
			}
		})
	}
}
