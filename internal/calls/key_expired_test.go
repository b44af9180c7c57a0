package calls_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
)

// TestKeyPastItsTTLWithItsLeaseOverIsUnknown: a key whose row is still
// dispatched, its lease run out and its TTL too (no sweeper marked it
// meanwhile: every replica was down), is new again for a call, which runs
// it afresh; GET /idempotency-keys/{key} says so (404), as it does of any
// key past its TTL, rather than outcome_unknown.
func TestKeyPastItsTTLWithItsLeaseOverIsUnknown(t *testing.T) {
	t.Parallel()
	for name, opts := range storeModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, acct, row := toolInStore(t, opts(t), "pastttl", `{"base_url":"x"}`)
			e := calls.New(calls.Options{Store: s, Tools: &cachingTools{s: &changingStore{Store: s, t: t}, conn: &sendConnector{}},
				Cache: replaycache.NewMemory(), CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
			token := "t-dead"
			rec := &store.IdemRecord{AccountID: acct.ID, Key: "dead", Fingerprint: make([]byte, 32), LeaseToken: &token,
				ToolID: row.ID, Action: "send", CallID: "c_dead"}
			if existing, err := s.Reserve(ctx, rec, 10*time.Millisecond, 20*time.Millisecond); err != nil || existing != nil {
				t.Fatalf("reserving: %+v, %v", existing, err)
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				r, err := s.GetIdem(ctx, acct.ID, "dead")
				if err != nil {
					t.Fatal(err)
				}
				if r.State != store.IdemDispatched {
					t.Fatalf("the row: %+v, want dispatched (no sweeper runs here)", r)
				}
				if r.LeaseExpired() && r.ExpiresAt <= r.NowMS {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the key's lease and TTL never ran out")
				}
			}
			ks, err := e.Key(ctx, acct.ID, "dead")
			if p, ok := problem.As(err); !ok || p.Code != problem.NotFound {
				t.Fatalf("the key past its TTL, its lease over: %+v, %v, want 404 not_found (a call takes it as new)", ks, err)
			}
			body := []byte(fmt.Sprintf(`{"tool": %d, "action": "send", "arguments": {}}`, row.ID))
			resp, err := e.Call(ctx, calls.Request{AccountID: acct.ID, Body: body, Key: "dead", HasKey: true})
			if err != nil || resp.Status != 200 || resp.Replayed {
				t.Fatalf("a call with the key: %s, %v, want a first 200 (the key is new again)", show(resp), err)
			}
		})
	}
}
