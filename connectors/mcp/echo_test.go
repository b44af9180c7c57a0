package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
)

// echoServer is an MCP server with one tool, headers, answering the
// request's Authorization and X-Api-Key headers: as text holding JSON,
// and as structured content beside a text of its own.
func echoServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "headers", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h := map[string]string{"authorization": req.Extra.Header.Get("Authorization"), "x-api-key": req.Extra.Header.Get("X-Api-Key")}
			b, _ := json.Marshal(h)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "said", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "you sent " + req.Extra.Header.Get("Authorization")}},
				StructuredContent: map[string]any{"key": req.Extra.Header.Get("X-Api-Key")},
			}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestEchoedCredentialsAreMasked: a server that quotes the credentials
// Quiver sends it (the bearer token, a header's value) has them masked in
// the result, its text and its structured content alike; a tool with
// none configured gets its result as it came.
func TestEchoedCredentialsAreMasked(t *testing.T) {
	t.Parallel()
	url := echoServer(t)
	c := setup(t, nil)
	const token, apiKey = "tok-echo-123456", `k/"quoted"<&>`
	headers, _ := json.Marshal(map[string]string{"X-Api-Key": apiKey})
	tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Version: 1,
		Config: map[string]string{"url": url, "bearer_token": token, "headers": string(headers)}}
	ctx := ctxFor(t, 20*time.Second)
	for _, action := range []string{"headers", "said"} {
		res, err := c.Call(ctx, tool, action, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		all := string(res.Content) + string(res.Structured)
		if strings.Contains(all, "tok-echo") || strings.Contains(all, "quoted") {
			t.Errorf("%s: the result holds a credential: %s / %s", action, res.Content, res.Structured)
		}
		if !strings.Contains(all, "****") || !json.Valid(res.Content) || (res.Structured != nil && !json.Valid(res.Structured)) {
			t.Errorf("%s: want valid JSON with the credentials masked: %s / %s", action, res.Content, res.Structured)
		}
	}

	plain := &connectors.Tool{ID: 2, AccountID: 1, Entry: customEntry, Version: 1, Config: map[string]string{"url": url}}
	res, err := c.Call(ctx, plain, "headers", json.RawMessage(`{}`))
	if err != nil || string(res.Content) != `{"authorization":"","x-api-key":""}` {
		t.Fatalf("a tool without credentials: %s, %v", res.Content, err)
	}
}

// TestHideEchoedCostsNothingWithoutAnEcho: a result that quotes none of a
// tool's credentials is scanned without an allocation, as every call's
// result is: the credentials' masked forms are worked out once, with the
// target, not per call.
func TestHideEchoedCostsNothingWithoutAnEcho(t *testing.T) {
	headers, _ := json.Marshal(map[string]string{"X-Api-Key": `k/"quoted"<&>`})
	tgt, err := resolveTarget(customEntry, map[string]string{"url": "https://mcp.example.com/mcp",
		"bearer_token": "tok-echo-123456", "headers": string(headers)}, "")
	if err != nil {
		t.Fatal(err)
	}
	res := connectors.Result{Content: json.RawMessage(`{"result":"nothing secret here"}`)}
	if n := testing.AllocsPerRun(100, func() { tgt.hideEchoed(res) }); n != 0 {
		t.Errorf("hideEchoed of a result without credentials: %v allocations, want 0", n)
	}
	if got := tgt.hideEchoed(connectors.Result{Content: json.RawMessage(`"tok-echo-123456 k\/\"quoted\"\u003c\u0026\u003e"`)}); string(got.Content) != `"**** ****"` {
		t.Errorf("hideEchoed of a result quoting both: %s, want both masked", got.Content)
	}
}

// TestHideEchoedKeepsJSON: a configured header value that is a number (an
// organisation's ID beside the token) is masked where the result holds it
// as that number, which becomes a string, and not inside other numbers: the
// result stays JSON, so it is not turned into one string and its
// structured content is kept.
func TestHideEchoedKeepsJSON(t *testing.T) {
	tgt, err := resolveTarget(customEntry, map[string]string{"url": "https://mcp.example.com/mcp",
		"headers": `{"X-Org-Id":"4815162342"}`}, "")
	if err != nil {
		t.Fatal(err)
	}
	res := tgt.hideEchoed(connectors.Result{Content: json.RawMessage(`{"org":4815162342,"at":14815162342000,"note":"org 4815162342"}`),
		Structured: json.RawMessage(`{"org":4815162342}`)})
	if got, want := string(res.Content), `{"org":"****","at":14815162342000,"note":"org ****"}`; got != want {
		t.Errorf("content %s, want %s", got, want)
	}
	if got, want := string(res.Structured), `{"org":"****"}`; got != want {
		t.Errorf("structured content %s, want %s", got, want)
	}
}
