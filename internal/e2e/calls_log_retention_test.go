package e2e

import (
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCallLogRetention: entries older than QUIVER_CALL_LOG_RETENTION leave
// the call log (the purge runs every thirtieth sweep), and are counted; the
// key of a logged call is not the log's, and still replays.
func TestCallLogRetention(t *testing.T) {
	e := setupCalls(t, testserver.Options{Env: map[string]string{
		"QUIVER_CALL_LOG_RETENTION": "1s", "QUIVER_SWEEP_INTERVAL": "100ms"}})
	if r := e.call(callBody(e.id, "/kept", 1), "ret-1"); r.Status != 200 {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	listed := func() int {
		r := e.srv.Do("GET", "/api/v1/agents/custom-tools/calls/", nil)
		if r.Status != 200 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		return len(r.JSON()["calls"].([]any))
	}
	if n := listed(); n != 1 {
		t.Fatalf("the log lists %d entries, want the call's", n)
	}
	testserver.Eventually(t, 10*time.Second, "the entry to leave the log after its 1 s retention", func() bool { return listed() == 0 })
	if n := metricValue(t, e.srv, "quiver_call_log_purged_total"); n != 1 {
		t.Fatalf("quiver_call_log_purged_total = %v, want 1", n)
	}
	if r := e.call(callBody(e.id, "/kept", 1), "ret-1"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the key after its log entry went: %d %s, want its replay", r.Status, r.Body)
	}
	if n := e.tool.count("/kept"); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}
