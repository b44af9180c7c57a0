package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPErrorAfterActing: an MCP server that acts and then answers
// tools/call with a JSON-RPC error (here an internal error, as a mailer that
// crashed after sending would) has given the call its outcome. The key is
// kept, the error result is replayed byte for byte, and the tool never runs
// twice, even under concurrent retries. A JSON-RPC invalid-params error, by
// contrast, says the tool did not run: the key is released.
func TestMCPErrorAfterActing(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	var sends, refusals atomic.Int64
	up := mcp.NewServer(&mcp.Implementation{Name: "mailer", Version: "1"}, nil)
	object := json.RawMessage(`{"type":"object"}`)
	up.AddTool(&mcp.Tool{Name: "send", InputSchema: object}, // no annotations: destructive, not retryable
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sends.Add(1)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the mailer crashed after sending",
				Data: json.RawMessage(`{"message_id":"m-1"}`)}
		})
	up.AddTool(&mcp.Tool{Name: "refuse", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			refusals.Add(1)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "to is required"}
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections() // Quiver's pooled session holds a stream open
		hs.Close()
	})
	id := mqConnect(t, srv, "mailer", map[string]any{"url": hs.URL})

	const callers = 8
	answers := make([]*testserver.Response, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { answers[i] = mqCall(srv, id, "send", map[string]any{"to": "a@b.c"}, "send-1") })
	}
	wg.Wait()
	var first *testserver.Response
	for _, r := range answers {
		switch {
		case r.Status == 409 && r.JSON()["error"] == "request_in_progress":
			continue // raced the first; retried below
		case r.Status != 200:
			t.Fatalf("send: %d %s", r.Status, r.Body)
		case first == nil || r.Header.Get("Idempotent-Replayed") != "true":
			first = r
		}
	}
	if first == nil {
		t.Fatal("no caller got an answer")
	}
	m := first.JSON()
	res, _ := m["result"].(map[string]any)
	if m["is_error"] != true || res["error"] != "mcp_error" || res["code"] != float64(jsonrpc.CodeInternalError) ||
		res["message"] != "the mailer crashed after sending" || fmt.Sprint(res["data"]) != "map[message_id:m-1]" {
		t.Fatalf("send answered %s, want the server's error as an error result", first.Body)
	}
	again := mqCall(srv, id, "send", map[string]any{"to": "a@b.c"}, "send-1")
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("retry: %d %s (replayed %q), want the first answer replayed", again.Status, again.Body, again.Header.Get("Idempotent-Replayed"))
	}
	for _, r := range answers {
		if r.Status == 200 && !bytes.Equal(r.Body, first.Body) {
			t.Errorf("answers differ:\n%s\n%s", r.Body, first.Body)
		}
	}
	if n := sends.Load(); n != 1 {
		t.Fatalf("send ran %d times, want 1", n)
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/send-1", nil); r.Status != 200 || r.JSON()["state"] != "succeeded" {
		t.Errorf("key state: %d %s", r.Status, r.Body)
	}
	var log *testserver.Response // the call log is written in batches, off the call path
	testserver.Eventually(t, 5*time.Second, "the call logged", func() bool {
		log = srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d", id), nil)
		return len(log.JSON()["calls"].([]any)) > 0
	})
	if calls := log.JSON()["calls"].([]any); len(calls) != 1 || calls[0].(map[string]any)["outcome"] != "tool_error" {
		t.Errorf("call log: %s, want one tool_error", log.Body)
	}

	// Invalid params: refused before running, the key is free again and a
	// different call may take it.
	mqWant(t, mqCall(srv, id, "refuse", nil, "refuse-1"), 422, "invalid_arguments")
	if r := srv.Do("GET", "/api/v1/idempotency-keys/refuse-1", nil); r.Status != 404 {
		t.Errorf("key after a refusal: %d %s, want 404", r.Status, r.Body)
	}
	if r := mqCall(srv, id, "send", map[string]any{"to": "c@d.e"}, "refuse-1"); r.Status != 200 || sends.Load() != 2 {
		t.Errorf("reusing a released key: %d %s, %d sends", r.Status, r.Body, sends.Load())
	}
}
