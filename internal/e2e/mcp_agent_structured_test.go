package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentStructuredOutput: an upstream tool's outputSchema reaches the
// action (GET …/actions/ output_schema) and the agent's tools/list, and a
// call of it answers over MCP with the tool's own structuredContent, which
// satisfies that schema, first and on a replay, even when the tool's text
// is other JSON (a wrapped primitive: text "8", structured {"result":8}).
// Over REST, result stays the text's JSON and structured_content carries
// the rest. Error results of a typed tool, the tool's own and Quiver's
// refusals alike, carry no structured content, so a client that checks it
// against the schema on every result still takes them; a tool without an
// output schema keeps its result as structured content.
func TestMCPAgentStructuredOutput(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	up := mcp.NewServer(&mcp.Implementation{Name: "typed", Version: "1"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	type weather struct {
		Celsius int `json:"celsius"`
	}
	mcp.AddTool(up, &mcp.Tool{Name: "weather", Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, weather, error) {
			return nil, weather{Celsius: 21}, nil
		})
	wrapped := json.RawMessage(`{"type":"object","properties":{"result":{"type":"integer"}},"required":["result"]}`)
	answer := func(res *mcp.CallToolResult) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil }
	}
	object := json.RawMessage(`{"type":"object"}`)
	up.AddTool(&mcp.Tool{Name: "count", InputSchema: object, OutputSchema: wrapped}, // not retryable
		answer(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "8"}},
			StructuredContent: json.RawMessage(`{"result":8}`)}))
	up.AddTool(&mcp.Tool{Name: "fails", InputSchema: object, OutputSchema: wrapped, Annotations: readOnly},
		answer(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: `{"error":"no_data"}`}}}))
	up.AddTool(&mcp.Tool{Name: "untyped", InputSchema: object, Annotations: readOnly},
		answer(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}}}))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	id := mqConnect(t, srv, "typed", map[string]any{"url": hs.URL})

	// REST: discovery and calls.
	r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", id), nil)
	schemas := map[string]any{}
	for _, a := range fdObject(t, r)["actions"].([]any) {
		a := a.(map[string]any)
		schemas[a["name"].(string)] = a["output_schema"]
	}
	if s, _ := schemas["weather"].(map[string]any); s["type"] != "object" || s["properties"] == nil {
		t.Errorf("weather's output_schema %v, want the tool's", schemas["weather"])
	}
	if s, _ := schemas["count"].(map[string]any); fmt.Sprint(s["required"]) != "[result]" {
		t.Errorf("count's output_schema %v, want %s", schemas["count"], wrapped)
	}
	if schemas["untyped"] != nil {
		t.Errorf("untyped's output_schema %v, want none", schemas["untyped"])
	}
	m := fdObject(t, mqCall(srv, id, "count", nil, "rest-count"))
	if got, _ := json.Marshal(m["structured_content"]); fmt.Sprint(m["result"]) != "8" || string(got) != `{"result":8}` {
		t.Errorf("count over REST: result %v, structured_content %s; want 8 and {\"result\":8}", m["result"], got)
	}
	m = fdObject(t, mqCall(srv, id, "weather", nil, ""))
	if _, has := m["structured_content"]; has || fmt.Sprint(m["result"]) != "map[celsius:21]" {
		t.Errorf("weather over REST: %v; want the result alone", m)
	}

	// The agent MCP endpoint, checked as a validating client checks.
	_, endpoint := mqaAgent(t, srv, id)
	cs := mqaSession(t, srv, endpoint)
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	validators := map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		b, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema %s: %v", tool.Name, b, err)
		}
		v, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema %s: %v", tool.Name, b, err)
		}
		validators[tool.Name] = v
	}
	for _, name := range []string{"typed__weather", "typed__count", "typed__fails"} {
		if validators[name] == nil {
			t.Errorf("%s is listed without its output schema", name)
		}
	}
	if validators["typed__untyped"] != nil {
		t.Error("typed__untyped is listed with an output schema")
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := validators[name]
		switch {
		case v == nil || res.IsError && res.StructuredContent == nil:
		case res.StructuredContent == nil:
			t.Errorf("%s: no structured content, but the tool is listed with an output schema", name)
		default:
			b, _ := json.Marshal(res.StructuredContent)
			var inst any
			_ = json.Unmarshal(b, &inst)
			if err := v.Validate(inst); err != nil {
				t.Errorf("%s: structured content %s does not satisfy the listed schema: %v", name, b, err)
			}
		}
		return res
	}
	structured := func(res *mcp.CallToolResult) string {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	if res := call("typed__weather", nil); res.IsError || structured(res) != `{"celsius":21}` {
		t.Errorf("weather: error %v, structured %s", res.IsError, structured(res))
	}
	first := call("typed__count", map[string]any{"idempotency_key": "mcp-count"})
	again := call("typed__count", map[string]any{"idempotency_key": "mcp-count"})
	for _, res := range []*mcp.CallToolResult{first, again} {
		if res.IsError || mqText(t, res) != "8" || structured(res) != `{"result":8}` {
			t.Errorf("count: error %v, text %q, structured %s; want 8 and {\"result\":8}", res.IsError, mqText(t, res), structured(res))
		}
	}
	if again.Meta["quiver/replayed"] != true {
		t.Errorf("count again: _meta %v, want a replay", again.Meta)
	}
	// The REST call's key replays the same answer over MCP.
	if res := call("typed__count", map[string]any{"idempotency_key": "rest-count"}); structured(res) != `{"result":8}` || res.Meta["quiver/replayed"] != true {
		t.Errorf("count under the REST call's key: structured %s, _meta %v", structured(res), res.Meta)
	}
	for name, args := range map[string]map[string]any{
		"typed__fails": nil, // the tool's own error
		"typed__count": nil, // Quiver's refusal: idempotency_key_required
	} {
		res := call(name, args)
		if !res.IsError || res.StructuredContent != nil || mqText(t, res) == "" {
			t.Errorf("%s: error %v, structured %s, text %q; want an error with text alone", name, res.IsError, structured(res), mqText(t, res))
		}
	}
	if res := call("typed__untyped", nil); structured(res) != `{"a":1}` {
		t.Errorf("untyped: structured %s, want the result", structured(res))
	}
}
