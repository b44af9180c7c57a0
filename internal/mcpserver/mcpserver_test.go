package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// fakes stand in for the agent service, toolconfig and the engine.
type fakes struct {
	mu         sync.Mutex
	agentTools map[int64][]int64 // agent → tools, account 1 only
	names      map[int64]string
	configured map[int64]bool
	actions    []connectors.Action
	shared     bool // Actions hands out f.actions itself, as the MCP connector does
	agentGets  int
	requests   []calls.Request
	answer     func(calls.Request) (*calls.Response, error)
}

func (f *fakes) Get(_ context.Context, account, id int64) (*agents.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.agentGets++
	tools, ok := f.agentTools[id]
	if account != 1 || !ok {
		return nil, problem.New(problem.NotFound, "No agent with ID %d.", id)
	}
	return &agents.Agent{ID: id, Name: "agent", Tools: slices.Clone(tools)}, nil
}

func (f *fakes) Resolve(_ context.Context, account, id int64) (*toolconfig.Resolved, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.configured[id] {
		return nil, problem.New(problem.ToolNotConfigured, "not configured")
	}
	e := &catalog.Entry{Name: "custom-mcp"}
	return &toolconfig.Resolved{Tool: &connectors.Tool{ID: id, AccountID: account, Entry: e}, Entry: e,
		Connector: f, Row: &store.Tool{ID: id, Name: f.names[id]}}, nil
}

func (f *fakes) Actions(context.Context, *connectors.Tool) ([]connectors.Action, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shared {
		return f.actions, nil
	}
	return slices.Clone(f.actions), nil
}

func (f *fakes) Call(context.Context, *connectors.Tool, string, json.RawMessage) (connectors.Result, error) {
	panic("the server must not call a connector")
}

func (f *fakes) CallEngine(_ context.Context, r calls.Request) (*calls.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, r)
	answer := f.answer
	f.mu.Unlock()
	return answer(r)
}

type engineFunc func(context.Context, calls.Request) (*calls.Response, error)

func (e engineFunc) Call(ctx context.Context, r calls.Request) (*calls.Response, error) {
	return e(ctx, r)
}

func setup(t *testing.T) (*fakes, string) {
	t.Helper()
	yes, no := true, false
	f := &fakes{
		agentTools: map[int64][]int64{7: {11, 12, 13}},
		names:      map[int64]string{11: "My Mail!", 12: "My Mail!", 13: "unconfigured"},
		configured: map[int64]bool{11: true, 12: true},
		actions: []connectors.Action{
			{Name: "read", Description: "Reads.", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
				Retryable: true, Annotations: &catalog.Annotations{ReadOnlyHint: &yes, DestructiveHint: &no}},
			{Name: "send", Description: "Sends.", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)},
		},
		answer: func(r calls.Request) (*calls.Response, error) {
			return &calls.Response{Status: 200, Body: []byte(`{"call_id":"c_1","tool":11,"action":"send","is_error":false,"result":{"n":12345678901234567890},"duration_ms":1}`)}, nil
		},
	}
	gin.SetMode(gin.ReleaseMode)
	s := New(Options{Agents: f, Tools: f, Calls: engineFunc(f.CallEngine), ListTTL: 50 * time.Millisecond})
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	return f, hs.URL
}

func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func TestMCPToolsList(t *testing.T) {
	_, url := setup(t)
	tools := listNames(t, connect(t, url+"/api/v1/agents/7/mcp"))
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"My_Mail_12__read", "My_Mail_12__send", "My_Mail__read", "My_Mail__send"}
	if !slices.Equal(names, want) {
		t.Fatalf("names = %v, want %v", names, want)
	}
	read := tools["My_Mail__read"]
	if read.Annotations == nil || !read.Annotations.ReadOnlyHint || *read.Annotations.DestructiveHint {
		t.Errorf("read annotations = %+v", read.Annotations)
	}
	if strings.Contains(mustJSON(t, read.InputSchema), keyArg) {
		t.Errorf("a retryable action's schema has %s: %s", keyArg, mustJSON(t, read.InputSchema))
	}
	schema := tools["My_Mail__send"].InputSchema.(map[string]any)
	if req := schema["required"].([]any); !slices.Contains(req, any("to")) || !slices.Contains(req, any(keyArg)) {
		t.Errorf("send required = %v", req)
	}
	if _, ok := schema["properties"].(map[string]any)[keyArg]; !ok {
		t.Errorf("send properties lack %s", keyArg)
	}
}

func TestMCPCallTakesIdempotencyKey(t *testing.T) {
	f, url := setup(t)
	cs := connect(t, url+"/api/v1/agents/7/mcp/")
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: map[string]any{"to": "a@b.c"}})
	if err != nil {
		t.Fatal(err)
	}
	if env := envelopeOf(t, res); !res.IsError || env["error"] != "idempotency_key_required" {
		t.Fatalf("without a key: isError=%v %v", res.IsError, env)
	}
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: map[string]any{"to": "a", keyArg: " k"}})
	if env := envelopeOf(t, res); env["error"] != "invalid_idempotency_key" {
		t.Fatalf("bad key: %v", env)
	}
	if len(f.requests) != 0 {
		t.Fatalf("the engine was called %d times for refused keys", len(f.requests))
	}

	cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: json.RawMessage(`{"to":"<a@b.c>","n":1.50,"idempotency_key":"k-1"}`)})
	if len(f.requests) != 1 {
		t.Fatalf("engine calls = %d", len(f.requests))
	}
	got := f.requests[0]
	if got.AccountID != 1 || !got.HasKey || got.Key != "k-1" {
		t.Errorf("request = %+v", got)
	}
	if want := `{"tool":11,"action":"send","arguments":{"n":1.50,"to":"<a@b.c>"}}`; string(got.Body) != want {
		t.Errorf("body = %s, want %s", got.Body, want)
	}
}

