package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// A retried tools/call replays its first outcome after its tool has left
// the agent's list (reset, detached, deleted), as a REST retry does "even if
// the tool was since deleted or reconfigured" (API.md), through the HTTP
// API with the Go SDK's client.

// mqrPaySchema is an action with an idempotency_key argument of its own,
// so Quiver's key is quiver_idempotency_key.
var mqrPaySchema = map[string]any{"type": "object", "required": []string{"idempotency_key", "amount"}, "properties": map[string]any{
	"idempotency_key": map[string]any{"type": "string"},
	"amount":          map[string]any{"type": "integer"},
}}

// mqrFixture is one account's tool "t" (send and pay, neither retryable)
// on its own upstream, attached to an agent, and a session on the agent.
type mqrFixture struct {
	key   string
	up    *mqaUpstream
	tool  int64
	agent int64
	cs    *mcp.ClientSession
}

// mqrSetup makes the fixture as the account of key.
func mqrSetup(t *testing.T, srv *testserver.Server, key string) *mqrFixture {
	t.Helper()
	f := &mqrFixture{key: key, up: mqaStart(t, &mcp.Tool{Name: "send"}, &mcp.Tool{Name: "pay", InputSchema: mqrPaySchema})}
	r := testserver.Do(t, srv.URL, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp", "name": "t"})
	if r.Status != 201 {
		t.Fatalf("create tool: %d %s", r.Status, r.Body)
	}
	f.tool = int64(r.JSON()["id"].(float64))
	r = testserver.Do(t, srv.URL, key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", f.tool),
		map[string]any{"user_response": map[string]any{"url": f.up.URL}})
	if r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	r = testserver.Do(t, srv.URL, key, "POST", "/api/v1/agents/", map[string]any{"name": "replay", "tools": []int64{f.tool}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	f.agent = int64(r.JSON()["id"].(float64))
	cs, err := mqSession(t, fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, f.agent), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.cs = cs
	return f
}

func (f *mqrFixture) call(t *testing.T, name string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	return f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
}

// first makes a keyed call that runs, and returns its result.
func (f *mqrFixture) first(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := f.call(t, name, args)
	if err != nil || res.IsError || res.Meta["quiver/call_id"] == nil {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	return res
}

// leave takes the tool out of the agent's list: how is "reset", "detach"
// or "delete".
func (f *mqrFixture) leave(t *testing.T, srv *testserver.Server, how string) {
	t.Helper()
	var r *testserver.Response
	switch how {
	case "reset":
		r = testserver.Do(t, srv.URL, f.key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", f.tool), nil)
	case "detach":
		r = testserver.Do(t, srv.URL, f.key, "PATCH", fmt.Sprintf("/api/v1/agents/%d/", f.agent), map[string]any{"tools": []int64{}})
	case "delete":
		r = testserver.Do(t, srv.URL, f.key, "DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", f.tool), nil)
	}
	if r.Status != 200 && r.Status != 204 {
		t.Fatalf("%s: %d %s", how, r.Status, r.Body)
	}
	if names := mqToolNames(t, f.cs); len(names) != 0 {
		t.Fatalf("after %s the agent still lists %v", how, mqaSorted(names))
	}
}

// mqrWantReplay requires again to be first, replayed.
func mqrWantReplay(t *testing.T, label string, first, again *mcp.CallToolResult, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	if again.IsError != first.IsError || mqText(t, again) != mqText(t, first) || again.Meta["quiver/replayed"] != true ||
		again.Meta["quiver/call_id"] != first.Meta["quiver/call_id"] {
		t.Fatalf("%s: %+v (meta %v), want the replay of %+v (meta %v)", label, again, again.Meta, first, first.Meta)
	}
}

// mqrWantUnknown requires the SDK's unknown tool refusal.
func mqrWantUnknown(t *testing.T, label string, res *mcp.CallToolResult, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("%s: %v %+v, want unknown tool", label, err, res)
	}
}

// TestMCPAgentReplayAfterToolLeaves: once a tool is reset, detached or
// deleted, the same tools/call with the same key (idempotency_key, or
// quiver_idempotency_key for an action with a key of its own) replays the
// first outcome without running the tool, as REST does; a read-only API
// key, which may not call the action, gets no replay of it, whatever the
// tool has become.
func TestMCPAgentReplayAfterToolLeaves(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	ro, _, err := srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"reset", "detach", "delete"} {
		t.Run(how, func(t *testing.T) {
			f := mqrSetup(t, srv, srv.Key)
			send := map[string]any{"to": "a", "idempotency_key": "k-send-" + how}
			pay := map[string]any{"idempotency_key": "provider-" + how, "amount": 5, "quiver_idempotency_key": "k-pay-" + how}
			firstSend, firstPay := f.first(t, "t__send", send), f.first(t, "t__pay", pay)
			if n := len(f.up.ran()); n != 2 {
				t.Fatalf("the upstream ran %d times, want 2", n)
			}

			f.leave(t, srv, how)
			again, err := f.call(t, "t__send", send)
			mqrWantReplay(t, "send", firstSend, again, err)
			again, err = f.call(t, "t__pay", pay)
			mqrWantReplay(t, "pay", firstPay, again, err)

			// REST replays the same outcome.
			r := mqCall(srv, f.tool, "send", map[string]any{"to": "a"}, "k-send-"+how)
			if r.Status != 200 || r.JSON()["call_id"] != firstSend.Meta["quiver/call_id"] {
				t.Fatalf("REST: %d %s", r.Status, r.Body)
			}
			// A read-only key gets no answer of send, which it may not
			// call, its replay included, over both, whether the tool can
			// still tell (detached, it is still there) or not (reset,
			// deleted): the key's row records that send was not read-only.
			ror := testserver.Do(t, srv.URL, ro, "POST", mqCallPath, map[string]any{"tool": f.tool, "action": "send", "arguments": map[string]any{"to": "a"}},
				"Idempotency-Key", "k-send-"+how)
			roSession, err := mqSession(t, fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, f.agent), ro, nil)
			if err != nil {
				t.Fatal(err)
			}
			again, err = roSession.CallTool(context.Background(), &mcp.CallToolParams{Name: "t__send", Arguments: send})
			if ror.Status != 403 || ror.JSON()["error"] != "forbidden" {
				t.Fatalf("REST, read-only key: %d %s, want 403 forbidden", ror.Status, ror.Body)
			}
			if err == nil && (!again.IsError || again.Meta["quiver/replayed"] == true || !strings.Contains(mqText(t, again), "forbidden")) {
				t.Fatalf("send, read-only key: %+v, want an error forbidden", again)
			}

			if n := len(f.up.ran()); n != 2 {
				t.Fatalf("the upstream ran %d times, want 2", n)
			}
		})
	}
}

// TestMCPAgentReplayOtherArguments: the same key with other arguments is
// idempotency_key_reused, as over REST, and runs nothing.
func TestMCPAgentReplayOtherArguments(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	f := mqrSetup(t, srv, srv.Key)
	f.first(t, "t__send", map[string]any{"to": "a", "idempotency_key": "k-args"})
	f.first(t, "t__pay", map[string]any{"idempotency_key": "provider-1", "amount": 5, "quiver_idempotency_key": "k-pay-args"})
	f.leave(t, srv, "reset")
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"t__send", map[string]any{"to": "b", "idempotency_key": "k-args"}},
		{"t__send", map[string]any{"idempotency_key": "k-args"}},
		{"t__pay", map[string]any{"idempotency_key": "provider-2", "amount": 5, "quiver_idempotency_key": "k-pay-args"}},
	} {
		res, err := f.call(t, c.name, c.args)
		if err != nil {
			t.Fatalf("%s %v: %v", c.name, c.args, err)
		}
		if env := mqEnvelope(t, res); env["error"] != "idempotency_key_reused" {
			t.Fatalf("%s %v: %v", c.name, c.args, env)
		}
	}
	r := mqCall(srv, f.tool, "send", map[string]any{"to": "b"}, "k-args")
	mqWant(t, r, 409, "idempotency_key_reused")
	if n := len(f.up.ran()); n != 2 {
		t.Fatalf("the upstream ran %d times, want 2", n)
	}
}

