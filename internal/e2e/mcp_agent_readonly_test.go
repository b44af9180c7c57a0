package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentReadOnlyKeyList: a read-only API key is listed the actions
// annotated read-only alone, the ones it may call; a full key is listed
// every action, as before. An action hidden from the read-only key and
// called by name is refused as the engine refuses it (forbidden, a tool
// error), not as an unknown tool, and does not run.
func TestMCPAgentReadOnlyKeyList(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	up := mqaStart(t, mqaReadOnly("look"), &mcp.Tool{Name: "send"},
		&mcp.Tool{Name: "touch", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}) // retryable, not read-only
	tool := mqConnect(t, srv, "desk", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	ro, _, err := srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	roSession, err := mqSession(t, endpoint, ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := mqaSession(t, srv, endpoint)

	listed := func(cs *mcp.ClientSession) ([]string, string) {
		tools := mqToolNames(t, cs)
		b, err := json.Marshal(tools)
		if err != nil {
			t.Fatal(err)
		}
		return mqaSorted(tools), string(b)
	}
	fullNames, fullBefore := listed(full)
	if want := []string{"desk__look", "desk__send", "desk__touch"}; !slices.Equal(fullNames, want) {
		t.Fatalf("full key's list = %v, want %v", fullNames, want)
	}
	if roNames, _ := listed(roSession); !slices.Equal(roNames, []string{"desk__look"}) {
		t.Fatalf("read-only key's list = %v, want only the read-only action", roNames)
	}
	if _, fullAfter := listed(full); fullAfter != fullBefore {
		t.Fatalf("full key's list changed once a read-only key listed:\n%s\n%s", fullBefore, fullAfter)
	}

	ctx := context.Background()
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"desk__send", map[string]any{"idempotency_key": "ro-send"}},
		{"desk__touch", map[string]any{}},
	} {
		res, err := roSession.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s with the read-only key: %v, want a tool error", c.name, err)
		}
		if env := mqEnvelope(t, res); env["error"] != "forbidden" {
			t.Fatalf("%s with the read-only key: %v, want forbidden", c.name, env)
		}
	}
	res, err := roSession.CallTool(ctx, &mcp.CallToolParams{Name: "desk__look", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("desk__look with the read-only key: %v %+v", err, res)
	}
	if runs := up.ran(); len(runs) != 1 || runs[0].tool != "look" {
		t.Fatalf("ran %v, want look alone", runs)
	}
}
