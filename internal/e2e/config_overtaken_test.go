package e2e

// A configuration step whose answer is being verified (Quiver connects to
// the custom MCP server before it accepts the step) when the tool is
// deleted: the answer cannot be stored, and the response must say the tool
// is gone, not that it "was changed by another request; read it again and
// retry": reading it again is a 404.

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

func TestConfigAnswerOvertakenByDelete(t *testing.T) {
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	var first atomic.Bool // the first MCP request: verifying the step's url
	held, entered, release := heldProxy(t, counter.URL, func([]byte) bool { return first.CompareAndSwap(false, true) })
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")

	done := make(chan *testserver.Response, 1)
	go func() {
		done <- srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": held}})
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("provide-config did not reach the server")
	}
	if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	release <- struct{}{}
	r := <-done
	if r.Status != 404 || r.JSON()["error"] != "not_found" {
		t.Fatalf("provide-config on a tool deleted while its answer was verified: %d %s, want 404 not_found", r.Status, r.Body)
	}
	if r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 404 {
		t.Fatalf("the deleted tool: %d %s", r.Status, r.Body)
	}
}
