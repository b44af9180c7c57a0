package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeCallTypedToolErrorKeepsItsText: a Go SDK typed tool that
// answers an error result with a text block sends its output type's zero
// value as structuredContent beside it. The call's result is the MCP
// content array (API.md: content that is not JSON text comes as the
// content array), so the error text reaches the caller, over REST, on a
// replay, and over the agent MCP endpoint; before, the result was the zero
// value ({"id":0,"to":""}) and the text was lost.
func TestProbeCallTypedToolErrorKeepsItsText(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	up := mcp.NewServer(&mcp.Implementation{Name: "typed", Version: "1"}, nil)
	type sendIn struct {
		To string `json:"to"`
	}
	type sendOut struct {
		ID int    `json:"id"`
		To string `json:"to"`
	}
	const failure = "mailbox full: nothing was sent"
	mcp.AddTool(up, &mcp.Tool{Name: "send"}, // not retryable
		func(context.Context, *mcp.CallToolRequest, sendIn) (*mcp.CallToolResult, sendOut, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: failure}}}, sendOut{}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	id := mqConnect(t, srv, "typed", map[string]any{"url": hs.URL})

	first := mqCall(srv, id, "send", map[string]any{"to": "a"}, "probe-typed-error")
	m := fdObject(t, first)
	if m["is_error"] != true || !strings.Contains(fmt.Sprint(m["result"]), failure) {
		t.Errorf("REST: is_error %v, result %v; want the error text %q", m["is_error"], m["result"], failure)
	}
	again := mqCall(srv, id, "send", map[string]any{"to": "a"}, "probe-typed-error")
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("replay: %d %q %s; want the first body again", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}

	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "typed__send",
		Arguments: map[string]any{"to": "b", "idempotency_key": "probe-typed-error-mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.StructuredContent != nil || mqText(t, res) != failure {
		t.Errorf("MCP: error %v, structured %v, content %+v; want the error text %q alone", res.IsError,
			res.StructuredContent, res.Content, failure)
	}
}