func TestMCPResultAndErrors(t *testing.T) {
	f, url := setup(t)
	cs := connect(t, url+"/api/v1/agents/7/mcp")
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__read", Arguments: map[string]any{"q": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != `{"n":12345678901234567890}` || res.StructuredContent == nil {
		t.Fatalf("result = %+v", res)
	}
	if res.Meta[metaCallID] != "c_1" {
		t.Errorf("meta = %v", res.Meta)
	}
	if f.requests[0].HasKey {
		t.Errorf("a retryable call got a key")
	}

	f.mu.Lock()
	f.answer = func(calls.Request) (*calls.Response, error) {
		return nil, &problem.Error{Code: problem.InvalidArguments, Message: "bad", Fields: map[string]string{"q": "must be a string"}}
	}
	f.mu.Unlock()
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__read", Arguments: map[string]any{"q": 1}})
	env := envelopeOf(t, res)
	if !res.IsError || env["error"] != "invalid_arguments" || env["fields"].(map[string]any)["q"] != "must be a string" {
		t.Fatalf("error = %v", env)
	}
}

func TestMCPUnknownAgent(t *testing.T) {
	_, url := setup(t)
	for _, path := range []string{"/api/v1/agents/8/mcp", "/api/v1/agents/x/mcp/"} {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var env map[string]any
		json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != 404 || env["error"] != "not_found" {
			t.Errorf("%s: %d %v", path, resp.StatusCode, env)
		}
	}
}

func TestMCPListFollowsAttach(t *testing.T) {
	f, url := setup(t)
	cs := connect(t, url+"/api/v1/agents/7/mcp")
	if n := len(listNames(t, cs)); n != 4 {
		t.Fatalf("%d tools", n)
	}
	f.mu.Lock()
	f.agentTools[7] = []int64{12}
	f.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for len(listNames(t, cs)) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the tool list did not follow the detach")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The remaining tool is alone with its name now.
	if _, ok := listNames(t, cs)["My_Mail__send"]; !ok {
		t.Errorf("names = %v", listNames(t, cs))
	}
}

func TestMCPListIsCached(t *testing.T) {
	f, url := setup(t)
	cs := connect(t, url+"/api/v1/agents/7/mcp")
	f.mu.Lock()
	before := f.agentGets
	f.mu.Unlock()
	for range 20 {
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "My_Mail__read", Arguments: map[string]any{}})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// 20 calls within a few TTLs of 50ms: a handful of reads, not one each.
	if n := f.agentGets - before; n > 10 {
		t.Errorf("%d agent reads for 20 calls", n)
	}
}

func TestMCPNames(t *testing.T) {
	for in, want := range map[string]string{"": "tool", "a b/c": "a_b_c", "__x__": "x", "Ünï": "n", strings.Repeat("a", 80): strings.Repeat("a", 64)} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := toolName("t", "a/b.c"); got != "t__a_b.c" {
		t.Errorf("toolName = %q", got)
	}
	tools := []agentTool{{id: 5, name: "x"}, {id: 3, name: "x"}, {id: 4, name: "y"}}
	disambiguate(tools)
	if tools[0].name != "x_5" || tools[1].name != "x" || tools[2].name != "y" {
		t.Errorf("disambiguate = %+v", tools)
	}
	for k, ok := range map[string]bool{"a": true, " a": false, "a ": false, "": false, "a\tb": false, strings.Repeat("k", 256): false, "a b": true} {
		if validKey(k) != ok {
			t.Errorf("validKey(%q) = %v", k, !ok)
		}
	}
}

func envelopeOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m); err != nil {
		t.Fatalf("not an envelope: %v", res.Content)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPToolsetKeptWhileUnchanged: a rebuild after ListTTL that finds the
// same tools and the same action lists keeps the agent's server; a new
// list (the connector discovered anew) makes a new one.
func TestMCPToolsetKeptWhileUnchanged(t *testing.T) {
	f, _ := setup(t)
	f.shared = true
	s := New(Options{Agents: f, Tools: f, Calls: engineFunc(f.CallEngine), ListTTL: time.Millisecond})
	ctx := context.Background()
	get := func() *toolset {
		t.Helper()
		time.Sleep(3 * time.Millisecond) // past ListTTL
		ts, err := s.sets.get(ctx, 1, 7)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	first := get()
	if again := get(); again == first || again.srv != first.srv {
		t.Fatalf("rebuilt: same toolset %v, same server %v", again == first, again.srv == first.srv)
	}
	f.mu.Lock()
	f.actions = append(slices.Clone(f.actions), connectors.Action{Name: "archive", InputSchema: json.RawMessage(`{"type":"object"}`), Retryable: true})
	f.mu.Unlock()
	changed := get()
	if changed.srv == first.srv {
		t.Fatal("a new action list kept the old server")
	}
	if _, ok := changed.tools["My_Mail__archive"]; !ok {
		t.Fatalf("tools after the change: %v", changed.tools)
	}
	if n := f.agentGets; n < 3 {
		t.Fatalf("the agent was read %d times; every build reads it", n)
	}
}

// asAccount1 stands in for the API's auth middleware: the caller is
// account 1 with full rights.
func asAccount1(c *gin.Context) {
	c.Request = c.Request.WithContext(accounts.WithPrincipal(c.Request.Context(), accounts.Principal{Account: 1}))
}
