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
