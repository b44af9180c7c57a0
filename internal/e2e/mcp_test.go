package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// The MCP tests prove custom MCP servers end to end through the REST API
// (this file) and Quiver's own MCP endpoint per agent through the Go SDK's
// client (mcp_agent_test.go). Their helpers start with mq, so they never
// collide with other files' helpers.

const mqCallPath = "/api/v1/agents/custom-tools/call/"

// mqConfigure creates a custom-mcp tool and provides its form step,
// returning the tool's ID and the provide-config answer.
func mqConfigure(t testing.TB, srv *testserver.Server, name string, config map[string]any) (int64, *testserver.Response) {
	t.Helper()
	r := testserver.Do(t, srv.URL, srv.Key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp", "name": name})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := fdInt(t, fdObject(t, r)["id"])
	return id, testserver.Do(t, srv.URL, srv.Key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id), map[string]any{"user_response": config})
}

// mqConnect connects a custom-mcp tool named name to url and configures it.
func mqConnect(t testing.TB, srv *testserver.Server, name string, config map[string]any) int64 {
	t.Helper()
	id, r := mqConfigure(t, srv, name, config)
	if r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Fatalf("configure %s: %d %s", name, r.Status, r.Body)
	}
	return id
}

// mqCall calls an action over REST, with an Idempotency-Key if key is set.
func mqCall(srv *testserver.Server, tool int64, action string, args any, key string) *testserver.Response {
	var h []string
	if key != "" {
		h = []string{"Idempotency-Key", key}
	}
	if args == nil {
		args = map[string]any{}
	}
	return srv.Do("POST", mqCallPath, map[string]any{"tool": tool, "action": action, "arguments": args}, h...)
}

