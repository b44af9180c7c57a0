package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestH17InvisibleNames: a name of characters that render as nothing but
// are neither spaces nor format characters (Hangul fillers, the combining
// grapheme joiner, variation selectors, the Braille blank) is blank, as a
// zero-width space is: an agent's is refused as empty and keeps the agent
// as it was, a tool's label takes the catalog name.
func TestH17InvisibleNames(t *testing.T) {
	c := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "error"}})
	agent := c.createAgent(map[string]any{"name": "kept", "goal": "g", "tools": []int64{}, "status": "draft"})
	path := fmt.Sprintf("/api/v1/agents/%d/", agent)
	for _, name := range []string{"\u3164", "\u115f", "\uffa0", "\u034f", "\ufe0f", "\u2800", " \u3164\u200b "} {
		t.Run(fmt.Sprintf("%+q", name), func(t *testing.T) {
			c := c.with(t)
			fdWantFields(t, c.do("PATCH", path, map[string]any{"name": name}), "validation_error", "name")
			if got := c.ok(200, "GET", path, nil)["name"]; got != "kept" {
				t.Fatalf("a refused PATCH changed the name to %+q", got)
			}
			fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": name, "goal": "g", "tools": []int64{}, "status": "draft"}),
				"validation_error", "name")
			tool := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": name})
			if tool["name"] != "tavily" {
				t.Fatalf("label %+q kept as %+q, want the catalog name", name, tool["name"])
			}
		})
	}
}
