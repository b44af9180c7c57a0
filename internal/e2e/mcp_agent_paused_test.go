package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentPaused: pausing an agent is a kill switch for its tools over
// MCP, on the replica the PATCH went through at once and on another within
// QUIVER_CACHE_TTL: every tools/call is a forbidden tool error that runs
// nothing upstream, consumes no idempotency key and logs no call, while
// tools/list still answers; back to active, the calls run again, and a key
// refused while paused runs its call once.
func TestMCPAgentPaused(t *testing.T) {
	a := testserver.Start(t, testserver.Options{Postgres: true})
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.DatabaseURL})
	up := mqaStart(t, &mcp.Tool{Name: "send"}, mqaReadOnly("look"))
	tool := mqConnect(t, a, "t", map[string]any{"url": up.URL})
	r := a.Do("POST", "/api/v1/agents/", map[string]any{"name": "pausable", "status": "active", "tools": []int64{tool}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agent := int64(r.JSON()["id"].(float64))
	path := fmt.Sprintf("/api/v1/agents/%d/mcp", agent)
	sessions := map[string]*mcp.ClientSession{}
	for name, srv := range map[string]*testserver.Server{"A": a, "B": b} {
		cs, err := mqSession(t, srv.URL+path, a.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		sessions[name] = cs
	}
	ctx := context.Background()
	call := func(on, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := sessions[on].CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s on %s: %v", name, on, err)
		}
		return res
	}
	paused := func(res *mcp.CallToolResult) bool {
		if !res.IsError || len(res.Content) != 1 {
			return false
		}
		text, _ := res.Content[0].(*mcp.TextContent)
		return text != nil && strings.Contains(text.Text, `"error":"forbidden"`) && strings.Contains(text.Text, "is paused")
	}
	setStatus := func(status string) {
		t.Helper()
		if r := a.Do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agent), map[string]any{"status": status}); r.Status != 200 || r.JSON()["status"] != status {
			t.Fatalf("PATCH status %s: %d %s", status, r.Status, r.Body)
		}
	}
	logged := func() int {
		t.Helper()
		r := a.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", tool), nil)
		if r.Status != 200 {
			t.Fatalf("call log: %d %s", r.Status, r.Body)
		}
		return len(r.JSON()["calls"].([]any))
	}

	// Active: both replicas run calls (and B has the agent's list cached).
	for _, on := range []string{"A", "B"} {
		if res := call(on, "t__look", map[string]any{}); res.IsError {
			t.Fatalf("active, look on %s: %+v", on, res)
		}
		if res := call(on, "t__send", map[string]any{"idempotency_key": "k-active-" + on}); res.IsError {
			t.Fatalf("active, send on %s: %+v", on, res)
		}
	}

	setStatus("paused")
	// A dropped its list with the PATCH; B reads the agent again within
	// QUIVER_CACHE_TTL (1s). Until then B's looks run, which is why the
	// probe is the read-only action.
	if res := call("A", "t__look", map[string]any{}); !paused(res) {
		t.Fatalf("paused, look on A: %+v", res)
	}
	testserver.Eventually(t, 5*time.Second, "B to refuse the paused agent's calls", func() bool {
		return paused(call("B", "t__look", map[string]any{}))
	})
	// Every call that ran is logged, keyless ones a moment later (queued):
	// the log holds as many entries as the upstream saw runs, now and at
	// the end, so no refused call is logged.
	allLogged := func(what string) {
		t.Helper()
		testserver.Eventually(t, 5*time.Second, what, func() bool { return logged() == len(up.ran()) })
	}
	allLogged("the runs before the pause to be logged")
	ran := len(up.ran())
	for _, on := range []string{"A", "B"} {
		for _, c := range []struct {
			name string
			args map[string]any
		}{
			{"t__look", map[string]any{}},
			{"t__send", map[string]any{"idempotency_key": "k-paused"}},
			{"t__send", map[string]any{}},                                    // no key: refused for the pause, not the key
			{"t__send", map[string]any{"idempotency_key": "k-active-" + on}}, // a used key: no replay either
			{"t__gone", map[string]any{"idempotency_key": "k-active-" + on}}, // not listed: no unlisted replay
		} {
			res := call(on, c.name, c.args)
			if !paused(res) {
				t.Fatalf("paused, %s %v on %s: %+v", c.name, c.args, on, res)
			}
			env := mqEnvelope(t, res)
			if want := fmt.Sprintf(`Agent %d ("pausable") is paused`, agent); !strings.Contains(env["message"].(string), want) ||
				!strings.Contains(env["message"].(string), "active or draft") {
				t.Fatalf("paused, %s on %s: message %q", c.name, on, env["message"])
			}
			if res.Meta["quiver/replayed"] != nil || res.Meta["quiver/call_id"] != nil {
				t.Fatalf("paused, %s on %s: meta %v", c.name, on, res.Meta)
			}
		}
		// tools/list still answers, with the agent's tools.
		if names := mqToolNames(t, sessions[on]); names["t__send"] == nil || names["t__look"] == nil {
			t.Fatalf("paused, tools/list on %s: %v", on, mqaSorted(names))
		}
	}
	if n := len(up.ran()); n != ran {
		t.Fatalf("the upstream ran %d times while paused", n-ran)
	}
	if n := logged(); n != ran {
		t.Fatalf("%d calls logged while paused", n-ran)
	}
	if r := a.Do("GET", "/api/v1/idempotency-keys/k-paused", nil); r.Status != 404 {
		t.Fatalf("k-paused after the pause: %d %s, want 404 (never used)", r.Status, r.Body)
	}

	setStatus("active")
	if res := call("A", "t__look", map[string]any{}); res.IsError {
		t.Fatalf("active again, look on A: %+v", res)
	}
	testserver.Eventually(t, 5*time.Second, "B to run the agent's calls again", func() bool {
		return !call("B", "t__look", map[string]any{}).IsError
	})
	// The key refused while paused is new: it runs the call once, and its
	// retry replays.
	ran = len(up.ran())
	first := call("B", "t__send", map[string]any{"idempotency_key": "k-paused"})
	if first.IsError || first.Meta["quiver/replayed"] != nil || first.Meta["quiver/call_id"] == nil {
		t.Fatalf("active again, send with k-paused: %+v (meta %v)", first, first.Meta)
	}
	again := call("A", "t__send", map[string]any{"idempotency_key": "k-paused"})
	mqrWantReplay(t, "retry of k-paused", first, again, nil)
	if n := len(up.ran()) - ran; n != 1 {
		t.Fatalf("k-paused ran %d times upstream, want 1", n)
	}
	allLogged("the log to hold the calls that ran and no other")
}
