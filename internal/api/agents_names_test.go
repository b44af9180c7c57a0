package api_test

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// An agent's name is one line without control characters (agents.OneLine):
// that holds for the C1 controls and Unicode's line and paragraph
// separators too, which break a line as "\n" does where the name is shown
// (the agent MCP server's title). Refused on create and on PATCH, and
// nothing is stored.
func TestAgentNameRefusesEveryLineBreak(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	a := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "one line"})
	if a.Status != 201 {
		t.Fatalf("create: %d %s", a.Status, a.Body)
	}
	path := fmt.Sprintf("/api/v1/agents/%v/", a.JSON()["id"])
	for _, bad := range []string{"next\u0085line", "csi\u009bx", "line\u2028sep", "para\u2029sep"} {
		for _, r := range []*testserver.Response{
			srv.Do("POST", "/api/v1/agents/", map[string]any{"name": bad}),
			srv.Do("PATCH", path, map[string]any{"name": bad}),
		} {
			fields, _ := r.JSON()["fields"].(map[string]any)
			if r.Status != 422 || fields["name"] == nil {
				t.Errorf("name %q: %d %s, want 422 with fields.name", bad, r.Status, r.Body)
			}
		}
	}
	list := srv.Do("GET", "/api/v1/agents/", nil).JSON()["agents"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != "one line" {
		t.Errorf("agents after refused names: %v", list)
	}
	// Other text beyond ASCII is a name like any other.
	if r := srv.Do("PATCH", path, map[string]any{"name": "Agent café — 研究"}); r.Status != 200 {
		t.Errorf("a name beyond ASCII: %d %s", r.Status, r.Body)
	}
}
