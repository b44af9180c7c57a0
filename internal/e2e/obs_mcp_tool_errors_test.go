package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestObsMCPToolErrorsShow: an agent's MCP endpoint answers Quiver's own
// failures of a tools/call as tool errors in an HTTP 200. The request's log
// line still says so: the error's code and the status REST would have
// answered, at that status's level (a 4xx at info, a tool's server away at
// warn), and quiver_mcp_tool_errors_total counts each by code. A call that
// succeeds, or a tool's own error, adds nothing.
func TestObsMCPToolErrorsShow(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	tool := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "obs", "tools": []int64{tool}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	path := fmt.Sprintf("/api/v1/agents/%d/mcp", int64(r.JSON()["id"].(float64)))
	cs := mqaSession(t, srv, srv.URL+path)
	sample := func(code string) string { return fmt.Sprintf(`quiver_mcp_tool_errors_total{code=%q}`, code) }

	// call makes one tools/call and returns the request line it logged.
	call := func(name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		before := len(srv.LogText())
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var line map[string]any
		testserver.Eventually(t, 5*time.Second, "the request's line", func() bool {
			for _, m := range obsLinesSince(t, srv, before) {
				if m["msg"] == "request" && m["route"] == "/api/v1/agents/:id/mcp" && m["method"] == "POST" {
					line = m
					return true
				}
			}
			return false
		})
		return res, line
	}

	res, line := call("counter__read_count", map[string]any{})
	if res.IsError || line["tool_error"] != nil || line["level"] != "INFO" {
		t.Fatalf("a call that succeeded: isError %v, line %v", res.IsError, line)
	}

	// Rejected before it ran: a non-retryable action without its key.
	res, line = call("counter__increment", map[string]any{})
	if env := mqEnvelope(t, res); env["error"] != "idempotency_key_required" {
		t.Fatalf("increment without a key: %v", env)
	}
	if line["status"] != float64(200) || line["tool_error"] != "idempotency_key_required" || line["tool_error_status"] != float64(400) || line["level"] != "INFO" {
		t.Errorf("request line of a rejected call: %v", line)
	}
	if v := metricValue(t, srv, sample("idempotency_key_required")); v != 1 {
		t.Errorf("%s = %v, want 1", sample("idempotency_key_required"), v)
	}

	// The tool's server away: 502 over REST, a warning.
	counter.Close()
	res, line = call("counter__read_count", map[string]any{})
	if env := mqEnvelope(t, res); env["error"] != "tool_unreachable" {
		t.Fatalf("read_count with its server away: %v", env)
	}
	if line["tool_error"] != "tool_unreachable" || line["tool_error_status"] != float64(502) || line["level"] != "WARN" {
		t.Errorf("request line of an unreachable tool's call: %v", line)
	}
	if v := metricValue(t, srv, sample("tool_unreachable")); v != 1 {
		t.Errorf("%s = %v, want 1", sample("tool_unreachable"), v)
	}
	if v := metricValue(t, srv, sample("idempotency_key_required")); v != 1 {
		t.Errorf("%s = %v after another code's error, want 1 still", sample("idempotency_key_required"), v)
	}
}
