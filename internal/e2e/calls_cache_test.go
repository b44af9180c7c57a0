package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// API keys and tools are cached in each replica; a change made through one
// replica must reach the others within QUIVER_CACHE_TTL (1s by default).
func TestCachedKeysAndToolsFollowChangesOnOtherReplicas(t *testing.T) {
	a := setupCalls(t, testserver.Options{Postgres: true})
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.srv.DatabaseURL})
	onB := func(key string, body any, idem string) *testserver.Response {
		return testserver.Do(t, b.URL, key, "POST", callPath, body, "Idempotency-Key", idem)
	}
	// Warm B's caches with the key and the tool.
	if r := onB(a.srv.Key, callBody(a.id, "/warm", 1), "warm"); r.Status != 200 {
		t.Fatalf("warm-up on B: %d %s", r.Status, r.Body)
	}

	// Reset the tool on A: B must stop calling it.
	if r := a.srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", a.id), nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	start := time.Now()
	testserver.Eventually(t, 3*time.Second, "B to see the reset tool", func() bool {
		r := onB(a.srv.Key, callBody(a.id, "/after-reset", 1), fmt.Sprint("reset-", time.Now().UnixNano()))
		return r.Status == 409 && r.JSON()["error"] == "tool_not_configured"
	})
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("B saw the reset after %v, want within about a second", d)
	}

	// Revoke the key through A's accounts service: B must refuse it.
	key := a.srv.NewKey("revoked")
	if r := testserver.Do(t, b.URL, key, "GET", "/api/v1/agents/custom-tools/", nil); r.Status != 200 {
		t.Fatalf("new key on B: %d", r.Status)
	}
	if err := a.srv.App.Accounts.Revoke(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	testserver.Eventually(t, 3*time.Second, "B to refuse the revoked key", func() bool {
		return testserver.Do(t, b.URL, key, "GET", "/api/v1/agents/custom-tools/", nil).Status == 401
	})
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("B refused the revoked key after %v, want within about a second", d)
	}
	if r := testserver.Do(t, a.srv.URL, key, "GET", "/api/v1/agents/custom-tools/", nil); r.Status != 401 {
		t.Fatalf("A still accepts the revoked key: %d", r.Status)
	}
}

// A call may name its tool by catalog name. The name is cached like the
// tool, and a second tool of the same name makes it ambiguous at once.
func TestCallByCatalogName(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true})
	byName := map[string]any{"tool": "http-request", "action": "get", "arguments": map[string]any{"path": "/by-name"}}
	for i := 0; i < 2; i++ {
		if r := e.call(byName); r.Status != 200 || int64(r.JSON()["tool"].(float64)) != e.id {
			t.Fatalf("call by name: %d %s", r.Status, r.Body)
		}
	}
	connectHTTPTool(t, e.srv.URL, e.srv.Key, e.tool.URL)
	r := e.call(byName)
	wantError(t, r, 422, "validation_error")
	if _, ok := r.JSON()["fields"].(map[string]any)["tool"]; !ok {
		t.Fatalf("ambiguous name without fields.tool: %s", r.Body)
	}
	wantError(t, e.call(map[string]any{"tool": "browser", "action": "fetch_page", "arguments": map[string]any{"url": "http://x"}}), 422, "validation_error")
	if e.tool.count("/by-name") != 2 {
		t.Fatalf("tool ran %d times, want 2", e.tool.count("/by-name"))
	}
}
