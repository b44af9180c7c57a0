package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestLabelsAreOneLine: a connected tool's label and an agent's name are one
// line of text, as an account's name is: a control character (a line break,
// BEL, DEL) is a 422 naming the field, on create and on PATCH, and nothing is
// stored. Space around a name is still trimmed, and an agent's goal may
// still run over several lines.
func TestLabelsAreOneLine(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	tools := c.ok(200, "GET", "/api/v1/agents/custom-tools/", nil)
	for _, bad := range []string{"two\nlines", "bell\a", "tab\there", "del\x7f", "cr\rx"} {
		fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "name": bad}), "validation_error", "name")
		fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": bad}), "validation_error", "name")
	}
	if now := c.ok(200, "GET", "/api/v1/agents/custom-tools/", nil); len(fdList(t, now, "tools")) != len(fdList(t, tools, "tools")) {
		t.Fatalf("a refused label connected a tool: %v", now)
	}
	if r := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "name": " \n padded \t"}); r["name"] != "padded" {
		t.Errorf("label %q, want the trimmed padded", r["name"])
	}
	a := c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": "one line", "goal": "first\nsecond"})
	path := fdPath("/api/v1/agents/%d/", fdInt(t, a["id"]))
	fdWantFields(t, c.do("PATCH", path, map[string]any{"name": "now\ntwo"}), "validation_error", "name")
	if got := c.ok(200, "GET", path, nil); got["name"] != "one line" || got["goal"] != "first\nsecond" {
		t.Errorf("agent after a refused PATCH: %v", got)
	}
}