// TestMCPAgentReplayNameMustNameAction: a key replays only under a name
// ending in its action; any other name stays unknown.
func TestMCPAgentReplayNameMustNameAction(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	f := mqrSetup(t, srv, srv.Key)
	send := map[string]any{"to": "a", "idempotency_key": "k-name"}
	first := f.first(t, "t__send", send)
	f.leave(t, srv, "delete")
	for _, name := range []string{"t__pay", "t__sen", "t__send_x", "t__sendsend", "send", "t_send"} {
		res, err := f.call(t, name, send)
		mqrWantUnknown(t, name, res, err)
	}
	// No key argument, or a key never used: unknown as well.
	res, err := f.call(t, "t__send", map[string]any{"to": "a"})
	mqrWantUnknown(t, "no key", res, err)
	res, err = f.call(t, "t__send", map[string]any{"to": "a", "idempotency_key": "k-never"})
	mqrWantUnknown(t, "an unused key", res, err)
	// The name's tool part is not the key's to judge: the action is.
	for _, name := range []string{"t__send", "renamed__send"} {
		again, err := f.call(t, name, send)
		mqrWantReplay(t, name, first, again, err)
	}
	if n := len(f.up.ran()); n != 1 {
		t.Fatalf("the upstream ran %d times, want 1", n)
	}
}

// TestMCPAgentReplayKeyOfAnotherAccount: keys are per account; another
// account's key does not replay here (the call is answered as this
// account's tool stands: reset, so not configured), while its own
// account's agent replays it.
func TestMCPAgentReplayKeyOfAnotherAccount(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	other := mqrSetup(t, srv, srv.NewKey("other"))
	mine := mqrSetup(t, srv, srv.Key)
	send := map[string]any{"to": "a", "idempotency_key": "k-theirs"}
	first := other.first(t, "t__send", send)
	other.leave(t, srv, "reset")
	mine.leave(t, srv, "reset")

	// Not a replay: the call is one of this account's reset tool, which
	// REST refuses as not configured, and so does the agent endpoint.
	res, err := mine.call(t, "t__send", send)
	if err != nil || !res.IsError || !strings.Contains(mqText(t, res), `"error":"tool_not_configured"`) || res.Meta["quiver/replayed"] != nil {
		t.Fatalf("another account's key: %v %+v, want the tool error tool_not_configured, no replay", err, res)
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/k-theirs", nil); r.Status != 404 {
		t.Fatalf("the key shows in this account: %d %s", r.Status, r.Body)
	}
	again, err := other.call(t, "t__send", send)
	mqrWantReplay(t, "its own account", first, again, err)
	if n := len(other.up.ran()) + len(mine.up.ran()); n != 1 {
		t.Fatalf("the upstreams ran %d times, want 1", n)
	}
}
