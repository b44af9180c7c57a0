package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestInvisibleNames: a name made only of invisible characters (zero-width
// spaces, a byte-order mark, word joiners) shows as nothing, as a blank one
// does, and is taken as one: an agent's is refused as empty, a tool's
// label falls back to the catalog name. Visible names with such characters
// inside them (an emoji sequence's zero-width joiner), and names in any
// script, are kept as sent.
func TestInvisibleNames(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	for _, name := range []string{"\u200b", "\u200b\u2060\ufeff", " \u200d "} {
		fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": name}), "validation_error", "name")
		v := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "name": name})
		if v["name"] != "browser" {
			t.Errorf("tool label %q: name %q, want the catalog name", name, v["name"])
		}
	}
	agent := c.createAgent(map[string]any{"name": "ok"})
	fdWantFields(t, c.do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agent), map[string]any{"name": "\u200b"}), "validation_error", "name")
	for _, name := range []string{"👩\u200d💻 helper", "Ассистент", "研究助手", "مساعد"} {
		if a := c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": name}); a["name"] != name {
			t.Errorf("agent name %q came back %q", name, a["name"])
		}
		if v := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "name": name}); v["name"] != name {
			t.Errorf("tool label %q came back %q", name, v["name"])
		}
	}
}
