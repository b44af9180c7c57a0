package e2e

import (
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestToolLabelLengthCountsWhatIsKept counts a connected tool's label as it
// is kept, without the surrounding space that is trimmed off, as an agent's
// name is counted: a label of 200 characters inside spaces is not too long.
func TestToolLabelLengthCountsWhatIsKept(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	label := strings.Repeat("é", 200)
	m := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "name": "  " + label + " \n"})
	if m["name"] != label {
		t.Errorf("name %q, want the label trimmed", m["name"])
	}
	a := c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": "  " + label + " \n"})
	if a["name"] != label {
		t.Errorf("agent name %q, want it trimmed", a["name"])
	}
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "name": " " + label + "é "}), "validation_error", "name")
}
