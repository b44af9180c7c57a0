package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// A token refresh the provider refuses with an RFC 6749 §5.2 error that
// retrying cannot heal. They used to answer every call 502 tool_unreachable
// "Retry shortly", forever (or, while the access token lived, to use it as
// if the provider were merely down).

// oaDueAndLive connects github-mcp with access tokens that live 8 s and
// waits until the first is due for a refresh (past half its life) with
// well over toolconfig.MinTokenLife left: the moment a transient outage
// would still use it. It returns the provider, the MCP server, Quiver, a
// keyed call of increment that checks a refused call released its key,
// and roughly when the token expires.
func oaDueAndLive(t *testing.T) (*oaProvider, *mcptest.Server, *testserver.Server, func(key string) (int, map[string]any, string), time.Time) {
	t.Helper()
	p, counter, srv, id := oaConnected(t, 8*time.Second, time.Hour)
	issued := time.Now()
	time.Sleep(time.Until(issued.Add(4*time.Second + 300*time.Millisecond)))
	call := func(key string) (int, map[string]any, string) {
		t.Helper()
		r := oaCall(t, srv, id, "increment", "Idempotency-Key", key)
		if r.Status != 200 {
			if k := srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil); k.Status != 404 {
				t.Errorf("key %s after a refused call: %d %s, want 404 (released)", key, k.Status, k.Body)
			}
		}
		return r.Status, r.JSON(), string(r.Body)
	}
	return p, counter, srv, call, issued.Add(8 * time.Second)
}

// TestOAuthRefreshRefusedGrant: invalid_scope, unauthorized_client and
// unsupported_grant_type (the provider refreshes no grant now) say this
// grant cannot be refreshed, as invalid_grant does: the tool goes back
// to its oauth step and the call is 409 tool_not_configured with that step,
// its key released and nothing run, though the access token still lives.
// Authorizing again connects it.
func TestOAuthRefreshRefusedGrant(t *testing.T) {
	for _, code := range []string{"invalid_scope", "unauthorized_client", "unsupported_grant_type"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			p, counter, srv, call, _ := oaDueAndLive(t)
			p.refuseRefreshes(code)
			status, m, body := call("k-1")
			next, _ := m["next_configuration_step"].(map[string]any)
			if status != 409 || m["error"] != "tool_not_configured" || next["type"] != "oauth" || next["authorization_url"] == nil {
				t.Fatalf("refresh refused with %s: %d %s, want 409 tool_not_configured with the oauth step", code, status, body)
			}
			if n := counter.Calls("increment"); n != 0 {
				t.Fatalf("increment ran %d times", n)
			}
			// The grant is gone: the next call does not ask the provider again.
			asked := p.refuseRefreshes(code)
			if status, m, body := call("k-2"); status != 409 || m["error"] != "tool_not_configured" {
				t.Fatalf("second call: %d %s", status, body)
			}
			if n := p.refuseRefreshes(""); n != asked {
				t.Fatalf("the provider was asked %d more times after the grant was dropped", n-asked)
			}
			if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, next))); status != 200 {
				t.Fatalf("authorizing again: %d %s", status, body)
			}
			if status, _, body := call("k-1"); status != 200 || counter.Calls("increment") != 1 {
				t.Fatalf("after authorizing again: %d %s, increment ran %d times", status, body, counter.Calls("increment"))
			}
		})
	}
}

// TestOAuthRefreshRefusedClient: invalid_client says the provider refuses
// this server's own OAuth client (a wrong or revoked client ID or secret),
// which the user cannot fix by authorizing again and a retry will not heal.
// The grant may be fine, so the tool stays connected and a live access
// token is still used; once it is too close to its expiry the call is 502
// upstream_auth_failed naming the client, not "retry shortly", with its key
// released and nothing run. Once the client is accepted again the same key
// goes through.
func TestOAuthRefreshRefusedClient(t *testing.T) {
	p, counter, _, call, expires := oaDueAndLive(t)
	p.refuseRefreshes("invalid_client")
	if status, _, body := call("c-1"); status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("client refused, token live: %d %s, increment ran %d times", status, body, counter.Calls("increment"))
	}
	time.Sleep(time.Until(expires.Add(-1500 * time.Millisecond))) // under MinTokenLife left
	status, m, body := call("c-2")
	msg, _ := m["message"].(string)
	if status != 502 || m["error"] != "upstream_auth_failed" || !strings.Contains(msg, "client") || strings.Contains(msg, "Retry shortly") {
		t.Fatalf("client refused, token about to expire: %d %s, want 502 upstream_auth_failed naming the client", status, body)
	}
	if n := counter.Calls("increment"); n != 1 {
		t.Fatalf("increment ran %d times, want 1", n)
	}
	p.refuseRefreshes("")
	if status, _, body := call("c-2"); status != 200 || counter.Calls("increment") != 2 {
		t.Fatalf("client accepted again: %d %s, increment ran %d times", status, body, counter.Calls("increment"))
	}
}
