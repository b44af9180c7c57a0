package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentNameMovesKeyReplays: an agent's tool names move when its
// tools change (of two tools named alike, the lower ID keeps the plain
// name), so a retried tools/call may name another tool than its key was
// first used with. It replays the first call, as a REST retry does; it
// used to answer idempotency_key_reused. Nothing runs twice.
func TestMCPAgentNameMovesKeyReplays(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "true"}})
	older, newer := startToolServer(t), startToolServer(t)
	first := connectHTTPTool(t, srv.URL, srv.Key, older.URL) // both named http-request
	second := connectHTTPTool(t, srv.URL, srv.Key, newer.URL)
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "moves", "tools": []int64{first, second}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agent := int64(r.JSON()["id"].(float64))
	endpoint := fmt.Sprintf("/api/v1/agents/%d/mcp", agent)
	call := func(name, key string) json.RawMessage {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"path":"/moves","idempotency_key":%q}}}`, name, key)
		r := srv.Do("POST", endpoint, body, "Accept", "application/json, text/event-stream")
		var m struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			} `json:"result"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &m) != nil || len(m.Result.Content) != 1 {
			t.Fatalf("tools/call %s: %d %s", name, r.Status, r.Body)
		}
		if m.Result.IsError {
			t.Fatalf("tools/call %s with key %s: %s", name, key, m.Result.Content[0].Text)
		}
		return json.RawMessage(m.Result.Content[0].Text)
	}

	once := call("http-request__post", "moves-1") // the first tool's plain name
	if older.count("/moves") != 1 || newer.count("/moves") != 0 {
		t.Fatalf("first call ran %d / %d times", older.count("/moves"), newer.count("/moves"))
	}
	if r := srv.Do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agent), map[string]any{"tools": []int64{second}}); r.Status != 200 {
		t.Fatalf("detach: %d %s", r.Status, r.Body)
	}
	// The plain name is the second tool's now; the retry replays.
	if again := call("http-request__post", "moves-1"); !bytes.Equal(again, once) {
		t.Fatalf("retry after the name moved: %s, want %s", again, once)
	}
	if older.count("/moves") != 1 || newer.count("/moves") != 0 {
		t.Fatalf("after the retry the tools ran %d / %d times", older.count("/moves"), newer.count("/moves"))
	}
	// One call, one count: the retry is a replay and not also a conflict.
	conflicts := func() float64 {
		return metricValue(t, srv, `quiver_call_conflicts_total{kind="idempotency_key_reused"}`)
	}
	if c, rp := conflicts(), metricValue(t, srv, "quiver_call_replays_total"); c != 0 || rp != 1 {
		t.Fatalf("after the retry: %v key reuse conflicts and %v replays counted, want 0 and 1", c, rp)
	}
	// A new key runs on the tool the name now names.
	call("http-request__post", "moves-2")
	if newer.count("/moves") != 1 {
		t.Fatalf("a new key ran on the second tool %d times", newer.count("/moves"))
	}
	// Reused with other arguments, the key is a conflict, counted once.
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"http-request__post","arguments":{"path":"/other","idempotency_key":"moves-2"}}}`
	if r := srv.Do("POST", endpoint, body, "Accept", "application/json, text/event-stream"); r.Status != 200 || !bytes.Contains(r.Body, []byte("idempotency_key_reused")) {
		t.Fatalf("a reused key: %d %s", r.Status, r.Body)
	}
	if c := conflicts(); c != 1 {
		t.Fatalf("a reused key counted %v conflicts, want 1", c)
	}
}

// TestMCPAgentNameStaysWhileUnconfigured: of two tools named alike, the one
// that owns the plain name keeps it while it is not configured (reset, or
// mid-OAuth) or its server cannot list its actions: it is unlisted, and a
// call by that name reaches neither tool. It used to pass to the other
// tool, so an agent calling the name it had listed ran the other tool, on
// another server with other credentials.
func TestMCPAgentNameStaysWhileUnconfigured(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "true"}})
	older, newer := startToolServer(t), startToolServer(t)
	first := connectHTTPTool(t, srv.URL, srv.Key, older.URL) // both named http-request
	second := connectHTTPTool(t, srv.URL, srv.Key, newer.URL)
	agent, url := mqaAgent(t, srv, first, second)
	endpoint := fmt.Sprintf("/api/v1/agents/%d/mcp", agent)
	call := func(name string) []byte {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{"path":"/named"}}}`, name)
		r := srv.Do("POST", endpoint, body, "Accept", "application/json, text/event-stream")
		if r.Status != 200 && r.Status != 400 {
			t.Fatalf("tools/call %s: %d %s", name, r.Status, r.Body)
		}
		return r.Body
	}
	secondName := fmt.Sprintf("http-request_%d__get", second)
	call("http-request__get")
	call(secondName)
	if older.count("/named") != 1 || newer.count("/named") != 1 {
		t.Fatalf("by their names the tools ran %d / %d times, want 1 / 1", older.count("/named"), newer.count("/named"))
	}

	if r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", first), nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	names := mqToolNames(t, mqaSession(t, srv, url))
	if _, ok := names["http-request__get"]; ok {
		t.Fatalf("the reset tool's name is listed: %v", mqaSorted(names))
	}
	if _, ok := names[secondName]; !ok {
		t.Fatalf("the other tool lost its name %s: %v", secondName, mqaSorted(names))
	}
	// Refused as REST refuses a call of the reset tool: tool_not_configured
	// with the step to take, not an unknown tool.
	if b := call("http-request__get"); !bytes.Contains(b, []byte(`tool_not_configured`)) || !bytes.Contains(b, []byte(`next_configuration_step`)) ||
		!bytes.Contains(b, []byte(`"isError":true`)) {
		t.Fatalf("a call by the reset tool's name: %s, want the tool error tool_not_configured", b)
	}
	call(secondName)
	if older.count("/named") != 1 || newer.count("/named") != 2 {
		t.Fatalf("after the reset the tools ran %d / %d times, want 1 / 2: the reset tool's name went to the other", older.count("/named"), newer.count("/named"))
	}
}
