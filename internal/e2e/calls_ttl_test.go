package e2e

import (
	"bytes"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestKeyTTL: a key is remembered for QUIVER_IDEMPOTENCY_TTL, and is new
// again after it.
func TestKeyTTL(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true, RedisURL: "redis://" + testdb.RedisAddr() + "/0",
		// A key must outlive its call's lease, so the lease is short too.
		Env: map[string]string{"QUIVER_IDEMPOTENCY_TTL": "1s", "QUIVER_CALL_TIMEOUT": "500ms", "QUIVER_LEASE_GRACE": "200ms"}})
	body := callBody(e.id, "/ttl", 1)
	first := e.call(body, "k-ttl")
	if r := e.call(body, "k-ttl"); !bytes.Equal(r.Body, first.Body) {
		t.Fatal("no replay within the TTL")
	}
	time.Sleep(1200 * time.Millisecond) // the TTL itself is what is tested
	r := e.call(body, "k-ttl")
	if r.Status != 200 || bytes.Equal(r.Body, first.Body) || e.tool.count("/ttl") != 2 {
		t.Fatalf("after the TTL the key should be new: %d, ran %d", r.Status, e.tool.count("/ttl"))
	}
}