// mqWant requires an error envelope with status and code.
func mqWant(t testing.TB, r *testserver.Response, status int, code string) map[string]any {
	t.Helper()
	m := r.JSON()
	if r.Status != status || m["error"] != code {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
	return m
}

// mqActions lists a tool's actions by name.
func mqActions(t testing.TB, srv *testserver.Server, tool int64) map[string]map[string]any {
	t.Helper()
	r := testserver.Do(t, srv.URL, srv.Key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", tool), nil)
	if r.Status != 200 {
		t.Fatalf("actions: %d %s", r.Status, r.Body)
	}
	out := map[string]map[string]any{}
	for _, a := range r.JSON()["actions"].([]any) {
		m := a.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

// mqDeadURL is an http URL on a loopback port nothing listens on (and
// nothing else may take while the test runs).
func mqDeadURL(t testing.TB) string {
	return "http://" + connectortest.ClosedAddr(t) + "/mcp"
}

func TestMCPCustomServers(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})

	t.Run("discovery across pages", func(t *testing.T) {
		counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{PageSize: 2})
		id := mqConnect(t, srv, "paged", map[string]any{"url": counter.URL})
		actions := mqActions(t, srv, id)
		if want := mcptest.CounterTools; len(actions) != want {
			t.Fatalf("%d actions, want %d", len(actions), want)
		}
		for _, name := range []string{"increment", "read_count", "echo", fmt.Sprintf("dummy_%02d", mcptest.DummyTools-1)} {
			if actions[name] == nil {
				t.Errorf("action %s missing", name)
			}
		}
	})

	mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{})
	mailID := mqConnect(t, srv, "mail", map[string]any{"url": mail.URL})
	inbox := mcptest.Start(t, mcptest.Inbox, mcptest.Options{})
	inboxID := mqConnect(t, srv, "inbox", map[string]any{"url": inbox.URL, "bearer_token": mcptest.InboxKey})

	t.Run("annotations decide retryable", func(t *testing.T) {
		mailActions, inboxActions := mqActions(t, srv, mailID), mqActions(t, srv, inboxID)
		for name, want := range map[string]bool{"get_upcoming_travel": true, "ask": true, "get_excerpt": true,
			"create_draft": false, "send_draft": false} {
			if got := mailActions[name]["retryable"]; got != want {
				t.Errorf("mail %s retryable = %v, want %v", name, got, want)
			}
		}
		for name, want := range map[string]bool{"search": true, "cancel_send": true, "draft_reply": false, "send_reply": false} {
			if got := inboxActions[name]["retryable"]; got != want {
				t.Errorf("inbox %s retryable = %v, want %v", name, got, want)
			}
		}
		if ann, _ := mailActions["get_upcoming_travel"]["annotations"].(map[string]any); ann["readOnlyHint"] != true {
			t.Errorf("annotations = %v", mailActions["get_upcoming_travel"]["annotations"])
		}
		// Every action carries annotations, {} where the server declared none
		// (API.md's Action).
		bare := mcptest.StartHandWritten(t, &mcptest.HandWritten{})
		bareActions := mqActions(t, srv, mqConnect(t, srv, "bare", map[string]any{"url": bare.URL}))
		if ann, _ := bareActions["act"]["annotations"].(map[string]any); ann == nil || len(ann) != 0 || bareActions["act"]["retryable"] != false {
			t.Errorf("an action declared without annotations: %v", bareActions["act"])
		}
		for _, actions := range []map[string]map[string]any{mailActions, inboxActions, bareActions} {
			for name, a := range actions {
				if _, ok := a["annotations"].(map[string]any); !ok {
					t.Errorf("%s: annotations %v, want an object", name, a["annotations"])
				}
			}
		}
		mqWant(t, mqCall(srv, mailID, "create_draft", map[string]any{"to": "a@b.c", "body": "hi"}, ""), 400, "idempotency_key_required")
	})

	t.Run("JSON in text is parsed", func(t *testing.T) {
		r := mqCall(srv, mailID, "get_upcoming_travel", nil, "")
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		m := r.JSON()
		trip := m["result"].(map[string]any)["trips"].([]any)[0].(map[string]any)
		if m["is_error"] != false || trip["confirmation"] != "QX7R2P" {
			t.Fatalf("result: %s", r.Body)
		}
	})

	t.Run("approval required is a tool error with its payload", func(t *testing.T) {
		r := mqCall(srv, mailID, "send_draft", map[string]any{"draft_id": "d_1"}, "k-approval")
		m := r.JSON()
		res, _ := m["result"].(map[string]any)
		if r.Status != 200 || m["is_error"] != true || res["error"] != "approval_required" ||
			!strings.HasPrefix(fmt.Sprint(res["approval_id"]), "ap_") || res["message"] == nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		again := mqCall(srv, mailID, "send_draft", map[string]any{"draft_id": "d_1"}, "k-approval")
		if !bytes.Equal(again.Body, r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the tool error was not replayed: %s", again.Body)
		}
	})

	t.Run("upstream 401 on configure is 422 bearer_token", func(t *testing.T) {
		r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp"})
		id := int64(r.JSON()["id"].(float64))
		r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": inbox.URL, "bearer_token": "wrong"}})
		if f, _ := mqWant(t, r, 422, "validation_error")["fields"].(map[string]any); f["bearer_token"] == nil {
			t.Fatalf("fields: %s", r.Body)
		}
		if r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.JSON()["is_configured"] != false {
			t.Fatalf("the tool advanced: %s", r.Body)
		}
	})

	t.Run("unreachable URL is 422 url", func(t *testing.T) {
		r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp"})
		id := int64(r.JSON()["id"].(float64))
		r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": mqDeadURL(t)}})
		if f, _ := mqWant(t, r, 422, "validation_error")["fields"].(map[string]any); f["url"] == nil {
			t.Fatalf("fields: %s", r.Body)
		}
	})

	t.Run("at most once under concurrent duplicates", func(t *testing.T) {
		counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
		id := mqConnect(t, srv, "counter-dup", map[string]any{"url": counter.URL})
		results := make([]*testserver.Response, 20)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = mqCall(srv, id, "increment", nil, "k-dup") })
		}
		wg.Wait()
		var ok []byte
		busy := 0
		for _, r := range results {
			switch {
			case r.Status == 200:
				if ok != nil && !bytes.Equal(ok, r.Body) {
					t.Fatalf("two different 200 bodies:\n%s\n%s", ok, r.Body)
				}
				ok = r.Body
			case r.Status == 409 && r.JSON()["error"] == "request_in_progress":
				busy++
			default:
				t.Fatalf("unexpected answer %d %s", r.Status, r.Body)
			}
		}
		t.Logf("%d answered 200, %d request_in_progress", len(results)-busy, busy)
		if n := counter.Calls("increment"); n != 1 {
			t.Fatalf("increment ran %d times, want 1", n)
		}
		last := mqCall(srv, id, "increment", nil, "k-dup")
		if last.Status != 200 || (ok != nil && !bytes.Equal(last.Body, ok)) || counter.Calls("increment") != 1 {
			t.Fatalf("retry after the race: %d %s, ran %d", last.Status, last.Body, counter.Calls("increment"))
		}
	})

	t.Run("dropped connection is an unknown outcome", func(t *testing.T) {
		counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
		id := mqConnect(t, srv, "counter-drop", map[string]any{"url": counter.URL})
		mqWant(t, mqCall(srv, id, "drop_after_act", nil, "k-drop"), 504, "tool_outcome_unknown")
		mqWant(t, mqCall(srv, id, "drop_after_act", nil, "k-drop"), 409, "tool_outcome_unknown")
		if n := counter.Calls("drop_after_act"); n != 1 {
			t.Fatalf("drop_after_act ran %d times, want 1", n)
		}
	})

	t.Run("one session for many calls", func(t *testing.T) {
		counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
		id := mqConnect(t, srv, "counter-pool", map[string]any{"url": counter.URL})
		verified := counter.Initializes() // configure's own check opens (and closes) one session
		for i := range 30 {
			if r := mqCall(srv, id, "read_count", nil, ""); r.Status != 200 {
				t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
			}
		}
		if n := counter.Initializes() - verified; n != 1 {
			t.Fatalf("%d initializes for 30 calls, want 1", n)
		}
	})
}

func TestMCPEgressGuard(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "false"}})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	if !strings.HasPrefix(counter.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, not loopback", counter.URL)
	}
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp"})
	id := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	if f, _ := mqWant(t, r, 422, "validation_error")["fields"].(map[string]any); f["url"] == nil {
		t.Fatalf("fields: %s", r.Body)
	}
	if n := counter.Requests(); n != 0 {
		t.Fatalf("the guarded server reached the loopback server %d times", n)
	}
}

// TestMCPActionsRefusedCredentials: a server that refuses the tool's
// credentials when its actions are listed answers 502 upstream_auth_failed
// (nothing ran), not tool_unreachable; once it accepts them again the list
// comes back.
func TestMCPActionsRefusedCredentials(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	var refuse atomic.Bool
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Authorize: func(token string) bool {
		return token == "s3cret" && !refuse.Load()
	}})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL, "bearer_token": "s3cret"})
	refuse.Store(true)
	r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", id), nil)
	mqWant(t, r, 502, "upstream_auth_failed")
	// One sentence for a person: not the error chain of the SDK's client.
	if msg, _ := r.JSON()["message"].(string); strings.Contains(msg, `"initialize"`) || strings.Contains(msg, "upstream_auth:") {
		t.Errorf("message %q", msg)
	}
	refuse.Store(false)
	if actions := mqActions(t, srv, id); len(actions) != mcptest.CounterTools {
		t.Fatalf("%d actions after the server took the credentials again", len(actions))
	}
}
