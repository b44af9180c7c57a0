package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestKeyedCallsMeetTheToolAsItIs: a replica keeps tools cached for
// QUIVER_CACHE_TTL, so a change made through another replica reaches it
// only then. A keyed call (every non-retryable action's) does not wait for
// that: its reservation reads the tool's version in the same statement, and
// a tool reconfigured since is resolved again and called as it now is, and a
// tool deleted since is 404 with nothing sent and the key left free. A key
// already used still replays. B's cache is made to last a minute here, so
// nothing but the reservation can tell it.
func TestKeyedCallsMeetTheToolAsItIs(t *testing.T) {
	a := setupCalls(t, testserver.Options{Postgres: true})
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.srv.DatabaseURL,
		Env: map[string]string{"QUIVER_CACHE_TTL": "1m", "QUIVER_CALL_TIMEOUT": "2s", "QUIVER_LEASE_GRACE": "1s"}})
	onB := func(body any, idem string) *testserver.Response {
		return testserver.Do(t, b.URL, a.srv.Key, "POST", callPath, body, "Idempotency-Key", idem)
	}
	if r := onB(callBody(a.id, "/warm", 1), "stale-warm"); r.Status != 200 {
		t.Fatalf("warm-up on B: %d %s", r.Status, r.Body)
	}

	// Reconfigured through A, to another server: B calls that one.
	moved := startToolServer(t)
	steps := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", a.id)
	if r := a.srv.Do("POST", steps+"reset-config/", nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	for _, answer := range []map[string]any{{"base_url": moved.URL}, {"auth_type": "none"}} {
		if r := a.srv.Do("POST", steps+"provide-config/", map[string]any{"user_response": answer}); r.Status != 200 {
			t.Fatalf("provide %v: %d %s", answer, r.Status, r.Body)
		}
	}
	if r := onB(callBody(a.id, "/moved", 1), "stale-moved"); r.Status != 200 {
		t.Fatalf("a call on B after the tool was reconfigured on A: %d %s", r.Status, r.Body)
	}
	if old, now := a.tool.count("/moved"), moved.count("/moved"); old != 0 || now != 1 {
		t.Fatalf("after the reconfiguration the old server got %d calls and the new one %d, want 0 and 1", old, now)
	}

	// Deleted through A: B sends nothing, and the key stays free.
	if r := a.srv.Do("DELETE", steps, nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	r := onB(callBody(a.id, "/gone", 1), "stale-gone")
	wantError(t, r, 404, "not_found")
	if n := a.tool.count("/gone") + moved.count("/gone"); n != 0 {
		t.Fatalf("a deleted tool was called %d times", n)
	}
	if k := testserver.Do(t, b.URL, a.srv.Key, "GET", "/api/v1/idempotency-keys/stale-gone", nil); k.Status != 404 {
		t.Fatalf("the key of a call refused for a deleted tool: %d %s, want 404 (free)", k.Status, k.Body)
	}
	if r := onB(callBody(a.id, "/warm", 1), "stale-warm"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a used key after the delete: %d %s, want its replay", r.Status, r.Body)
	}
}
