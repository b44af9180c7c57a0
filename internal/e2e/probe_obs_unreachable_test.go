package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeObsUnreachableHidesURLKey: a call to a custom MCP server whose
// URL carries its key in the query, that then cannot be reached (its answer
// cut, or a redirect loop to a URL with the key), answers 502
// tool_unreachable whose message names the cause with the URL masked, over
// REST and over the agent's MCP endpoint. Before, the message took the
// innermost error's own text, below the masking, and showed the key.
func TestProbeObsUnreachableHidesURLKey(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	up := startObsUpstream(t)
	up.redirect = up.URL + "/elsewhere?token=" + obsQuery + "&x=1"
	id := mqConnect(t, srv, "obs", map[string]any{"url": up.URL + "/mcp?token=" + obsQuery, "bearer_token": obsBearer,
		"headers": map[string]any{"X-Api-Key": obsHeader}})
	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	for i, mode := range []string{"redirect", "echo500"} {
		// A refusal first: the pool drops its session, so the call
		// below starts with initialize, which provably was not processed.
		up.mode.Store("401")
		mqWant(t, mqCall(srv, id, "lookup", nil, ""), 502, "upstream_auth_failed")
		up.mode.Store(mode)
		up.CloseClientConnections()
		rest := mqCall(srv, id, "send", nil, fmt.Sprintf("obs-u-%d", i))
		m := mqWant(t, rest, 502, "tool_unreachable")
		msg, _ := m["message"].(string)
		if strings.Contains(msg, obsQuery) || strings.Contains(msg, "token=") && !strings.Contains(msg, "token=****") {
			t.Errorf("%s: REST message %q: want the cause with the URL's key masked", mode, msg)
		}
		up.mode.Store("401")
		mqWant(t, mqCall(srv, id, "lookup", nil, ""), 502, "upstream_auth_failed")
		up.mode.Store(mode)
		up.CloseClientConnections()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "obs__send",
			Arguments: map[string]any{"idempotency_key": fmt.Sprintf("obs-um-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if !res.IsError || strings.Contains(string(b), obsQuery) || !strings.Contains(string(b), "tool_unreachable") {
			t.Errorf("%s: agent MCP answer %s: want tool_unreachable without the URL's key", mode, b)
		}
	}
	if strings.Contains(srv.LogText(), obsQuery) {
		t.Errorf("the log shows the URL's key")
	}
}
