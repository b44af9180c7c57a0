package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// Quiver as an MCP server: an agent's tools through the Go SDK's client.

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
	if want := 2*mcptest.CounterTools + 8; len(tools) != want {
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
		if n := len(mqToolNames(t, cs)); n != mcptest.CounterTools {
			t.Fatalf("%d tools after detach", n)
		}
	})
}
