package e2e

// OAuth connectors end to end, against a local OAuth 2.0 authorization
// server that implements the real protocol (authorization endpoint, token
// endpoint with PKCE, short-lived access tokens, rotating refresh tokens
// that die once used, RFC 8414 metadata, RFC 7591 registration) and MCP
// servers that accept only the access tokens it issued.

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestOAuthConnectFlow(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})

	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	authURL := oaAuthURL(t, step)
	u, _ := url.Parse(authURL)
	if !strings.HasPrefix(authURL, p.URL+"/authorize?") || u.Query().Get("code_challenge_method") != "S256" ||
		u.Query().Get("code_challenge") == "" || u.Query().Get("state") == "" ||
		u.Query().Get("redirect_uri") != "http://localhost:8080/api/v1/oauth/callback" {
		t.Fatalf("authorization_url = %s", authURL)
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("call before connecting: %d %s", r.Status, r.Body)
	}

	q := oaAuthorize(t, authURL)
	status, body := oaCallback(t, srv, q)
	if status != 200 || !strings.Contains(body, "is connected") {
		t.Fatalf("callback: %d %s", status, body)
	}
	if !oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("tool not configured after the exchange")
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call after connecting: %d %s", r.Status, r.Body)
	}

	t.Run("replayed state", func(t *testing.T) {
		status, body := oaCallback(t, srv, q)
		if status != 400 || !strings.Contains(body, "already used") {
			t.Fatalf("replay: %d %s", status, body)
		}
		if !oaConfigured(t, srv, srv.Key, id) {
			t.Fatal("a replay changed the tool")
		}
	})

	t.Run("unknown state", func(t *testing.T) {
		status, _ := oaCallback(t, srv, url.Values{"code": {"x"}, "state": {"not-a-state"}})
		if status != 400 {
			t.Fatalf("unknown state: %d", status)
		}
	})

	t.Run("denied", func(t *testing.T) {
		id2, step := oaCreate(t, srv, srv.Key, "github-mcp")
		p.mu.Lock()
		p.deny = true
		p.mu.Unlock()
		q := oaAuthorize(t, oaAuthURL(t, step))
		p.mu.Lock()
		p.deny = false
		p.mu.Unlock()
		if q.Get("error") != "access_denied" {
			t.Fatalf("provider answer %v", q)
		}
		status, body := oaCallback(t, srv, q)
		if status != 403 || !strings.Contains(body, "declined") {
			t.Fatalf("denied: %d %s", status, body)
		}
		if oaConfigured(t, srv, srv.Key, id2) {
			t.Fatal("a denied authorization configured the tool")
		}
		// The tool can still be connected afterwards.
		if status, _ := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id2)))); status != 200 {
			t.Fatalf("connect after a denial: %d", status)
		}
	})

	t.Run("expired state", func(t *testing.T) {
		id3, step := oaCreate(t, srv, srv.Key, "github-mcp")
		q := oaAuthorize(t, oaAuthURL(t, step))
		if err := srv.App.Store.ExpireOAuthStates(t.Context(), id3); err != nil {
			t.Fatal(err)
		}
		status, body := oaCallback(t, srv, q)
		if status != 400 || !strings.Contains(body, "expired") {
			t.Fatalf("expired: %d %s", status, body)
		}
		if oaConfigured(t, srv, srv.Key, id3) {
			t.Fatal("an expired state configured the tool")
		}
	})

	t.Run("state of another tool or account", func(t *testing.T) {
		// A code obtained for one tool cannot complete another's state:
		// the PKCE verifier bound to the state does not match.
		idA, stepA := oaCreate(t, srv, srv.Key, "github-mcp")
		idB, stepB := oaCreate(t, srv, srv.Key, "github-mcp")
		qA, qB := oaAuthorize(t, oaAuthURL(t, stepA)), oaAuthorize(t, oaAuthURL(t, stepB))
		mixed := url.Values{"code": {qB.Get("code")}, "state": {qA.Get("state")}}
		if status, body := oaCallback(t, srv, mixed); status != 502 || !strings.Contains(body, "did not accept") {
			t.Fatalf("another tool's code: %d %s", status, body)
		}
		if oaConfigured(t, srv, srv.Key, idA) || oaConfigured(t, srv, srv.Key, idB) {
			t.Fatal("a mixed callback configured a tool")
		}

		other := srv.NewKey("oauth-other")
		idO, stepO := oaCreate(t, srv, other, "github-mcp")
		qO := oaAuthorize(t, oaAuthURL(t, stepO))
		qM := oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, idA)))
		mixed = url.Values{"code": {qM.Get("code")}, "state": {qO.Get("state")}}
		if status, _ := oaCallback(t, srv, mixed); status != 502 {
			t.Fatalf("another account's state: %d", status)
		}
		if oaConfigured(t, srv, other, idO) || oaConfigured(t, srv, srv.Key, idA) {
			t.Fatal("a cross-account callback configured a tool")
		}
		// The other account cannot see the first account's tool.
		if r := testserver.Do(t, srv.URL, other, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 404 {
			t.Fatalf("other account sees tool: %d", r.Status)
		}
	})

	t.Run("delete drops tokens and states", func(t *testing.T) {
		if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 204 {
			t.Fatalf("delete: %d", r.Status)
		}
		n, err := srv.App.Store.CountOAuthStates(t.Context(), id)
		if err != nil || n != 0 {
			t.Fatalf("states left: %d, %v", n, err)
		}
		var rows int64
		if err := srv.App.Store.DB().Raw("SELECT count(*) FROM tools WHERE id = ?", id).Scan(&rows).Error; err != nil || rows != 0 {
			t.Fatalf("tool rows left: %d, %v", rows, err)
		}
	})

	oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
}

