package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentToolContent: a tool that answers with MCP content other than
// one block of JSON text (plain text, an image) keeps that content on its way
// through Quiver. Over REST, result is the content array and result_type
// says so; over the agent MCP endpoint the agent gets the content itself,
// not the text of its JSON, on the first answer and on a replay alike. A
// JSON result is unchanged: no result_type, text and structured content.
func TestMCPAgentToolContent(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	png := []byte("\x89PNG\r\n\x1a\n-not-really-an-image")
	up := mcp.NewServer(&mcp.Implementation{Name: "content", Version: "1"}, nil)
	object := json.RawMessage(`{"type":"object"}`)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	answer := func(content ...mcp.Content) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: content}, nil
		}
	}
	up.AddTool(&mcp.Tool{Name: "plain", InputSchema: object, Annotations: readOnly},
		answer(&mcp.TextContent{Text: "Hello, <b>world</b> & all"}))
	up.AddTool(&mcp.Tool{Name: "chart", InputSchema: object}, // not retryable: called with a key
		answer(&mcp.ImageContent{Data: png, MIMEType: "image/png"}, &mcp.TextContent{Text: "sales by month"}))
	up.AddTool(&mcp.Tool{Name: "data", InputSchema: object, Annotations: readOnly},
		answer(&mcp.TextContent{Text: `{"a":1}`}))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	id := mqConnect(t, srv, "content", map[string]any{"url": hs.URL})

	// REST.
	r := mqCall(srv, id, "plain", nil, "")
	m := fdObject(t, r)
	if m["result_type"] != "mcp_content" {
		t.Errorf("plain: result_type %v, want mcp_content: %s", m["result_type"], r.Body)
	}
	if got, _ := json.Marshal(m["result"]); string(got) != `[{"text":"Hello, \u003cb\u003eworld\u003c/b\u003e \u0026 all","type":"text"}]` {
		t.Errorf("plain: result %s", got)
	}
	r = mqCall(srv, id, "data", nil, "")
	if m := fdObject(t, r); m["result_type"] != nil || !bytes.Contains(r.Body, []byte(`"result":{"a":1}`)) {
		t.Errorf("data: %s, want the JSON result and no result_type", r.Body)
	}

	// The agent MCP endpoint.
	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %+v", name, res.Content)
		}
		return res
	}
	if res := call("content__plain", nil); mqText(t, res) != "Hello, <b>world</b> & all" || res.StructuredContent != nil {
		t.Errorf("plain over MCP: %q, structured %v; want the tool's text itself", mqText(t, res), res.StructuredContent)
	}
	wantChart := func(label string, res *mcp.CallToolResult) {
		t.Helper()
		if len(res.Content) != 2 {
			t.Fatalf("%s: %d content blocks, want the image and the text", label, len(res.Content))
		}
		img, ok := res.Content[0].(*mcp.ImageContent)
		if !ok || !bytes.Equal(img.Data, png) || img.MIMEType != "image/png" {
			t.Errorf("%s: first block %#v, want the image", label, res.Content[0])
		}
		if txt, ok := res.Content[1].(*mcp.TextContent); !ok || txt.Text != "sales by month" {
			t.Errorf("%s: second block %#v", label, res.Content[1])
		}
	}
	first := call("content__chart", map[string]any{"idempotency_key": "chart-1"})
	wantChart("chart", first)
	again := call("content__chart", map[string]any{"idempotency_key": "chart-1"})
	wantChart("chart replayed", again)
	if first.Meta["quiver/replayed"] != nil || again.Meta["quiver/replayed"] != true || again.Meta["quiver/call_id"] != first.Meta["quiver/call_id"] {
		t.Errorf("chart _meta %v then %v, want the second marked replayed with the first's call ID", first.Meta, again.Meta)
	}
	if res := call("content__data", nil); mqText(t, res) != `{"a":1}` || res.StructuredContent == nil {
		t.Errorf("data over MCP: %q, structured %v; want the JSON as text and structured content", mqText(t, res), res.StructuredContent)
	}
}
