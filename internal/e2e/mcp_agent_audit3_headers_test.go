package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentAudit3BadHeaderBinding: an upstream tool whose input schema
// has a property given as the schema true and another property bound to an
// HTTP header (x-mcp-header) the SDK would refuse (here on an object) is
// kept by the SDK's client, which cannot read the properties past the
// true, and so reaches Quiver's build; Quiver's listing makes true {}, and
// the SDK's AddTool then read the binding and panicked. The request that
// built the agent's list failed, and every later request to the agent's
// endpoint waited for a build that never ended (then 503). The agent's
// list now answers, with the tool in it minus its bindings, and its call
// runs; a tool whose binding the SDK takes keeps it.
func TestMCPAgentAudit3BadHeaderBinding(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	up := mqaStart(t, mqaReadOnly("read"), &mcp.Tool{Name: "bad",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"flag": true,
			"a":    map[string]any{"type": "object", "x-mcp-header": "A"},
		}}}, &mcp.Tool{Name: "bound", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		}}})
	id := mqConnect(t, srv, "up", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, id)

	for i := range 2 { // the second request used to hang
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cs, err := mqSession(t, endpoint, srv.Key, nil)
		if err != nil {
			cancel()
			t.Fatalf("session %d: %v", i, err)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			cancel()
			t.Fatalf("tools/list %d: %v", i, err)
		}
		schemas := map[string]string{}
		for _, tl := range res.Tools {
			b, _ := json.Marshal(tl.InputSchema)
			schemas[tl.Name] = string(b)
		}
		if _, ok := schemas["up__read"]; !ok || len(schemas) != 3 {
			t.Errorf("tools/list %d: %v, want up__read, up__bad and up__bound", i, schemas)
		}
		// The binding the SDK refuses is dropped; a sound one is kept.
		if s := schemas["up__bad"]; s == "" || strings.Contains(s, "x-mcp-header") {
			t.Errorf("tools/list %d: up__bad's schema %s, want it listed without x-mcp-header", i, s)
		}
		if s := schemas["up__bound"]; !strings.Contains(s, `"x-mcp-header":"Region"`) {
			t.Errorf("tools/list %d: up__bound's schema %s, want its binding kept", i, s)
		}
		call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__bad", Arguments: map[string]any{"flag": 1}})
		cancel()
		if err != nil {
			t.Fatalf("tools/call %d: %v", i, err)
		}
		if call.IsError {
			b, _ := json.Marshal(call)
			t.Fatalf("tools/call %d: %s", i, b)
		}
	}
	if runs := up.ran(); len(runs) != 2 || runs[0].tool != "bad" {
		t.Errorf("upstream ran %v, want bad twice", runs)
	}
}
