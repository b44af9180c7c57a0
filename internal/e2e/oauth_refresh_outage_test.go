package e2e

import (
	"net/http"
	"testing"
	"time"
)

// TestOAuthOutageUsesTheLiveToken: a token due for its refresh ahead of
// expiry, whose provider is down, is still good until it expires: the call
// uses it (the provider was asked), where it used to be refused with 502.
// A token too close to its expiry (toolconfig.MinTokenLife) is not used:
// that call is 502 tool_unreachable, nothing runs and its key is released,
// and once the provider is back the same key goes through.
func TestOAuthOutageUsesTheLiveToken(t *testing.T) {
	// The token lives 10 s. issued is read after the connection, so a
	// little after the token was issued (the callback verifies the tool):
	// at issued+5.2 s it is due (past half its life) with under 4.8 s left,
	// well over MinTokenLife even on a slow machine; at issued+8.5 s under
	// 1.5 s is left, under MinTokenLife however slow the connection was.
	p, counter, srv, id := oaConnected(t, 10*time.Second, time.Hour)
	issued := time.Now()
	time.Sleep(time.Until(issued.Add(5*time.Second + 200*time.Millisecond)))
	p.refreshFails.Store(http.StatusInternalServerError)

	if r := oaCall(t, srv, id, "increment", "Idempotency-Key", "live-1"); r.Status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("provider down, token live for %v more: %d %s, increment ran %d times",
			time.Until(issued.Add(10*time.Second)).Round(100*time.Millisecond), r.Status, r.Body, counter.Calls("increment"))
	}
	if n := p.failedRefreshes.Load(); n < 1 {
		t.Fatalf("the provider was not asked for a refresh (%d)", n)
	}

	time.Sleep(time.Until(issued.Add(8*time.Second + 500*time.Millisecond))) // under MinTokenLife left
	r := oaCall(t, srv, id, "increment", "Idempotency-Key", "live-2")
	if r.Status != 502 || r.JSON()["error"] != "tool_unreachable" || counter.Calls("increment") != 1 {
		t.Fatalf("provider down, token about to expire: %d %s, increment ran %d times", r.Status, r.Body, counter.Calls("increment"))
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/live-2", nil); r.Status != 404 {
		t.Fatalf("key after a failed refresh: %d %s, want 404 (released)", r.Status, r.Body)
	}
	p.refreshFails.Store(0)
	if r := oaCall(t, srv, id, "increment", "Idempotency-Key", "live-2"); r.Status != 200 || counter.Calls("increment") != 2 {
		t.Fatalf("provider back: %d %s, increment ran %d times", r.Status, r.Body, counter.Calls("increment"))
	}
}
