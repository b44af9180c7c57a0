package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentLeftOutToolAnswersAsREST: a replica whose first build of an
// agent's list meets a tool's server down leaves the tool out of the list
// (it has no schemas to show). An agent that has the tool's names from
// another replica's list, or from before a restart, used to get JSON-RPC's
// "unknown tool" for them, as if the tool did not exist. A tools/call of
// such a name now gets what the same REST call gets: tool_unreachable as a
// tool error while the server is down, its key left free, and, once the
// server is back, the call run once and replayed, before the agent's list
// shows the tool again.
func TestMCPAgentLeftOutToolAnswersAsREST(t *testing.T) {
	a := testserver.Start(t, testserver.Options{Postgres: true})
	counter, px, tool := mqConnectBehindProxy(t, a, "flaky")
	r := a.Do("POST", "/api/v1/agents/", map[string]any{"name": "leftout", "tools": []int64{tool}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agent := int64(r.JSON()["id"].(float64))
	path := fmt.Sprintf("/api/v1/agents/%d/mcp", agent)
	// Replica a lists the tool while its server is up.
	if names := mqToolNames(t, mqaSession(t, a, a.URL+path)); names["flaky__increment"] == nil {
		t.Fatalf("replica a lists %v", mqaSorted(names))
	}

	// Replica b starts while the server is down: it never listed the tool.
	px.setCut(true)
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.DatabaseURL})
	cs := mqaSession(t, b, b.URL+path)
	if names := mqToolNames(t, cs); names["flaky__increment"] != nil {
		t.Fatalf("replica b lists the tool its server is down for: %v", mqaSorted(names))
	}
	call := func(key string) (*sdk.CallToolResult, error) {
		return cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "flaky__increment", Arguments: map[string]any{"idempotency_key": key}})
	}

	rest := mqCall(b, tool, "increment", map[string]any{}, "k-leftout-rest")
	if rest.Status != 502 || rest.JSON()["error"] != "tool_unreachable" {
		t.Fatalf("REST while the server is down: %d %s, want 502 tool_unreachable", rest.Status, rest.Body)
	}
	res, err := call("k-leftout")
	if err != nil {
		t.Fatalf("tools/call while the server is down: %v, want tool_unreachable as REST answers", err)
	}
	if env := mqEnvelope(t, res); env["error"] != "tool_unreachable" || env["message"] != rest.JSON()["message"] {
		t.Fatalf("tools/call while the server is down: %v, want REST's %s", env, rest.Body)
	}
	// Without structured content: the action's output schema, if it has
	// one, is not known here, and clients check one even on an error.
	if res.StructuredContent != nil {
		t.Errorf("the refusal carries structured content %v", res.StructuredContent)
	}
	// Without its key it is refused as a listed action is, nothing sent.
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "flaky__increment", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if env := mqEnvelope(t, res); env["error"] != "tool_unreachable" {
		t.Fatalf("without a key while the server is down: %v", env)
	}
	// A name the tool never had stays unknown.
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "other__increment", Arguments: map[string]any{}})
	mqrWantUnknown(t, "other__increment", res, err)

	// The server is back: the refused call's key is free, runs once and
	// replays, though the agent's list has not been built again yet.
	px.setCut(false)
	first, err := call("k-leftout")
	if err != nil || first.IsError || !strings.Contains(mqText(t, first), `"count":1`) {
		t.Fatalf("the call once the server is back: %v %+v", err, first)
	}
	again, err := call("k-leftout")
	mqrWantReplay(t, "the same call again", first, again, err)
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "flaky__increment", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if env := mqEnvelope(t, res); env["error"] != "idempotency_key_required" || !strings.Contains(env["message"].(string), "idempotency_key argument") {
		t.Fatalf("without a key once the server is back: %v", env)
	}
	if n := counter.Calls("increment"); n != 1 {
		t.Errorf("increment ran %d times, want 1", n)
	}
}
