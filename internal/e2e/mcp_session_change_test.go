package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// A custom MCP server that replaced Quiver's session, or answers 404, seen
// through the REST API (connectors/mcp's session_change_test.go has the
// cases one by one).

// TestMCPSessionReplaced: a server that names another session in its
// answer to the pooled session's tools/list (which a first call makes) has
// replaced that session. The listing is answered and the session retired:
// the call runs, once, on a fresh session, and so does the next. The
// listing used to fail (502 tool_unreachable), breaking the session.
func TestMCPSessionReplaced(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	replacer := &mcptest.SessionReplacer{Method: "tools/list"}
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Wrap: replacer.Wrap, PageSize: 100})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})

	replacer.Replace()
	for i, key := range []string{"replaced-1", "replaced-2"} {
		r := mqCall(srv, id, "increment", nil, key)
		if r.Status != 200 || r.JSON()["is_error"] != false {
			t.Fatalf("call %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if n := replacer.Issued(); n != 1 {
		t.Errorf("the server replaced %d sessions, want 1", n)
	}
	if n := counter.Calls("increment"); n != 2 {
		t.Errorf("increment ran %d times, want 2", n)
	}
}
