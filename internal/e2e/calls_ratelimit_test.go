package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestCallRateLimitPerAccount(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true,
		Env: map[string]string{"QUIVER_CALL_RATE_LIMIT": "1", "QUIVER_CALL_RATE_BURST": "2"}})
	for i := 0; i < 2; i++ {
		if r := e.call(callBody(e.id, "/limited", i), fmt.Sprint("rl-", i)); r.Status != 200 {
			t.Fatalf("call %d within the burst: %d %s", i, r.Status, r.Body)
		}
	}
	r := e.call(callBody(e.id, "/limited", 2), "rl-2")
	wantError(t, r, 429, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	if e.tool.count("/limited") != 2 {
		t.Fatalf("tool ran %d times", e.tool.count("/limited"))
	}
	// Another account has its own bucket.
	other := e.srv.NewKey("rate-other")
	if r := testserver.Do(t, e.srv.URL, other, "POST", callPath, callBody(e.id, "/limited", 9), "Idempotency-Key", "x"); r.Status != 404 {
		t.Fatalf("other account (no such tool for it): %d %s", r.Status, r.Body)
	}
	// The refused call touched nothing: its key runs once the bucket refills.
	testserver.Eventually(t, 3*time.Second, "the bucket to refill", func() bool {
		return e.call(callBody(e.id, "/limited", 2), "rl-2").Status == 200
	})
	if e.tool.count("/limited") != 3 {
		t.Fatalf("tool ran %d times, want 3", e.tool.count("/limited"))
	}
}
