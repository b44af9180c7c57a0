package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// The MCP tests prove custom MCP servers end to end through the REST API,
// and Quiver's own MCP endpoint per agent through the Go SDK's client. Their
// helpers start with mq, so they never collide with other files' helpers.

const mqCallPath = "/api/v1/agents/custom-tools/call/"

// mqConnect connects a custom-mcp tool named name to url and configures it.
func mqConnect(t testing.TB, srv *testserver.Server, name string, config map[string]any) int64 {
	t.Helper()
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp", "name": name})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id), map[string]any{"user_response": config})
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
	r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", tool), nil)
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

// mqDeadURL is an http URL on a loopback port nothing listens on.
func mqDeadURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

func TestMCPCustomServers(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})

	t.Run("discovery across pages", func(t *testing.T) {
		counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{PageSize: 2})
		id := mqConnect(t, srv, "paged", map[string]any{"url": counter.URL})
		actions := mqActions(t, srv, id)
		if want := 9 + mcptest.DummyTools; len(actions) != want {
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

// mqKeyTransport adds the API key to every request.
type mqKeyTransport struct {
	key  string
	base http.RoundTripper
}

func (k mqKeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-KEY", k.key)
	return k.base.RoundTrip(r)
}

// mqSession connects the Go SDK's MCP client to endpoint with key.
func mqSession(t testing.TB, endpoint, key string, base http.RoundTripper) (*mcp.ClientSession, error) {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "quiver-e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: mqKeyTransport{key: key, base: base}}}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mqToolNames(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func mqText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%d content blocks: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

func mqEnvelope(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	if !res.IsError || json.Unmarshal([]byte(mqText(t, res)), &m) != nil || m["message"] == nil {
		t.Fatalf("not a tool error envelope: isError=%v %+v", res.IsError, res.Content)
	}
	return m
}

func TestMCPAgentEndpoint(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{})
	counterID := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	mailID := mqConnect(t, srv, "mail", map[string]any{"url": mail.URL})
	twinID := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp", "name": "pending"})
	pendingID := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "assistant", "tools": []int64{counterID, mailID, twinID, pendingID}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	agentID := int64(r.JSON()["id"].(float64))
	endpoint := fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, agentID)
	ctx := context.Background()

	cs, err := mqSession(t, endpoint, srv.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := mqToolNames(t, cs)
	twin := fmt.Sprintf("counter_%d__read_count", twinID)
	for _, name := range []string{"counter__increment", "counter__read_count", "mail__send_draft", "mail__get_upcoming_travel", twin} {
		if tools[name] == nil {
			t.Fatalf("tool %s missing from %d tools", name, len(tools))
		}
	}
	if want := 2*(9+mcptest.DummyTools) + 8; len(tools) != want {
		t.Errorf("%d tools, want %d (the unconfigured tool is left out)", len(tools), want)
	}
	for name, tool := range tools {
		if strings.HasPrefix(name, "pending") {
			t.Errorf("unconfigured tool listed: %s", name)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if got, want := bytes.Contains(schema, []byte(`"idempotency_key"`)), strings.HasSuffix(name, "__increment") || strings.HasSuffix(name, "__send_draft"); want && !got {
			t.Errorf("%s: schema lacks idempotency_key: %s", name, schema)
		}
	}
	if rc := tools["counter__read_count"]; rc.Annotations == nil || !rc.Annotations.ReadOnlyHint {
		t.Errorf("read_count annotations = %+v", rc.Annotations)
	}
	schema, _ := json.Marshal(tools["counter__read_count"].InputSchema)
	if bytes.Contains(schema, []byte("idempotency_key")) {
		t.Errorf("read_count needs no key: %s", schema)
	}

	t.Run("read-only action", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__read_count", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || mqText(t, res) != `{"count":0}` {
			t.Fatalf("result: %+v", res)
		}
		if sc, _ := res.StructuredContent.(map[string]any); sc["count"] != float64(0) {
			t.Fatalf("structured content: %#v", res.StructuredContent)
		}
	})

	t.Run("non-retryable action needs idempotency_key", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__increment", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if env := mqEnvelope(t, res); env["error"] != "idempotency_key_required" {
			t.Fatalf("without a key: %v", env)
		}
		if counter.Calls("increment") != 0 {
			t.Fatal("increment ran without a key")
		}
		first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__increment", Arguments: map[string]any{"idempotency_key": "mcp-k1"}})
		if err != nil || first.IsError || mqText(t, first) != `{"count":1}` {
			t.Fatalf("with a key: %v %+v", err, first)
		}
		again, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__increment", Arguments: map[string]any{"idempotency_key": "mcp-k1"}})
		if err != nil || mqText(t, again) != `{"count":1}` || again.Meta["quiver/replayed"] != true ||
			again.Meta["quiver/call_id"] != first.Meta["quiver/call_id"] {
			t.Fatalf("retry: %v %+v %v", err, again, again.Meta)
		}
		if n := counter.Calls("increment"); n != 1 {
			t.Fatalf("increment ran %d times, want 1", n)
		}
		// The same key over REST is the same request: it replays.
		rest := mqCall(srv, counterID, "increment", nil, "mcp-k1")
		if rest.Status != 200 || rest.JSON()["call_id"] != first.Meta["quiver/call_id"] {
			t.Fatalf("REST retry: %d %s", rest.Status, rest.Body)
		}
		// Other arguments under the same key are refused as over REST.
		other, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__increment", Arguments: map[string]any{"idempotency_key": "mcp-k1", "x": 1}})
		if env := mqEnvelope(t, other); env["error"] != "idempotency_key_reused" {
			t.Fatalf("reused: %v", env)
		}
		bad, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter__increment", Arguments: map[string]any{"idempotency_key": ""}})
		if env := mqEnvelope(t, bad); env["error"] != "invalid_idempotency_key" {
			t.Fatalf("empty key: %v", env)
		}
		if n := counter.Calls("increment"); n != 1 {
			t.Fatalf("increment ran %d times, want 1", n)
		}
	})

	t.Run("tool errors keep their payload", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mail__send_draft",
			Arguments: map[string]any{"draft_id": "d_9", "idempotency_key": "mcp-send"}})
		if err != nil {
			t.Fatal(err)
		}
		var payload map[string]any
		if !res.IsError || json.Unmarshal([]byte(mqText(t, res)), &payload) != nil || payload["error"] != "approval_required" {
			t.Fatalf("approval: %+v", res)
		}
		res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mail__order_status",
			Arguments: map[string]any{"merchant": 12}})
		if env := mqEnvelope(t, res); env["error"] != "invalid_arguments" {
			t.Fatalf("bad arguments: %v", env)
		}
	})

	t.Run("bad API key is 401", func(t *testing.T) {
		r := testserver.Do(t, srv.URL, "qk_not_a_key", "POST", fmt.Sprintf("/api/v1/agents/%d/mcp", agentID),
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
		mqWant(t, r, 401, "unauthorized")
		r = testserver.Do(t, srv.URL, "", "POST", fmt.Sprintf("/api/v1/agents/%d/mcp/", agentID), `{}`)
		mqWant(t, r, 401, "unauthorized")
		if _, err := mqSession(t, endpoint, "qk_not_a_key", nil); err == nil {
			t.Fatal("the SDK client connected with a bad key")
		}
	})

	t.Run("another account's agent is 404", func(t *testing.T) {
		other := srv.NewKey("other")
		r := testserver.Do(t, srv.URL, other, "POST", fmt.Sprintf("/api/v1/agents/%d/mcp", agentID), `{}`)
		mqWant(t, r, 404, "not_found")
		mqWant(t, srv.Do("POST", "/api/v1/agents/999999/mcp/", `{}`), 404, "not_found")
	})

	t.Run("the list follows detach", func(t *testing.T) {
		r := srv.Do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agentID), map[string]any{"tools": []int64{counterID}})
		if r.Status != 200 {
			t.Fatalf("patch: %d %s", r.Status, r.Body)
		}
		start := time.Now()
		testserver.Eventually(t, 3*time.Second, "mail to leave the tool list", func() bool {
			return mqToolNames(t, cs)["mail__send_draft"] == nil
		})
		t.Logf("the detach showed after %v", time.Since(start).Round(time.Millisecond))
		if n := len(mqToolNames(t, cs)); n != 9+mcptest.DummyTools {
			t.Fatalf("%d tools after detach", n)
		}
	})
}
