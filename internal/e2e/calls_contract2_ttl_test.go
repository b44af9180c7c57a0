package e2e

import (
	"bytes"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestKeyTTLEveryMode: once QUIVER_IDEMPOTENCY_TTL has passed, a key is new
// again in every deployment: GET no longer shows it, a different body under
// it runs rather than answering idempotency_key_reused, a refusal under it
// is the refusal, and the new outcome replays. TestKeyTTL proves the same
// body's rerun on Postgres and Redis.
func TestKeyTTLEveryMode(t *testing.T) {
	for mode, opts := range callModes() {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			opts.Env = map[string]string{"QUIVER_IDEMPOTENCY_TTL": "1s", "QUIVER_CALL_TIMEOUT": "500ms", "QUIVER_LEASE_GRACE": "200ms"}
			e := setupCalls(t, opts)
			for _, key := range []string{"k-ttl-a", "k-ttl-b"} {
				if r := e.call(callBody(e.id, "/ttl-old", 1), key); r.Status != 200 {
					t.Fatalf("first: %d %s", r.Status, r.Body)
				}
				wantError(t, e.call(callBody(e.id, "/ttl-new", 2), key), 409, "idempotency_key_reused")
			}
			testserver.Eventually(t, 5*time.Second, "the keys to expire", func() bool {
				return e.srv.Do("GET", "/api/v1/idempotency-keys/k-ttl-a", nil).Status == 404 &&
					e.srv.Do("GET", "/api/v1/idempotency-keys/k-ttl-b", nil).Status == 404
			})
			// A different body runs anew.
			fresh := e.call(callBody(e.id, "/ttl-new", 2), "k-ttl-a")
			if fresh.Status != 200 || fresh.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("different body after the TTL: %d %s", fresh.Status, fresh.Body)
			}
			if again := e.call(callBody(e.id, "/ttl-new", 2), "k-ttl-a"); !bytes.Equal(again.Body, fresh.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("new outcome not replayed: %d %s", again.Status, again.Body)
			}
			wantError(t, e.call(callBody(e.id, "/ttl-old", 1), "k-ttl-a"), 409, "idempotency_key_reused")
			// A refusal is the refusal, and leaves the key free.
			bad := map[string]any{"tool": e.id, "action": "post", "arguments": map[string]any{"body": 1}}
			wantError(t, e.call(bad, "k-ttl-b"), 422, "invalid_arguments")
			if r := e.call(callBody(e.id, "/ttl-new", 3), "k-ttl-b"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("after a refusal past the TTL: %d %s", r.Status, r.Body)
			}
			if o, n := e.tool.count("/ttl-old"), e.tool.count("/ttl-new"); o != 2 || n != 2 {
				t.Fatalf("ran old %d, new %d times; want 2 and 2", o, n)
			}
		})
	}
}
