package e2e

// OAuth connectors end to end, against a local OAuth 2.0 authorization
// server that implements the real protocol (authorization endpoint, token
// endpoint with PKCE, short-lived access tokens, rotating refresh tokens
// that die once used, RFC 8414 metadata, RFC 7591 registration) and MCP
// servers that accept only the access tokens it issued.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthReadOnlyKeyCannotConnect: completing an OAuth step connects the
// tool, so a read-only key reading the step (or calling the tool) is shown
// the step without an authorization URL; a full key still gets one.
func TestOAuthReadOnlyKeyCannotConnect(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	ro, _, err := srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := oaCreate(t, srv, srv.Key, "github-mcp")

	step := oaStep(t, srv, ro, id)
	if step["type"] != "oauth" || step["authorization_url"] != nil || step["error"] != "read_only_key" {
		t.Fatalf("read-only key sees %v, want the oauth step with error read_only_key and no URL", step)
	}
	r := testserver.Do(t, srv.URL, ro, "GET", "/api/v1/agents/custom-tools/", nil)
	if r.Status != 200 || strings.Contains(string(r.Body), "authorization_url") {
		t.Fatalf("read-only list: %d %s", r.Status, r.Body)
	}
	r = testserver.Do(t, srv.URL, ro, "POST", mqCallPath, map[string]any{"tool": id, "action": "read_count", "arguments": map[string]any{}})
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || strings.Contains(string(r.Body), "authorization_url") {
		t.Fatalf("read-only call: %d %s", r.Status, r.Body)
	}
	oaAuthURL(t, oaStep(t, srv, srv.Key, id)) // a full key gets its URL
}

// TestOAuthProactiveRefreshFailures: a token inside its refresh leeway is
// refreshed before the call. If the provider is down, the call is 502
// tool_unreachable, nothing runs, the tool stays connected and the key is
// released; once it is back, the same key goes through. If the grant was
// revoked, the call is 409 tool_not_configured with the OAuth step, and the
// key is released too. On the embedded database.
func TestOAuthProactiveRefreshFailures(t *testing.T) {
	p, counter, srv, id := oaAlwaysRefreshing(t)

	p.refreshFails.Store(http.StatusInternalServerError)
	r := oaCall(t, srv, id, "increment", "Idempotency-Key", "inc-1")
	if r.Status != 502 || r.JSON()["error"] != "tool_unreachable" {
		t.Fatalf("provider down: %d %s, want 502 tool_unreachable", r.Status, r.Body)
	}
	if n := counter.Calls("increment"); n != 0 || !oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("provider down: increment ran %d times, configured %v", n, oaConfigured(t, srv, srv.Key, id))
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/inc-1", nil); r.Status != 404 {
		t.Fatalf("key after a failed refresh: %d %s, want 404 (released)", r.Status, r.Body)
	}
	p.refreshFails.Store(0)
	if r := oaCall(t, srv, id, "increment", "Idempotency-Key", "inc-1"); r.Status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("provider back: %d %s, increment ran %d times", r.Status, r.Body, counter.Calls("increment"))
	}

	p.revokeGrant()
	r = oaCall(t, srv, id, "increment", "Idempotency-Key", "inc-2")
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || next["type"] != "oauth" {
		t.Fatalf("grant revoked: %d %s, want 409 tool_not_configured with the oauth step", r.Status, r.Body)
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/inc-2", nil); r.Status != 404 {
		t.Fatalf("key after a revoked grant: %d %s, want 404 (released)", r.Status, r.Body)
	}
	if n := counter.Calls("increment"); n != 1 {
		t.Fatalf("increment ran %d times, want 1", n)
	}
}

// TestOAuthSlowFailingRefreshIsShared: the provider takes two seconds to
// fail each token request, and three calls want a refresh at once. The
// calls waiting behind the first share its failure: the provider is asked
// no more than for one call alone, and every call answers 502 in about
// that call's time, where each waiting call used to ask again in turn.
func TestOAuthSlowFailingRefreshIsShared(t *testing.T) {
	p, counter, srv, id := oaAlwaysRefreshing(t)
	p.refreshDelay.Store(int64(2 * time.Second))
	p.refreshFails.Store(http.StatusInternalServerError)

	start := time.Now()
	if r := oaCall(t, srv, id, "increment", "Idempotency-Key", "alone"); r.Status != 502 {
		t.Fatalf("one call: %d %s, want 502", r.Status, r.Body)
	}
	alone, asked := time.Since(start), p.failedRefreshes.Swap(0)
	if asked != 1 {
		// oauth2's AutoDetect sent every failed token request twice, the
		// refresh token with it.
		t.Fatalf("one call asked the provider %d times, want 1", asked)
	}

	start = time.Now()
	var wg sync.WaitGroup
	results := make([]*testserver.Response, 3)
	for i := range results {
		wg.Go(func() { results[i] = oaCall(t, srv, id, "increment", "Idempotency-Key", fmt.Sprintf("slow-%d", i)) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, r := range results {
		if r.Status != 502 || r.JSON()["error"] != "tool_unreachable" {
			t.Errorf("call %d: %d %s, want 502 tool_unreachable", i, r.Status, r.Body)
		}
	}
	if n := p.failedRefreshes.Load(); n != asked {
		t.Errorf("three calls asked the provider %d times, one call alone %d", n, asked)
	}
	if elapsed > alone+alone/2 {
		t.Errorf("three calls took %v, one alone %v", elapsed, alone)
	}
	if n := counter.Calls("increment"); n != 0 {
		t.Fatalf("increment ran %d times", n)
	}

	// A later call asks again, and goes through once the provider is back.
	p.refreshFails.Store(0)
	if r := oaCall(t, srv, id, "increment", "Idempotency-Key", "slow-0"); r.Status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("provider back: %d %s, increment ran %d times", r.Status, r.Body, counter.Calls("increment"))
	}
}

// TestOAuthShortLivedTokens: a provider whose access tokens live 30
// seconds gets one refresh for 10 calls that find the token due, and none
// for the 10 after. With a fixed minute of leeway every new token was due
// at once, and each call refreshed in turn.
func TestOAuthShortLivedTokens(t *testing.T) {
	p, _, srv, id := oaConnected(t, time.Second, 30*time.Second)
	oaPastHalfLife(p)
	for round := range 2 {
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
					t.Errorf("call: %d %s", r.Status, r.Body)
				}
			})
		}
		wg.Wait()
		if n := p.refreshes.Load(); n != 1 {
			t.Fatalf("round %d: %d refreshes, want 1", round, n)
		}
	}
}

