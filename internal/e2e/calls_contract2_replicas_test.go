package e2e

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestReplayOnAColdReplica: a replica that never saw a key (Postgres alone,
// no shared cache) replays its stored outcome whatever the tool has become
// since: named by a catalog name now ambiguous, reset, deleted; and answers
// another body idempotency_key_reused rather than the refusal the tool's
// state would give a new key.
func TestReplayOnAColdReplica(t *testing.T) {
	a := setupCalls(t, testserver.Options{Postgres: true})
	cold := func() *testserver.Server {
		return testserver.Start(t, testserver.Options{DatabaseURL: a.srv.DatabaseURL})
	}
	on := func(s *testserver.Server, body any, key string) *testserver.Response {
		return testserver.Do(t, s.URL, a.srv.Key, "POST", callPath, body, "Idempotency-Key", key)
	}
	byName := map[string]any{"tool": "http-request", "action": "post", "arguments": map[string]any{"path": "/cold-name", "body": 1}}
	byID := callBody(a.id, "/cold-id", 1)
	name := a.call(byName, "k-cold-name")
	id := a.call(byID, "k-cold-id")
	if name.Status != 200 || id.Status != 200 {
		t.Fatalf("first calls: %d %s / %d %s", name.Status, name.Body, id.Status, id.Body)
	}
	replays := func(when string, s *testserver.Server) {
		t.Helper()
		for key, want := range map[string]*testserver.Response{"k-cold-name": name, "k-cold-id": id} {
			body := byID
			if key == "k-cold-name" {
				body = byName
			}
			r := on(s, body, key)
			if r.Status != 200 || !bytes.Equal(r.Body, want.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s, %s: %d %s", when, key, r.Status, r.Body)
			}
			wantError(t, on(s, callBody(a.id, "/cold-other", 2), key), 409, "idempotency_key_reused")
		}
	}
	replays("a cold replica", cold())

	// A second tool of the name: "http-request" names no one tool now.
	connectHTTPTool(t, a.srv.URL, a.srv.Key, a.tool.URL)
	wantError(t, on(cold(), byName, "k-cold-fresh"), 422, "validation_error")
	replays("the name ambiguous", cold())

	if r := a.srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", a.id), nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	replays("the tool reset", cold())

	if r := a.srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", a.id), nil); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	replays("the tool deleted", cold())
	if n := a.tool.count("/cold-name") + a.tool.count("/cold-id") + a.tool.count("/cold-other"); n != 2 {
		t.Fatalf("tool ran %d times, want 2", n)
	}
}
