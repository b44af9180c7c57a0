package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// mqlAgent is a stateless Counter configured as a tool named name, attached
// to an agent of its own, with a Go SDK session on the agent's endpoint
// whose tools/list has warmed the agent's list.
type mqlAgent struct {
	up    *mcptest.Server
	agent int64
	path  string // of the agent's endpoint
	cs    *sdk.ClientSession
}

func mqlStart(t *testing.T, srv *testserver.Server, name string) *mqlAgent {
	t.Helper()
	a := &mqlAgent{up: mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: true, PageSize: 100})}
	tool := mqConnect(t, srv, name, map[string]any{"url": a.up.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": name, "tools": []int64{tool}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	a.agent = int64(r.JSON()["id"].(float64))
	a.path = fmt.Sprintf("/api/v1/agents/%d/mcp", a.agent)
	a.cs = mqaSession(t, srv, srv.URL+a.path)
	if names := mqToolNames(t, a.cs); names[name+"__read_count"] == nil {
		t.Fatalf("%s: the agent lists %v", name, mqaSorted(names))
	}
	return a
}

func (a *mqlAgent) call(name string, args map[string]any) (*sdk.CallToolResult, error) {
	return a.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
}

// post posts one tools/call of name to the agent's endpoint without a
// session, as a plain HTTP client does (the fast path's form).
func (a *mqlAgent) post(srv *testserver.Server, name string) *testserver.Response {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	return srv.Do("POST", a.path, body, "Accept", "application/json, text/event-stream")
}

// TestMCPAgentToolAdded: a stateless MCP server cannot say that its tool
// list changed, so a tool its operator added was "unknown tool" at an agent's
// endpoint until the agent's list was built from a list read anew (60 s).
// A tools/call of {tool}__{action}, where {tool} is attached and its list is
// older than the re-list interval (mqRelistEvery), now re-reads the tool's list first (the
// connector's re-list, as REST's), and runs the call when the action is
// there; the agent's list shows it from then on. A name that exists nowhere
// is refused as before, at the cost of at most one tools/list per window.
func TestMCPAgentToolAdded(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: mqRelistEnv})
	added := mqlStart(t, srv, "added")
	unknown := mqlStart(t, srv, "unknown")
	concurrent := mqlStart(t, srv, "concurrent")
	raw := mqlStart(t, srv, "raw")
	// A list fresher than the interval is not re-read.
	time.Sleep(mqRelistEvery + 100*time.Millisecond)

	t.Run("added tool", func(t *testing.T) {
		added.up.AddTool("fresh")
		added.up.Add(&sdk.Tool{Name: "fresh_send", Description: "Not safe to retry.", InputSchema: map[string]any{"type": "object"},
			Annotations: &sdk.ToolAnnotations{}})
		before := added.up.Listings()
		res, err := added.call("added__fresh", nil)
		if err != nil || res.IsError || res.Meta["quiver/call_id"] == nil {
			t.Fatalf("a call of the tool just added: %v %+v, want it run", err, res)
		}
		if text := mqText(t, res); !strings.Contains(text, `"tool":"fresh"`) {
			t.Errorf("fresh answered %s, want its own answer", text)
		}
		// Found in the same re-read list: a non-retryable action needs its
		// key argument, and a key is reserved and replayed as for any
		// listed action.
		res, err = added.call("added__fresh_send", nil)
		if err != nil {
			t.Fatal(err)
		}
		if env := mqEnvelope(t, res); env["error"] != "idempotency_key_required" || !strings.Contains(env["message"].(string), "idempotency_key argument") {
			t.Fatalf("fresh_send without its key: %v", env)
		}
		first, err1 := added.call("added__fresh_send", map[string]any{"idempotency_key": "agent-relist-send"})
		again, err2 := added.call("added__fresh_send", map[string]any{"idempotency_key": "agent-relist-send"})
		if err1 != nil || first.IsError {
			t.Fatalf("fresh_send with its key: %v %+v", err1, first)
		}
		mqrWantReplay(t, "fresh_send again", first, again, err2)
		if n := added.up.Calls("fresh_send"); n != 1 {
			t.Errorf("fresh_send ran %d times, want 1", n)
		}
		if n := added.up.Listings() - before; n != 1 {
			t.Errorf("%d tool listings, want 1", n)
		}
		names := mqToolNames(t, added.cs)
		if names["added__fresh"] == nil || names["added__fresh_send"] == nil {
			t.Fatalf("tools/list after the calls: %v", mqaSorted(names))
		}
		if req := fmt.Sprint(names["added__fresh_send"].InputSchema.(map[string]any)["required"]); !strings.Contains(req, "idempotency_key") {
			t.Errorf("fresh_send's schema requires %s, want idempotency_key", req)
		}
	})

	t.Run("unknown name repeated", func(t *testing.T) {
		before, began := unknown.up.Listings(), time.Now()
		for range 20 {
			res, err := unknown.call("unknown__never", map[string]any{"idempotency_key": "agent-never"})
			if err == nil || !strings.Contains(err.Error(), `unknown tool "unknown__never"`) {
				t.Fatalf("a name that exists nowhere: %v %+v, want unknown tool", err, res)
			}
		}
		mqWantListingPerWindow(t, unknown.up.Listings()-before, began)
		// A {tool_name} the agent does not have is not looked up at all.
		before = unknown.up.Listings()
		for _, name := range []string{"other__read_count", "unknown_x__never", "never"} {
			res, err := unknown.call(name, nil)
			mqrWantUnknown(t, name, res, err)
		}
		if n := unknown.up.Listings() - before; n != 0 {
			t.Errorf("names of no attached tool made %d tool listings", n)
		}
		// The key of the refusals is free.
		res, err := unknown.call("unknown__dummy_01", map[string]any{"idempotency_key": "agent-never"})
		if err != nil || res.IsError {
			t.Errorf("the refusals' key: %v %+v, want it free", err, res)
		}
	})

	t.Run("concurrent callers", func(t *testing.T) {
		concurrent.up.AddTool("fresh")
		before := concurrent.up.Listings()
		const callers = 12
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() {
				res, err := concurrent.call("concurrent__fresh", nil)
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error %s", mqText(t, res))
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
		}
		if n := concurrent.up.Listings() - before; n != 1 {
			t.Errorf("%d concurrent calls made %d tool listings, want 1", callers, n)
		}
	})

	// The same through a plain POST with no session, the fast path's form:
	// the new name runs, a name that exists nowhere gets today's answer.
	t.Run("plain POST", func(t *testing.T) {
		raw.up.AddTool("fresh")
		r := raw.post(srv, "raw__fresh")
		if body := string(r.Body); r.Status != 200 || !strings.Contains(body, `"quiver/call_id"`) || strings.Contains(body, `"isError":true`) {
			t.Fatalf("a call of the tool just added: %d %s", r.Status, r.Body)
		}
		r = raw.post(srv, "raw__never")
		want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool \"raw__never\""}}`
		if r.Status != 200 || strings.TrimSpace(string(r.Body)) != want {
			t.Fatalf("a name that exists nowhere: %d %s, want 200 %s", r.Status, r.Body, want)
		}
	})
}
