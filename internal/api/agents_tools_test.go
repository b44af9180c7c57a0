package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// agentsSetup starts a server and connects two tools of its account and
// one of another account's; it returns them and the server.
func agentsSetup(t *testing.T, opts testserver.Options) (srv *testserver.Server, mine, theirs int64) {
	t.Helper()
	srv = testserver.Start(t, opts)
	connect := func(key string) int64 {
		t.Helper()
		r := testserver.Do(t, srv.URL, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
		if r.Status != 201 {
			t.Fatalf("connect a tool: %d %s", r.Status, r.Body)
		}
		return int64(r.JSON()["id"].(float64))
	}
	return srv, connect(srv.Key), connect(srv.NewKey("other"))
}

// A tools list is refused whole with fields.tools naming every bad ID
// (API.md): one listed twice must not hide another that is not the
// account's, or the caller fixes one and meets the next.
func TestAgentToolsRefusalNamesEveryBadID(t *testing.T) {
	for name, opts := range map[string]testserver.Options{"postgres": {Postgres: true}, "embedded": {}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, mine, theirs := agentsSetup(t, opts)
			agent := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "kept", "tools": []int64{mine}})
			if agent.Status != 201 {
				t.Fatalf("create: %d %s", agent.Status, agent.Body)
			}
			path := fmt.Sprintf("/api/v1/agents/%v/", agent.JSON()["id"])
			for _, c := range []struct {
				tools []int64
				want  []string // each must appear in fields.tools
			}{
				{[]int64{mine, mine, theirs}, []string{fmt.Sprint(mine), fmt.Sprint(theirs)}},
				{[]int64{theirs, theirs}, []string{fmt.Sprint(theirs)}},
				{[]int64{999_999, mine, 999_999, 888_888}, []string{"999999", "888888"}},
			} {
				for _, r := range []*testserver.Response{
					srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "refused", "tools": c.tools}),
					srv.Do("PATCH", path, map[string]any{"name": "changed", "tools": c.tools}),
				} {
					fields, _ := r.JSON()["fields"].(map[string]any)
					msg, _ := fields["tools"].(string)
					if r.Status != 422 || r.JSON()["error"] != "validation_error" {
						t.Fatalf("tools %v: %d %s, want 422 validation_error", c.tools, r.Status, r.Body)
					}
					for _, id := range c.want {
						if !strings.Contains(msg, id) {
							t.Errorf("tools %v: fields.tools %q does not name %s", c.tools, msg, id)
						}
					}
				}
			}
			// Nothing changed: no agent made, the one agent as it was.
			list := srv.Do("GET", "/api/v1/agents/", nil).JSON()["agents"].([]any)
			if len(list) != 1 {
				t.Fatalf("%d agents after refusals, want 1: %v", len(list), list)
			}
			if a := list[0].(map[string]any); a["name"] != "kept" || fmt.Sprint(a["tools"]) != fmt.Sprintf("[%d]", mine) {
				t.Errorf("agent after refused PATCHes: %v", a)
			}
		})
	}
}
