package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
)

// A dispatched call whose outcome is unknown, or that the tool refused, is
// logged with the transition that says so (MarkUnknown's, the sweep's or
// Release's), never in a batch a crash could lose; a transition that
// changed nothing logs nothing.
func TestUnknownOutcomesLoggedWithTheirTransition(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "unknown-logged")
			if err != nil {
				t.Fatal(err)
			}
			reserve := func(key, tok, callID string, lease time.Duration) {
				t.Helper()
				r := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 3, Action: "send", CallID: callID}
				if ex, err := s.Reserve(ctx, r, lease, time.Hour); err != nil || ex != nil {
					t.Fatalf("reserve %s: %+v, %v", key, ex, err)
				}
			}
			entry := func(callID, key string) *store.CallLog {
				outcome := "outcome_unknown"
				if strings.HasPrefix(callID, "c-rel") {
					outcome = "rejected"
				}
				return &store.CallLog{CallID: callID, AccountID: acct.ID, ToolID: 3, Action: "send", Outcome: outcome,
					DurationMS: 7, IdempotencyKey: &key, CreatedAt: time.Now().UTC()}
			}

			reserve("k-mark", "tok-mark", "c-mark", time.Minute)
			if ok, err := s.MarkUnknown(ctx, acct.ID, "k-mark", "tok-mark", entry("c-mark", "k-mark")); !ok || err != nil {
				t.Fatalf("MarkUnknown: %v, %v", ok, err)
			}
			// Not this call's row any more: no change, no entry.
			if ok, err := s.MarkUnknown(ctx, acct.ID, "k-mark", "tok-mark", entry("c-other", "k-mark")); ok || err != nil {
				t.Fatalf("second MarkUnknown: %v, %v", ok, err)
			}

			reserve("k-rel", "tok-rel", "c-rel", time.Minute)
			if ok, err := s.Release(ctx, acct.ID, "k-rel", "tok-rel", entry("c-rel", "k-rel")); !ok || err != nil {
				t.Fatalf("Release: %v, %v", ok, err)
			}
			if ok, err := s.Release(ctx, acct.ID, "k-rel", "tok-rel", entry("c-rel-again", "k-rel")); ok || err != nil {
				t.Fatalf("second Release: %v, %v", ok, err)
			}

			start := time.Now()
			reserve("k-swept", "tok-swept", "c-swept", time.Millisecond)
			deadline := time.Now().Add(5 * time.Second)
			var swept []store.SweptKey
			for len(swept) == 0 && time.Now().Before(deadline) {
				if swept, err = s.SweepExpiredLeases(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if len(swept) != 1 || swept[0].CallID != "c-swept" {
				t.Fatalf("swept %+v", swept)
			}

			calls, _, err := s.ListCalls(ctx, acct.ID, nil, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 3 {
				t.Fatalf("logged %+v, want c-mark, c-rel and c-swept", calls)
			}
			for i, want := range []struct {
				callID, key, outcome string
				ms                   int64
			}{{"c-mark", "k-mark", "outcome_unknown", 7}, {"c-rel", "k-rel", "rejected", 7}, {"c-swept", "k-swept", "outcome_unknown", 0}} {
				c := calls[i]
				if c.CallID != want.callID || c.Outcome != want.outcome || c.IdempotencyKey == nil || *c.IdempotencyKey != want.key ||
					c.DurationMS != want.ms || c.ToolID != 3 || c.Action != "send" {
					t.Errorf("entry %d: %+v, want %s", i, c, want.callID)
				}
			}
			// The swept entry is dated when its call was reserved.
			if at := calls[2].CreatedAt; at.Before(start.Add(-2*time.Second)) || at.After(time.Now().Add(2*time.Second)) {
				t.Errorf("swept entry dated %s, reserved at %s", at, start)
			}
		})
	}
}

// TestEarlierEntriesWrittenFirst: the entries of earlier calls a change of a
// key's row is given are written ahead of the call's own, in their order,
// and whether or not the change is made; the call's own only if it is. The
// log is read in the order its entries were written.
func TestEarlierEntriesWrittenFirst(t *testing.T) {
	for name, s := range setup(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct, err := s.EnsureAccount(ctx, "earlier-first")
			if err != nil {
				t.Fatal(err)
			}
			entry := func(callID string, key *string) store.CallLog {
				return store.CallLog{CallID: callID, AccountID: acct.ID, ToolID: 3, Action: "send", Outcome: "succeeded",
					DurationMS: 7, IdempotencyKey: key, CreatedAt: time.Now().UTC()}
			}
			key, tok := "k-1", "tok-1"
			r := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 3, Action: "send", CallID: "c-keyed"}
			if ex, err := s.Reserve(ctx, r, time.Minute, time.Hour); err != nil || ex != nil {
				t.Fatalf("reserve: %+v, %v", ex, err)
			}
			own := entry("c-keyed", &key)
			if ok, err := s.Complete(ctx, acct.ID, key, tok, 200, "application/json", []byte(`{}`), &own,
				entry("c-a", nil), entry("c-b", nil), entry("c-c", nil)); !ok || err != nil {
				t.Fatalf("Complete: %v, %v", ok, err)
			}
			// The row is no longer this lease's: the earlier entries are
			// written all the same, the call's own is not.
			late := entry("c-late", &key)
			if ok, err := s.Complete(ctx, acct.ID, key, tok, 200, "application/json", []byte(`{}`), &late, entry("c-d", nil)); ok || err != nil {
				t.Fatalf("second Complete: %v, %v", ok, err)
			}
			// MarkUnknown and Release write them first too, Release even
			// with no entry of its own.
			reserve := func(key, tok string) {
				t.Helper()
				r := &store.IdemRecord{AccountID: acct.ID, Key: key, Fingerprint: []byte{1}, LeaseToken: &tok, ToolID: 3, Action: "send", CallID: "c-" + key}
				if ex, err := s.Reserve(ctx, r, time.Minute, time.Hour); err != nil || ex != nil {
					t.Fatalf("reserve %s: %+v, %v", key, ex, err)
				}
			}
			reserve("k-2", "tok-2")
			unknown := entry("c-unknown", nil)
			if ok, err := s.MarkUnknown(ctx, acct.ID, "k-2", "tok-2", &unknown, entry("c-e", nil), entry("c-f", nil)); !ok || err != nil {
				t.Fatalf("MarkUnknown: %v, %v", ok, err)
			}
			reserve("k-3", "tok-3")
			if ok, err := s.Release(ctx, acct.ID, "k-3", "tok-3", nil, entry("c-g", nil)); !ok || err != nil {
				t.Fatalf("Release without an entry: %v, %v", ok, err)
			}
			reserve("k-4", "tok-4")
			released := entry("c-released", nil)
			if ok, err := s.Release(ctx, acct.ID, "k-4", "tok-4", &released, entry("c-h", nil)); !ok || err != nil {
				t.Fatalf("Release: %v, %v", ok, err)
			}
			got, _, err := s.ListCalls(ctx, acct.ID, nil, store.Page{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.CallID)
			}
			if want := "c-a c-b c-c c-keyed c-d c-e c-f c-unknown c-g c-h c-released"; strings.Join(ids, " ") != want {
				t.Errorf("log %v, want %s", ids, want)
			}
		})
	}
}
