package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeObsAgentMCPLogLines: at the default log level, every line an
// agent's MCP endpoint logs while serving a request carries that request's
// ID. Before, the MCP SDK's own routine lines ("server connecting", "server
// session connected", "server session disconnected"), logged without a
// context, came at info with every initialize or tools/list, three lines of
// a request without its ID.
func TestProbeObsAgentMCPLogLines(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "info"}})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "tools": []int64{id}})
	agentID := int64(r.JSON()["id"].(float64))
	before := len(srv.LogText())
	endpoint := fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, agentID)
	cs, err := mqSession(t, endpoint, srv.Key, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	if len(mqToolNames(t, cs)) == 0 {
		t.Fatal("no tools")
	}
	cs.Close()
	lines := 0
	for _, l := range strings.Split(srv.LogText()[before:], "\n") {
		if l == "" {
			continue
		}
		lines++
		if !strings.Contains(l, `"request_id":"`) {
			t.Errorf("a line without a request ID: %s", l)
		}
	}
	if lines == 0 {
		t.Fatal("nothing logged")
	}
}
