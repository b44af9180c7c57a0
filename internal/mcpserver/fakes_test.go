package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
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
	agentTools map[int64][]int64       // agent → tools, account 1 only
	status     map[int64]agents.Status // agent → status; "" when not set
	names      map[int64]string
	configured map[int64]bool
	actions    []connectors.Action
	shared     bool // Actions hands out f.actions itself, as the MCP connector does
	agentGets  int
	requests   []calls.Request
	answer     func(calls.Request) (*calls.Response, error)
	// relist, when set, is the connector's RelistActions; relists counts
	// its calls.
	relist  func() ([]connectors.Action, error)
	relists int
}

// RelistActions makes fakes a connectors.ActionsRelister, which has no
// list to give unless relist is set.
func (f *fakes) RelistActions(context.Context, *connectors.Tool) ([]connectors.Action, error) {
	f.mu.Lock()
	f.relists++
	relist := f.relist
	f.mu.Unlock()
	if relist == nil {
		return nil, nil
	}
	return relist()
}

func (f *fakes) Get(_ context.Context, account, id int64) (*agents.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.agentGets++
	tools, ok := f.agentTools[id]
	if account != 1 || !ok {
		return nil, problem.New(problem.NotFound, "No agent with ID %d.", id)
	}
	return &agents.Agent{ID: id, Name: "agent", Status: f.status[id], Tools: slices.Clone(tools)}, nil
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

// listing lists a fake tool's actions as calls.Engine.Actions does,
// without the token refresh.
type listing struct{ f *fakes }

func (l listing) Actions(ctx context.Context, account, id int64) (*toolconfig.Resolved, []connectors.Action, error) {
	rt, err := l.f.Resolve(ctx, account, id)
	if err != nil {
		return nil, nil, err
	}
	actions, err := rt.Connector.Actions(ctx, rt.Tool)
	return rt, actions, err
}

// Relist asks the tool's connector, as calls.Engine.Relist does, without
// the token refresh.
func (l listing) Relist(ctx context.Context, rt *toolconfig.Resolved) (*toolconfig.Resolved, []connectors.Action, error) {
	if r, ok := rt.Connector.(connectors.ActionsRelister); ok {
		actions, _ := r.RelistActions(ctx, rt.Tool)
		return rt, actions, nil
	}
	return rt, nil, nil
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

func (e engineFunc) Key(context.Context, int64, string) (*calls.KeyState, error) {
	return nil, problem.New(problem.NotFound, "No idempotency key with that value for this account.")
}

func (e engineFunc) CountConflict(problem.Code) {}

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
	s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: 50 * time.Millisecond})
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

// asAccount1 stands in for the API's auth middleware: the caller is
// account 1 with full rights.
func asAccount1(c *gin.Context) {
	c.Request = c.Request.WithContext(accounts.WithPrincipal(c.Request.Context(), accounts.Principal{Account: 1}))
}
