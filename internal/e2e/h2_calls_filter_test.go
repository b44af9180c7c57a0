package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCallsFilterByTool: ?tool= on the call log lists a deleted tool's
// calls still (the log is history), and another account's tool ID is an
// empty list, as an ID no tool ever had is: the answer says nothing of
// other accounts, not even that the ID exists.
func TestCallsFilterByTool(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<title>t</title>hello"))
	}))
	defer page.Close()
	c := fdStart(t, testserver.Options{})
	other := c.as(c.srv.NewKey("other"))
	mine := c.createTool("browser")
	theirs := other.createTool("browser")
	call := func(cl *fdClient, tool int64) {
		cl.ok(200, "POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": tool, "action": "fetch_page", "arguments": map[string]any{"url": page.URL}})
	}
	call(c, mine)
	call(other, theirs)
	c.ok(204, "DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", mine), nil)

	if got := fdList(t, c.ok(200, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d", mine), nil), "calls"); len(got) != 1 {
		t.Errorf("a deleted tool's calls: %v, want its one call", got)
	}
	for _, id := range []int64{theirs, 999999} {
		if got := fdList(t, c.ok(200, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d", id), nil), "calls"); len(got) != 0 {
			t.Errorf("?tool=%d: %v, want an empty list", id, got)
		}
	}
}
