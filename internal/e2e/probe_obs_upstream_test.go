package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The secrets of the probe_obs tests: none may be in any answer, log line,
// call log or metric.
const (
	obsBearer = "obsBEARERsecret0123456789"
	obsHeader = "obsHEADERsecret0123456789"
	obsQuery  = "obsQUERYsecret0123456789"
	obsPass   = "obsPASSsecret0123456789"
)

// obsUpstream is an MCP server that wants all three secrets, and whose
// answers a test switches: "" serves, else a status of its own.
type obsUpstream struct {
	*httptest.Server
	mode     atomic.Value // string
	redirect string
}

func startObsUpstream(t *testing.T) *obsUpstream {
	up := mcp.NewServer(&mcp.Implementation{Name: "obs", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
		})
	up.AddTool(&mcp.Tool{Name: "send", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true})
	u := &obsUpstream{}
	u.mode.Store("")
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := u.mode.Load().(string)
		switch {
		case mode == "redirect":
			http.Redirect(w, r, u.redirect, http.StatusTemporaryRedirect)
		case mode == "echo500":
			// A server that echoes what it was sent in its error.
			w.WriteHeader(500)
			fmt.Fprintf(w, "upstream broke; request was %s %s auth=%s key=%s", r.Method, r.URL, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		case mode == "401" || r.Header.Get("Authorization") != "Bearer "+obsBearer || r.Header.Get("X-Api-Key") != obsHeader || r.URL.Query().Get("token") != obsQuery:
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":"unauthorized","message":"bad credentials: %s"}`, r.Header.Get("Authorization"))
		default:
			sdk.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() {
		u.CloseClientConnections()
		u.Close()
	})
	return u
}
