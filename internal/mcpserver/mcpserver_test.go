package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

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
	f.mu.Lock()
	ok := f.answer
	f.answer = func(r calls.Request) (*calls.Response, error) {
		if !r.HasKey { // as the engine answers a non-retryable action
			return nil, problem.New(problem.IdempotencyKeyRequired, "Action \"send\" is not retryable: call it with an Idempotency-Key header.")
		}
		return ok(r)
	}
	f.mu.Unlock()

	// Without a key the engine decides (it checks the rest first); its
	// answer names the argument, not a header.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: map[string]any{"to": "a@b.c"}})
	if err != nil {
		t.Fatal(err)
	}
	if env := envelopeOf(t, res); !res.IsError || env["error"] != "idempotency_key_required" || !strings.Contains(env["message"].(string), "idempotency_key argument") {
		t.Fatalf("without a key: isError=%v %v", res.IsError, env)
	}
	if len(f.requests) != 1 || f.requests[0].HasKey || string(f.requests[0].Body) != `{"tool":11,"action":"send","arguments":{"to":"a@b.c"}}` {
		t.Fatalf("without a key the engine got %+v", f.requests)
	}
	f.requests = nil
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: map[string]any{"to": "a", keyArg: " k"}})
	if env := envelopeOf(t, res); env["error"] != "invalid_idempotency_key" {
		t.Fatalf("bad key: %v", env)
	}
	if len(f.requests) != 0 {
		t.Fatalf("the engine was called %d times for a refused key", len(f.requests))
	}

	cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: json.RawMessage(`{"to":"<a@b.c>","n":1.50,"idempotency_key":"k-1"}`)})
	if len(f.requests) != 1 {
		t.Fatalf("engine calls = %d", len(f.requests))
	}
	got := f.requests[0]
	if got.AccountID != 1 || !got.HasKey || got.Key != "k-1" {
		t.Errorf("request = %+v", got)
	}
	if want := `{"tool":11,"action":"send","arguments":{"to":"<a@b.c>","n":1.50}}`; string(got.Body) != want {
		t.Errorf("body = %s, want %s", got.Body, want)
	}
}

// TestMCPTakeKey: the key member is cut out of the arguments' text, the
// rest kept byte for byte; arguments it cannot be taken from go on whole.
func TestMCPTakeKey(t *testing.T) {
	for _, c := range []struct {
		args, rest, key string
		found           bool
		code            problem.Code
	}{
		{args: `{"idempotency_key":"k"}`, rest: `{}`, key: "k", found: true},
		{args: ` { "a" : 1 , "idempotency_key" : "k" } `, rest: ` { "a" : 1 } `, key: "k", found: true},
		{args: `{"idempotency_key":"k", "a":[1,{"b":2}],"c":"x"}`, rest: `{"a":[1,{"b":2}],"c":"x"}`, key: "k", found: true},
		{args: `{"a":1,"idempotency_key":"k","c":2}`, rest: `{"a":1,"c":2}`, key: "k", found: true},
		{args: `{"\u0069dempotency_key":"k\u0021","a":1}`, rest: `{"a":1}`, key: "k!", found: true},
		{args: `{"a":1,"a":2,"idempotency_key":"k"}`, rest: `{"a":1,"a":2}`, key: "k", found: true}, // the engine refuses the duplicate
		{args: `{"idempotency_key":"k1","idempotency_key":"k2"}`},
		{args: `{"idempotency_key":"k1","\u0069dempotency_key":"k2"}`},
		{args: `{"a":1}`},
		{args: `[1]`},
		{args: `"x"`},
		{args: `{"a":{"idempotency_key":"k"}}`},
		{args: `{"idempotency_key":" k"}`, code: problem.InvalidIdempotencyKey},
		{args: `{"idempotency_key":1}`, code: problem.InvalidIdempotencyKey},
	} {
		rest, key, found, err := takeKey(json.RawMessage(c.args), keyArg)
		if c.code != "" {
			if p, ok := problem.As(err); !ok || p.Code != c.code {
				t.Errorf("%s: error %v, want %s", c.args, err, c.code)
			}
			continue
		}
		if err != nil || found != c.found || key != c.key || (found && string(rest) != c.rest) {
			t.Errorf("%s: %s %q %v %v, want %s %q %v", c.args, rest, key, found, err, c.rest, c.key, c.found)
		}
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

// TestMCPToolErrorRetryAfter: a tool error carries retry_after wherever
// REST would set Retry-After.
func TestMCPToolErrorRetryAfter(t *testing.T) {
	f, url := setup(t)
	cs := connect(t, url+"/api/v1/agents/7/mcp")
	for code, wantRA := range map[problem.Code]any{problem.RateLimited: float64(3), problem.Unavailable: float64(3),
		problem.RequestInProgress: float64(3), problem.InvalidArguments: nil} {
		f.mu.Lock()
		f.answer = func(calls.Request) (*calls.Response, error) {
			p := problem.New(code, "no")
			if code != problem.InvalidArguments {
				p.RetryAfter = 3
			}
			return nil, p
		}
		f.mu.Unlock()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "My_Mail__read"})
		if err != nil {
			t.Fatal(err)
		}
		if env := envelopeOf(t, res); env["error"] != string(code) || env["retry_after"] != wantRA {
			t.Errorf("%s: %v", code, env)
		}
	}
	// The database down while building the list: 503 with Retry-After, the
	// body as REST writes it.
	s := New(Options{Agents: downAgents{}, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine)})
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("POST", "/api/v1/agents/7/mcp", strings.NewReader(`{}`)))
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" || strings.Contains(w.Body.String(), "retry_after") {
		t.Errorf("down: %d %v %s", w.Code, w.Header(), w.Body)
	}
}

type downAgents struct{}

func (downAgents) Get(context.Context, int64, int64) (*agents.Agent, error) {
	return nil, store.ErrUnavailable
}

// TestMCPForget: ForgetAgent and ForgetTool drop cached lists at once,
// whatever ListTTL; ForgetTool only those with the tool attached.
func TestMCPForget(t *testing.T) {
	f, _ := setup(t)
	f.agentTools[8] = []int64{12}
	s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Hour})
	ctx := context.Background()
	get := func(agent int64) *toolset {
		t.Helper()
		ts, err := s.sets.get(ctx, 1, agent)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	a7, a8 := get(7), get(8)
	if get(7) != a7 || get(8) != a8 {
		t.Fatal("not cached")
	}
	s.ForgetAgent(1, 7)
	if get(7) == a7 || get(8) != a8 {
		t.Fatal("ForgetAgent(7)")
	}
	a7 = get(7)
	s.ForgetTool(1, 11) // attached to 7 only
	if get(7) == a7 || get(8) != a8 {
		t.Fatal("ForgetTool(11)")
	}
	a7 = get(7)
	s.ForgetTool(1, 13) // attached to 7, not configured
	if get(7) == a7 || get(8) != a8 {
		t.Fatal("ForgetTool(13)")
	}
	a7 = get(7)
	s.ForgetTool(2, 12) // another account
	s.ForgetAgent(2, 7)
	if get(7) != a7 || get(8) != a8 {
		t.Fatal("another account's forget")
	}
}

// TestMCPListIsPrivate: tools/list is marked private, stale at once.
func TestMCPListIsPrivate(t *testing.T) {
	_, url := setup(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/api/v1/agents/7/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolStateless})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CacheScope != "private" || res.TTLMs != 0 {
		t.Fatalf("cacheScope %q, ttlMs %d", res.CacheScope, res.TTLMs)
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
	s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Millisecond})
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
