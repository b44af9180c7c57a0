package e2e

import (
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestUnknownOutcomeCountedDespiteALostMarkReply: a keyed call whose tool
// never answers is marked outcome_unknown, and Postgres's reply to that
// statement is lost (the proxy swallows it and drops the session). The
// statement committed: no sweeper will find the row, so the replica reads
// it back and counts the call itself, once, in
// quiver_calls_total{outcome="outcome_unknown"}. Before, it left the count
// to a sweeper, and the call was never counted. The sweep interval is long
// so that no sweep's statement meets the proxy's trigger meanwhile.
func TestUnknownOutcomeCountedDespiteALostMarkReply(t *testing.T) {
	dbURL, px := postgresBehindProxy(t, "h4lostmark")
	srv := testserver.Start(t, testserver.Options{DatabaseURL: dbURL, Env: map[string]string{
		"QUIVER_CALL_TIMEOUT": "1s", "QUIVER_LEASE_GRACE": "5s", "QUIVER_SWEEP_INTERVAL": "30s",
	}})
	tool := startToolServer(t)
	id := connectHTTPTool(t, srv.URL, srv.Key, tool.URL)
	body := callBody(id, "/hang", map[string]any{"send": "once"})

	first := make(chan *testserver.Response, 1)
	go func() { first <- srv.Do("POST", callPath, body, "Idempotency-Key", "k-h4-lostmark") }()
	testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return tool.count("/hang") == 1 })
	// Past the reservation, the key is among the parameters of the marking
	// statement alone (not in its text, whose reply, lost, would keep the
	// statement from running at all).
	// One reply lost: the trigger is disarmed once it fires, before the
	// proxy drops the session (300 ms later), so the reads after it pass.
	fired := px.swallowAfter([]byte("k-h4-lostmark"))
	disarmed := make(chan struct{})
	go func() {
		defer close(disarmed)
		select {
		case <-fired:
			px.swallowAfter(nil)
		case <-time.After(10 * time.Second):
		}
	}()
	wantError(t, <-first, 504, "tool_outcome_unknown")
	select {
	case <-disarmed:
	case <-time.After(10 * time.Second):
	}
	px.mu.Lock()
	armed := px.trigger != nil
	px.mu.Unlock()
	if armed {
		t.Fatal("the marking statement never went through the proxy")
	}

	if n := metricValue(t, srv, `quiver_calls_total{outcome="outcome_unknown"}`); n != 1 {
		t.Errorf(`quiver_calls_total{outcome="outcome_unknown"} = %v, want 1; log:\n%s`, n, srv.LogText())
	}
	wantError(t, srv.Do("POST", callPath, body, "Idempotency-Key", "k-h4-lostmark"), 409, "tool_outcome_unknown")
	if s := srv.Do("GET", "/api/v1/idempotency-keys/k-h4-lostmark", nil); s.JSON()["state"] != "outcome_unknown" {
		t.Errorf("the key: %s", s.Body)
	}
	if n := tool.count("/hang"); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}
