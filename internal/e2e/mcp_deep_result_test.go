package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPDeepJSONText: a tool whose text content is JSON nested deeper than
// clients decode (the Go SDK refuses a message past 1000 levels, Python's
// json overflows its recursion limit near there) gets it back as the MCP
// content it is, the text unparsed, over REST and the agent endpoint alike,
// first answer and replay: parsed, the REST answer would be one the SDKs
// cannot read and the agent's answer one its client refuses whole. JSON
// nested as real results are is parsed as before.
func TestMCPDeepJSONText(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	deep := strings.Repeat("[", 990) + "1" + strings.Repeat("]", 990)
	up := mcp.NewServer(&mcp.Implementation{Name: "deep", Version: "1"}, nil)
	object := json.RawMessage(`{"type":"object"}`)
	text := func(s string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
	}
	up.AddTool(&mcp.Tool{Name: "deep", InputSchema: object}, text(deep)) // not retryable: called with a key
	up.AddTool(&mcp.Tool{Name: "nested", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		text(strings.Repeat(`{"a":`, 50)+"1"+strings.Repeat("}", 50)))
	deepStructured := json.RawMessage(strings.Repeat(`{"a":`, 700) + "1" + strings.Repeat("}", 700))
	up.AddTool(&mcp.Tool{Name: "structured", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a deep answer"}}, StructuredContent: deepStructured}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	id := mqConnect(t, srv, "deep", map[string]any{"url": hs.URL})

	for _, label := range []string{"first", "replay"} {
		r := mqCall(srv, id, "deep", nil, "deep-key-1")
		m := fdObject(t, r)
		if m["result_type"] != "mcp_content" || m["is_error"] != false {
			t.Fatalf("%s: result_type %v, is_error %v, want the content unparsed: %.200s", label, m["result_type"], m["is_error"], r.Body)
		}
		var blocks []struct{ Type, Text string }
		raw, _ := json.Marshal(m["result"])
		if json.Unmarshal(raw, &blocks) != nil || len(blocks) != 1 || blocks[0].Type != "text" || blocks[0].Text != deep {
			t.Fatalf("%s: result %.200s, want one text block holding the tool's text", label, raw)
		}
	}
	r := mqCall(srv, id, "nested", nil, "")
	if m := fdObject(t, r); m["result_type"] != nil || !strings.HasPrefix(string(r.Body), `{`) || !strings.Contains(string(r.Body), `"result":{"a":{"a":`) {
		t.Errorf("nested: %.200s, want the JSON parsed", r.Body)
	}

	// Structured content that deep is left out: the content is the result.
	r = mqCall(srv, id, "structured", nil, "")
	if m := fdObject(t, r); m["result_type"] != "mcp_content" || strings.Contains(string(r.Body), `{"a":{"a":`) {
		t.Errorf("structured: %.200s, want the content alone", r.Body)
	}

	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	for _, label := range []string{"first", "replay"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep__deep", Arguments: map[string]any{"idempotency_key": "deep-key-2"}})
		if err != nil {
			t.Fatalf("agent %s: %v", label, err)
		}
		if res.IsError || mqText(t, res) != deep || res.StructuredContent != nil {
			t.Fatalf("agent %s: is_error %v, structured %v, text %.80q; want the tool's text", label, res.IsError, res.StructuredContent != nil, mqText(t, res))
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deep__structured"})
	if err != nil || res.IsError || mqText(t, res) != "a deep answer" || res.StructuredContent != nil {
		t.Fatalf("agent structured: %+v, %v; want the text alone", res, err)
	}
}