// oaAlwaysRefreshing connects github-mcp with access tokens that live a
// second, and waits until the first is due for a refresh (halfway through
// its life), so the next call refreshes first.
func oaAlwaysRefreshing(t *testing.T) (*oaProvider, *mcptest.Server, *testserver.Server, int64) {
	t.Helper()
	p, counter, srv, id := oaConnected(t, time.Second, time.Second)
	oaPastHalfLife(p)
	return p, counter, srv, id
}

// TestOAuthTokenRefusedAgain: a server that refuses every token, fresh
// ones too, gets one refresh and one retry, not a refresh per call: a token
// refused on the retry right after the refresh that made it is not
// refreshed again within oauth.RefusedAgainWait, and the calls answer
// upstream_auth_failed without running anything. (A token the server took
// is refreshed on its next refusal at once: TestOAuthRefreshAcrossReplicas
// finds a revoked grant right after a refresh.)
func TestOAuthTokenRefusedAgain(t *testing.T) {
	p, counter, srv, id := oaConnected(t, time.Hour, time.Hour)
	before := p.refreshes.Load()
	p.refuseAll.Store(true)
	for i := range 4 {
		r := oaCall(t, srv, id, "read_count")
		if r.Status != 502 || r.JSON()["error"] != "upstream_auth_failed" {
			t.Fatalf("call %d to a server that refuses every token: %d %s", i, r.Status, r.Body)
		}
	}
	if n := p.refreshes.Load() - before; n != 1 {
		t.Fatalf("refreshes = %d for four refused calls, want 1", n)
	}
	if n := counter.Calls("read_count"); n != 0 {
		t.Fatalf("read_count ran %d times", n)
	}
	// The server takes tokens again: the token refreshed after the first
	// refusal works, without another refresh.
	p.refuseAll.Store(false)
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call once the server takes the token: %d %s", r.Status, r.Body)
	}
	if n := p.refreshes.Load() - before; n != 1 {
		t.Fatalf("refreshes = %d, want still 1", n)
	}
}

// oaConnected connects github-mcp, on the embedded database, through a new
// local provider whose access tokens live first (from the code) and next
// (from a refresh): the provider, the MCP server, Quiver and the tool's ID.
func oaConnected(t *testing.T, first, next time.Duration) (*oaProvider, *mcptest.Server, *testserver.Server, int64) {
	t.Helper()
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	p.firstTTL, p.nextTTL = first, next
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	return p, counter, srv, id
}

// oaPastHalfLife waits, right after a connection, until its first access
// token is past half its life, when Quiver refreshes a token that lives
// under two minutes.
func oaPastHalfLife(p *oaProvider) {
	time.Sleep(p.firstTTL/2 + 100*time.Millisecond)
}

// TestOAuthResetEndsAuthorizations: resetting a tool ends the
// authorizations started for it. A link handed out before the reset is
// refused, and so is a callback whose code exchange was under way when the
// reset came; before, both connected the tool the user had just reset.
func TestOAuthResetEndsAuthorizations(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	reset := func() {
		t.Helper()
		if r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil); r.Status != 200 {
			t.Fatalf("reset: %d %s", r.Status, r.Body)
		}
	}

	answer := oaAuthorize(t, oaAuthURL(t, step))
	reset()
	if status, body := oaCallback(t, srv, answer); status != 400 || !strings.Contains(body, "reset or removed") {
		t.Fatalf("a link from before the reset: %d %s", status, body)
	}
	if oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("a link from before the reset connected the tool")
	}

	p.exchangeDelay.Store(int64(time.Second))
	answer = oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
	done := make(chan int, 1)
	go func() {
		status, _ := oaCallback(t, srv, answer)
		done <- status
	}()
	time.Sleep(300 * time.Millisecond) // the exchange is under way
	reset()
	if status := <-done; status != 409 {
		t.Fatalf("a callback under way at the reset: %d, want 409", status)
	}
	if oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("a callback under way at the reset connected the tool")
	}

	// A link from after the reset works.
	p.exchangeDelay.Store(0)
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)))); status != 200 || !oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("a fresh link: %d %s", status, body)
	}
}
