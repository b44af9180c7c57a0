package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// notifications/cancelled over an agent's MCP endpoint: a cancelled
// tools/call is never lost (run, with its outcome dropped or its key left
// unusable) nor run twice.

// h6Gated is an upstream MCP server with one non-retryable tool, "act",
// that counts its runs by the key argument "k" and, while hold is set,
// waits for release before answering.
type h6Gated struct {
	URL     string
	mu      sync.Mutex
	runs    map[string]int
	hold    bool
	started chan string
	release chan struct{}
}

func h6StartGated(t *testing.T) *h6Gated {
	t.Helper()
	g := &h6Gated{runs: map[string]int{}, started: make(chan string, 64), release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "h6-gated", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "act", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"k": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ K string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			g.mu.Lock()
			g.runs[args.K]++
			hold := g.hold
			g.mu.Unlock()
			if hold {
				g.started <- args.K
				select {
				case <-g.release:
				case <-time.After(10 * time.Second):
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"done":"` + args.K + `"}`}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(hs.Close)
	g.URL = hs.URL
	return g
}

func (g *h6Gated) ran(k string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[k]
}

// h6Act is a tools/call of up__act with key k, as request id.
func h6Act(id, k string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"up__act","arguments":{"k":%q,"idempotency_key":%q}}}`, id, k, k)
}

// TestH6MCPCancelledCallNotLostOrRunTwice: in a batch (protocol
// 2025-03-26 has them), a tools/call and a notifications/cancelled for it,
// the cancel reaching the server at different moments after the call (more
// pings between them). Each call either never ran and left its key free,
// or ran once and its key replays its outcome: a retry of every key
// answers with the tool's result, and no key's call runs twice. A cancel
// sent in a POST of its own, while the call runs in another, does nothing:
// the call answers with its result (this endpoint keeps no session, so no
// request of another POST is the cancel's to end).
func TestH6MCPCancelledCallNotLostOrRunTwice(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	up := h6StartGated(t)
	path := h6Agent(t, srv, mqConnect(t, srv, "up", map[string]any{"url": up.URL}))
	done := func(r *testserver.Response, k string) bool {
		return r.Status == 200 && strings.Contains(string(r.Body), `{\"done\":\"`+k+`\"}`) && !strings.Contains(string(r.Body), `"isError":true`)
	}

	for i, pings := range []int{0, 1, 5, 20, 100, 400, 1500} {
		k := fmt.Sprintf("h6-cancel-%d", i)
		msgs := []string{h6Act(`"c"`, k)}
		for p := range pings {
			msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, p))
		}
		msgs = append(msgs, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"h6"}}`)
		r := h6Post(t, srv, path, "2025-03-26", "", "", "["+strings.Join(msgs, ",")+"]")
		if r.Status != 200 {
			t.Fatalf("%d pings: %d %s", pings, r.Status, r.Body)
		}
		// The retry, with no cancel: the outcome, first or replayed.
		again := h6Post(t, srv, path, "2025-03-26", "", "", h6Act("1", k))
		if !done(again, k) {
			t.Errorf("%d pings: the retry answered %d %s, want the tool's result", pings, again.Status, again.Body)
		}
		if n := up.ran(k); n != 1 {
			t.Errorf("%d pings: the call ran %d times, want once", pings, n)
		}
	}

	// A cancel in another POST, while the call runs.
	up.mu.Lock()
	up.hold = true
	up.mu.Unlock()
	answered := make(chan *testserver.Response, 1)
	go func() { answered <- h6Post(t, srv, path, "2025-06-18", "", "", h6Act(`"slow"`, "h6-cancel-slow")) }()
	select {
	case <-up.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach the tool")
	}
	r := h6Post(t, srv, path, "2025-06-18", "", "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}`)
	if r.Status != 202 {
		t.Errorf("the cancel: %d %s, want 202", r.Status, r.Body)
	}
	close(up.release)
	if r := <-answered; !done(r, "h6-cancel-slow") {
		t.Errorf("the call cancelled from another POST: %d %s, want its result", r.Status, r.Body)
	}
	if again := h6Post(t, srv, path, "2025-06-18", "", "", h6Act("2", "h6-cancel-slow")); !done(again, "h6-cancel-slow") ||
		!strings.Contains(string(again.Body), `"quiver/replayed":true`) || up.ran("h6-cancel-slow") != 1 {
		t.Errorf("its retry: %d %s (ran %d times), want the replay of its one run", again.Status, again.Body, up.ran("h6-cancel-slow"))
	}
}
