package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// obsLinesSince returns the JSON log lines logged after the first before
// bytes of srv's log.
func obsLinesSince(t *testing.T, srv *testserver.Server, before int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(srv.LogText()[before:], "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line that is not JSON: %s", l)
		}
		out = append(out, m)
	}
	return out
}

// TestObsConnectorLinesCarryTheRequestID: at debug, the lines the MCP
// connector logs for a call (its session opened for the call, the session
// of an older configuration retired by it) carry the ID of the request
// that caused them, as every other line logged for a request does.
func TestObsConnectorLinesCarryTheRequestID(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "debug"}})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})

	check := func(what, rid string, wantMsg string) {
		t.Helper()
		before := len(srv.LogText())
		r := srv.Do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": id, "action": "read_count", "arguments": map[string]any{}},
			"X-Request-Id", rid)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", what, r.Status, r.Body)
		}
		seen := false
		for _, m := range obsLinesSince(t, srv, before) {
			msg, _ := m["msg"].(string)
			if !strings.HasPrefix(msg, "mcp ") {
				continue
			}
			if msg == wantMsg {
				seen = true
			}
			if m["request_id"] != rid {
				t.Errorf("%s: %q logged with request_id %v, want %s", what, msg, m["request_id"], rid)
			}
		}
		if !seen {
			t.Errorf("%s: no %q line logged", what, wantMsg)
		}
	}
	check("first call", "rid-obs-conn-1", "mcp session opened")

	// A new configuration: the next call retires the old one's session
	// and opens its own.
	if r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	if r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}}); r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Fatalf("reconfigure: %d %s", r.Status, r.Body)
	}
	check("after reconfiguring", "rid-obs-conn-2", "mcp session retired")
}

// TestObsConflictsCountIdempotencyConflictsOnly: quiver_call_conflicts_total
// says what it counts. A call of a tool still being configured is a 409
// (tool_not_configured) that is no Idempotency-Key conflict: it moves no
// call series, only the HTTP one, and the metric's help says so. Before, the
// help said "409 answers of the call endpoint", which that one is.
func TestObsConflictsCountIdempotencyConflictsOnly(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	const http409 = `quiver_http_requests_total{method="POST",route="/api/v1/agents/custom-tools/call",status="409"}`
	before := obsMetrics(t, srv)
	obsDelta(t, srv, "tool_not_configured", map[string]float64{}, func() {
		r := srv.Do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": id, "action": "post", "arguments": map[string]any{"path": "/"}},
			"Idempotency-Key", "obs-not-configured")
		if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
	})
	if got := obsMetrics(t, srv)[http409] - before[http409]; got != 1 {
		t.Errorf("%s moved by %v, want 1", http409, got)
	}
	help := ""
	for _, l := range strings.Split(string(srv.Do("GET", "/metrics", nil).Body), "\n") {
		if strings.HasPrefix(l, "# HELP quiver_call_conflicts_total ") {
			help = l
		}
	}
	if !strings.Contains(help, "Idempotency-Key conflicts") || !strings.Contains(help, "tool_not_configured is none") {
		t.Errorf("the conflicts metric's help does not say what it counts: %q", help)
	}
}
