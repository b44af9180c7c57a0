package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentKeyRefusalsNameTheArgument: over MCP the key is the
// idempotency_key argument and the request body the arguments, so the
// refusals about a key (reused, in progress, outcome unknown on a retry)
// say so, as idempotency_key_required does, instead of REST's
// "Idempotency-Key" header and "request body". The code and the other
// fields are REST's; REST's own wording is unchanged.
func TestMCPAgentKeyRefusalsNameTheArgument(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	// Slow enough that the second call lands while the first runs, on a
	// loaded machine too.
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{SlowDelay: 4 * time.Second})
	tool := mqConnect(t, srv, "words", map[string]any{"url": counter.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "words", "tools": []int64{tool}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	cs := mqaSession(t, srv, srv.URL+fmt.Sprintf("/api/v1/agents/%d/mcp", int64(r.JSON()["id"].(float64))))
	call := func(name string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	want := func(label string, res *sdk.CallToolResult, code string, restStatus int, restMessage string) {
		t.Helper()
		env := mqEnvelope(t, res)
		msg, _ := env["message"].(string)
		if env["error"] != code || !strings.Contains(msg, "idempotency_key") || strings.Contains(msg, "Idempotency-Key") ||
			strings.Contains(msg, "request body") {
			t.Errorf("%s: %v, want %s naming the idempotency_key argument", label, env, code)
		}
		if restStatus != 0 && !strings.Contains(restMessage, "Idempotency-Key") {
			t.Errorf("%s over REST: %d %q, want REST's wording", label, restStatus, restMessage)
		}
	}

	if res := call("words__increment", map[string]any{"idempotency_key": "kw-reused"}); res.IsError {
		t.Fatalf("increment: %+v", res)
	}
	res := call("words__increment", map[string]any{"idempotency_key": "kw-reused", "other": 1})
	rest := mqCall(srv, tool, "increment", map[string]any{"other": 1}, "kw-reused")
	if rest.Status != 409 || rest.JSON()["error"] != "idempotency_key_reused" {
		t.Fatalf("REST reuse: %d %s", rest.Status, rest.Body)
	}
	want("same key, other arguments", res, "idempotency_key_reused", rest.Status, rest.JSON()["message"].(string))

	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "words__slow", Arguments: map[string]any{"idempotency_key": "kw-slow"}})
	}()
	testserver.Eventually(t, 5*time.Second, "the slow call to be reserved", func() bool {
		return srv.Do("GET", "/api/v1/idempotency-keys/kw-slow", nil).JSON()["state"] == "in_progress"
	})
	res = call("words__slow", map[string]any{"idempotency_key": "kw-slow"})
	if env := mqEnvelope(t, res); env["retry_after"] != float64(1) {
		t.Errorf("in progress: %v, want retry_after 1", env)
	}
	want("same key while running", res, "request_in_progress", 0, "")
	<-done

	first := call("words__drop_after_act", map[string]any{"idempotency_key": "kw-unknown"})
	if env := mqEnvelope(t, first); env["error"] != "tool_outcome_unknown" {
		t.Fatalf("drop_after_act: %v", env)
	}
	res = call("words__drop_after_act", map[string]any{"idempotency_key": "kw-unknown"})
	rest = mqCall(srv, tool, "drop_after_act", map[string]any{}, "kw-unknown")
	if rest.Status != 409 || rest.JSON()["error"] != "tool_outcome_unknown" {
		t.Fatalf("REST retry of the unknown outcome: %d %s", rest.Status, rest.Body)
	}
	want("retry of an unknown outcome", res, "tool_outcome_unknown", rest.Status, rest.JSON()["message"].(string))
	if n := counter.Calls("drop_after_act"); n != 1 {
		t.Errorf("drop_after_act ran %d times, want 1", n)
	}
}

// TestMCPActionTitle: an MCP tool's title, its name for people, shows in
// its action (REST) and in the agent's tools/list.
func TestMCPActionTitle(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	tool := mqConnect(t, srv, "titled", map[string]any{"url": counter.URL})
	r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", tool), nil)
	var titles = map[string]any{}
	for _, a := range r.JSON()["actions"].([]any) {
		m := a.(map[string]any)
		titles[m["name"].(string)] = m["title"]
	}
	if titles["read_count"] != "Read the count" || titles["increment"] != nil {
		t.Fatalf("titles %v, want read_count's and no other", titles)
	}
	r = srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "titles", "tools": []int64{tool}})
	names := mqToolNames(t, mqaSession(t, srv, srv.URL+fmt.Sprintf("/api/v1/agents/%d/mcp", int64(r.JSON()["id"].(float64)))))
	if got := names["titled__read_count"]; got == nil || got.Title != "Read the count" || names["titled__increment"].Title != "" {
		t.Fatalf("the agent lists %+v", got)
	}
}