func TestOAuthRefreshAcrossReplicas(t *testing.T) {
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	// The first access token lives a second, so it is due for a refresh
	// after half of that (oaPastHalfLife); the refreshed ones live an hour.
	p.firstTTL, p.nextTTL = time.Second, time.Hour
	a := testserver.Start(t, testserver.Options{Postgres: true, Env: env})
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.DatabaseURL, Env: env})

	id, step := oaCreate(t, a, a.Key, "github-mcp")
	if status, body := oaCallback(t, a, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	oaPastHalfLife(p)
	var seen []string // response bodies, checked for tokens at the end

	// 20 concurrent calls over two replicas: one refresh between them.
	oaConcurrent := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			srv := a
			if i%2 == 1 {
				srv = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := oaCall(t, srv, id, "read_count")
				mu.Lock()
				seen = append(seen, string(r.Body))
				mu.Unlock()
				if r.Status != 200 {
					t.Errorf("call %d: %d %s", i, r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
	}
	oaConcurrent(20)
	if n := p.refreshes.Load(); n != 1 {
		t.Fatalf("refreshes after 20 concurrent calls = %d, want 1", n)
	}

	// The server now refuses the access token (401): each replica
	// refreshes at most once between them, with the rotated refresh token
	// the first refresh stored (the original one is spent), and retries.
	p.revokeAccess()
	oaConcurrent(10)
	if n := p.refreshes.Load(); n != 2 {
		t.Fatalf("refreshes after a refused token = %d, want 2", n)
	}
	if r := oaCall(t, a, id, "read_count"); r.Status != 200 {
		t.Fatalf("warm call: %d %s", r.Status, r.Body)
	}

	// The user revokes the grant: the refresh gets invalid_grant, the tool
	// goes back to its oauth step, and the call is a pre-effect rejection
	// that releases its key.
	p.revokeGrant()
	const key = "oa-revoked-1"
	r := oaCall(t, a, id, "increment", "Idempotency-Key", key)
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("call on a revoked grant: %d %s", r.Status, r.Body)
	}
	seen = append(seen, string(r.Body))
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	authURL := oaAuthURL(t, next)
	if counter.Calls("increment") != 0 {
		t.Fatal("increment ran")
	}
	if r := a.Do("GET", "/api/v1/idempotency-keys/"+key, nil); r.Status != 404 {
		t.Fatalf("key after rejection: %d %s", r.Status, r.Body)
	}
	if oaConfigured(t, b, b.Key, id) {
		t.Fatal("tool still configured after its grant was revoked")
	}

	// Connect again; the released key runs the call.
	if status, body := oaCallback(t, b, oaAuthorize(t, authURL)); status != 200 {
		t.Fatalf("reconnect: %d %s", status, body)
	}
	r = oaCall(t, b, id, "increment", "Idempotency-Key", key)
	if r.Status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("call after reconnecting: %d %s (ran %d)", r.Status, r.Body, counter.Calls("increment"))
	}
	seen = append(seen, string(r.Body))

	secrets := p.issued()
	oaNoSecrets(t, "replica A logs", a.LogText(), secrets)
	oaNoSecrets(t, "replica B logs", b.LogText(), secrets)
	oaNoSecrets(t, "responses", strings.Join(seen, "\n"), secrets)
	for _, srv := range []*testserver.Server{a, b} {
		m := testserver.Do(t, srv.URL, "", "GET", "/metrics", nil)
		oaNoSecrets(t, "metrics", string(m.Body), secrets)
	}
}
