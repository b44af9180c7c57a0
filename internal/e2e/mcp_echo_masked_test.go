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

// TestMCPEchoedCredentialsMasked: a custom MCP tool whose server quotes the
// credentials Quiver sends it (here, a tool answering its request's
// Authorization and X-Api-Key headers) has them masked in the call's
// result, in the first answer and in its replay alike, as http-request's
// token is (TestHTTPRequestTokenEchoMasked).
func TestMCPEchoedCredentialsMasked(t *testing.T) {
	echo := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	echo.AddTool(&mcp.Tool{Name: "headers", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(map[string]string{"authorization": req.Extra.Header.Get("Authorization"), "key": req.Extra.Header.Get("X-Api-Key")})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echo }, nil))
	t.Cleanup(hs.Close)

	srv := testserver.Start(t, testserver.Options{})
	tool := mqConnect(t, srv, "echo", map[string]any{"url": hs.URL, "bearer_token": "mcp-SECRET-tok77",
		"headers": map[string]string{"X-Api-Key": "hdr-SECRET-val88"}})
	first := mqCall(srv, tool, "headers", nil, "k-echo")
	again := mqCall(srv, tool, "headers", nil, "k-echo")
	for _, r := range []*testserver.Response{first, again} {
		if r.Status != 200 || strings.Contains(string(r.Body), "SECRET") || !strings.Contains(string(r.Body), `"authorization":"Bearer ****"`) {
			t.Fatalf("call: %d %s, want the credentials masked", r.Status, r.Body)
		}
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Fatalf("the replay differs: %s", again.Body)
	}
}
