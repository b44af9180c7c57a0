package e2e

import (
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestH12ObsListingFailure: a call refused before dispatch because its
// tool's actions could not be listed (the server gone) is no dispatched
// call: no call series moves; its request line is at warn (502), and a
// line of the same request names the tool and the action asked for.
func TestH12ObsListingFailure(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_MCP_RELIST_INTERVAL": "100ms"}})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	counter.Close()
	time.Sleep(300 * time.Millisecond) // past the relist interval
	mark := len(srv.LogText())
	var r *testserver.Response
	obsDelta(t, srv, "listing failed", map[string]float64{}, func() { r = mqCall(srv, id, "not_listed", nil, "h12-l1") })
	mqWant(t, r, 502, "tool_unreachable")
	lines := obsLinesSince(t, srv, mark)
	var rid any
	for _, l := range lines {
		if l["msg"] == "request" && l["status"] == float64(502) {
			rid = l["request_id"]
			if l["level"] != "WARN" {
				t.Errorf("the 502's request line at %v", l["level"])
			}
		}
	}
	found := false
	for _, l := range lines {
		if l["msg"] != "request" && l["request_id"] == rid && l["level"] == "WARN" {
			found = true
			if l["tool"] != float64(id) || l["action"] != "not_listed" || l["code"] != "tool_unreachable" {
				t.Errorf("the warn line of the listing failure does not name tool %d, action not_listed and its code: %v", id, l)
			}
		}
	}
	if !found {
		t.Errorf("no warn line of request %v names the tool whose actions could not be listed:\n%s", rid, srv.LogText()[mark:])
	}
}
