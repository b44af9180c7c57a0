package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestReadOnlyKeys(t *testing.T) {
	e := setupCalls(t, testserver.Options{Postgres: true})
	ro, _, err := e.srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body any, h ...string) *testserver.Response {
		return testserver.Do(t, e.srv.URL, ro, method, path, body, h...)
	}
	if r := do("GET", "/api/v1/agents/custom-tools/", nil); r.Status != 200 {
		t.Fatalf("read-only key reading: %d %s", r.Status, r.Body)
	}
	wantError(t, do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"}), 403, "forbidden")
	wantError(t, do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", e.id), nil), 403, "forbidden")
	wantError(t, do("POST", "/api/v1/agents/", map[string]any{"name": "x"}), 403, "forbidden")

	// A read-only action runs; any other is refused before anything runs,
	// and the key stays free.
	get := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/ro-get"}}
	if r := do("POST", callPath, get); r.Status != 200 {
		t.Fatalf("read-only action: %d %s", r.Status, r.Body)
	}
	wantError(t, do("POST", callPath, callBody(e.id, "/ro-post", 1), "Idempotency-Key", "ro-1"), 403, "forbidden")
	if e.tool.count("/ro-post") != 0 {
		t.Fatal("a read-only key ran a post")
	}
	if r := e.call(callBody(e.id, "/ro-post", 1), "ro-1"); r.Status != 200 {
		t.Fatalf("the refused call's key with a full key: %d %s", r.Status, r.Body)
	}
	// Nor does it get the stored answer of such a call: a replay is an
	// answer of the action too.
	wantError(t, do("POST", callPath, callBody(e.id, "/ro-post", 1), "Idempotency-Key", "ro-1"), 403, "forbidden")
	// A read-only action's answer replays as for any key.
	getKeyed := func() *testserver.Response { return do("POST", callPath, get, "Idempotency-Key", "ro-get") }
	first := getKeyed()
	if again := getKeyed(); first.Status != 200 || again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) {
		t.Fatalf("a read-only action with a key, twice: %d %s, then %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	defer func() {
		// Once the tool is gone too (API.md: a replay holds even if the
		// tool was since deleted).
		if r := e.srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", e.id), nil); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if again := getKeyed(); again.Status != 200 || !bytes.Equal(first.Body, again.Body) {
			t.Errorf("a read-only action's replay once its tool is deleted: %d %s", again.Status, again.Body)
		}
	}()

	// Retryable is not read-only: put and delete change the target.
	for _, action := range []string{"put", "delete"} {
		body := map[string]any{"tool": e.id, "action": action, "arguments": map[string]any{"path": "/ro-" + action}}
		wantError(t, do("POST", callPath, body), 403, "forbidden")
		if e.tool.count("/ro-"+action) != 0 {
			t.Fatalf("a read-only key ran a %s", action)
		}
	}
	// Nothing that changes a tool or an agent is allowed either.
	agent := e.srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "ro-target"})
	if agent.Status != 201 {
		t.Fatalf("agent: %d %s", agent.Status, agent.Body)
	}
	agentPath := fmt.Sprintf("/api/v1/agents/%v/", agent.JSON()["id"])
	toolPath := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", e.id)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", toolPath + "provide-config/", map[string]any{"user_response": map[string]any{"base_url": "http://x"}}},
		{"POST", toolPath + "reset-config/", nil},
		{"PATCH", agentPath, map[string]any{"name": "renamed"}},
		{"DELETE", agentPath, nil},
	} {
		wantError(t, do(c.method, c.path, c.body), 403, "forbidden")
	}
	if r := e.srv.Do("GET", agentPath, nil); r.Status != 200 || r.JSON()["name"] != "ro-target" {
		t.Errorf("the agent after the read-only key's attempts: %d %s", r.Status, r.Body)
	}
	if r := e.srv.Do("GET", toolPath, nil); r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Errorf("the tool after the read-only key's attempts: %d %s", r.Status, r.Body)
	}
}
