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

// TestMCPNotFoundAfterActing: a server that runs a non-retryable tool and
// answers 404 with a JSON-RPC error for the call's own ID (as one that
// gives its tools' errors HTTP statuses does) was taken for one that lost
// the session, and the call sent again: one request ran the tool twice.
// Now it runs once. A 404 in the shape the SDKs answer a lost session with
// still gets a fresh session and the call sent once, transparently.
func TestMCPNotFoundAfterActing(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	nf := &mcptest.NotFoundCalls{AfterActing: true, Times: 1,
		Body: `{"jsonrpc":"2.0","id":{id},"error":{"code":-32002,"message":"Invoice not found"}}`}
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Wrap: nf.Wrap})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})

	r := mqCall(srv, id, "increment", nil, "not-found-1")
	if n := counter.Calls("increment"); n != 1 {
		t.Fatalf("one request ran increment %d times (answer %d %s)", n, r.Status, r.Body)
	}
	mqWant(t, r, 502, "upstream_refused")

	lost := &mcptest.NotFoundCalls{Times: 1,
		Body: `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`}
	other := mcptest.Start(t, mcptest.Counter, mcptest.Options{Wrap: lost.Wrap})
	id = mqConnect(t, srv, "other", map[string]any{"url": other.URL})
	before := other.Initializes() // the configuration step's check had one
	r = mqCall(srv, id, "increment", nil, "lost-1")
	if sessions := other.Initializes() - before; r.Status != 200 || other.Calls("increment") != 1 || sessions != 2 {
		t.Fatalf("lost session: %d %s; ran %d times on %d sessions, want once on the second", r.Status, r.Body, other.Calls("increment"), sessions)
	}
}
