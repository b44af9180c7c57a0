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
