package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeCfgHeaderNames: a custom MCP server's headers field whose name is
// no HTTP header name (a token, RFC 9110 §5.1) is refused on headers, at
// the form, and the tool stays at its step. Before, such a name reached the
// HTTP client, which refused to send the request, and the refusal came back
// as an unreachable server on url ("the connection failed").
func TestProbeCfgHeaderNames(t *testing.T) {
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	c := fdStart(t, testserver.Options{})
	id := c.createTool("custom-mcp")
	path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id)
	before := c.ok(200, "GET", path, nil)
	for _, name := range []string{"é", "X(A)", "X\"A", "X/A", "{x}"} {
		r := c.do("POST", path+"provide-config/", map[string]any{"user_response": map[string]any{
			"url": counter.URL, "headers": map[string]string{name: "v"}}})
		fdWantFields(t, r, "validation_error", "headers")
	}
	after := c.ok(200, "GET", path, nil)
	if fmt.Sprint(before["next_configuration_step"]) != fmt.Sprint(after["next_configuration_step"]) ||
		fmt.Sprint(before["config"]) != fmt.Sprint(after["config"]) || after["is_configured"] != false {
		t.Fatalf("a refused step changed the tool: %v → %v", before, after)
	}
	// A valid name is still accepted.
	c.ok(200, "POST", path+"provide-config/", map[string]any{"user_response": map[string]any{
		"url": counter.URL, "headers": map[string]string{"X-Api-Key": "v"}}})
}
