package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/agents"
)

// TestMCPPausedAgent: a paused agent's endpoint, on the fast path and the
// SDK's alike, still lists its tools and refuses every tools/call (listed,
// keyed, a listed tool's unknown action, an unknown name) with forbidden,
// before the engine and before any re-list.
func TestMCPPausedAgent(t *testing.T) {
	f, fast, fastURL, sdkURL := pair(t)
	f.mu.Lock()
	f.status = map[int64]agents.Status{7: agents.Paused}
	f.actions = append(f.actions, connectors.Action{Name: "count", InputSchema: json.RawMessage(`{"type":"object"}`),
		Retryable: true, OutputSchema: json.RawMessage(`{"type":"object"}`)})
	f.mu.Unlock()
	const want = `{"error":"forbidden","message":"Agent 7 (\"agent\") is paused: its tools cannot be called. To resume, set its status to active or draft (PATCH /api/v1/agents/7/)."}`
	for _, url := range []string{fastURL, sdkURL} {
		cs := connect(t, url)
		if tools := listNames(t, cs); len(tools) != 6 {
			t.Fatalf("%s: paused agent lists %d tools", url, len(tools))
		}
		for _, p := range []*mcp.CallToolParams{
			{Name: "My_Mail__read", Arguments: map[string]any{"q": "x"}},
			{Name: "My_Mail__send", Arguments: map[string]any{"to": "a", keyArg: "k-1"}},
			{Name: "My_Mail__other", Arguments: map[string]any{}},
			{Name: "nope", Arguments: map[string]any{keyArg: "k-1"}},
		} {
			res, err := cs.CallTool(context.Background(), p)
			if err != nil {
				t.Fatalf("%s %s: %v", url, p.Name, err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			structured, _ := json.Marshal(res.StructuredContent)
			if !res.IsError || text != want || string(structured) != want {
				t.Errorf("%s %s: isError %v, text %s, structured %s", url, p.Name, res.IsError, text, structured)
			}
		}
	}
	// An action listed with an output schema is refused with no
	// structured content (typedResult), the same on both paths.
	msg := toolsCall("My_Mail__count", `{}`)
	got, sdk := post(t, f, fastURL, nil, msg), post(t, f, sdkURL, nil, msg)
	compare(t, "paused, typed", got, sdk)
	if !strings.Contains(got.body, `"isError":true`) || strings.Contains(got.body, "structuredContent") || !strings.Contains(got.body, "is paused") {
		t.Errorf("paused, typed: %s", got.body)
	}
	if fast.fastCalls.Load() == 0 {
		t.Error("no paused call took the fast path")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 0 || f.relists != 0 {
		t.Errorf("a paused agent's calls reached the engine (%d) or a re-list (%d)", len(f.requests), f.relists)
	}
}

// TestMCPPausedStatusOnlyChange: a build that finds only the agent's status
// changed keeps its *mcp.Server and takes the new status, both ways.
func TestMCPPausedStatusOnlyChange(t *testing.T) {
	f, _ := setup(t)
	s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine)})
	ctx := context.Background()
	cur, err := s.sets.get(ctx, 1, 7)
	if err != nil || cur.paused != nil {
		t.Fatalf("%v, paused %v", err, cur.paused)
	}
	for _, status := range []agents.Status{agents.Paused, agents.Active, agents.Paused, agents.Draft} {
		f.mu.Lock()
		f.status = map[int64]agents.Status{7: status}
		f.mu.Unlock()
		next, err := s.sets.refresh(ctx, 1, 7, cur)
		if err != nil {
			t.Fatal(err)
		}
		if next == cur || next.srv != cur.srv {
			t.Errorf("%s: the toolset was kept (%v) or its server made anew (%v)", status, next == cur, next.srv != cur.srv)
		}
		if (next.paused != nil) != (status == agents.Paused) {
			t.Errorf("%s: paused %v", status, next.paused)
		}
		cur = next
	}
}

// TestMCPPausedDuringRelist: a call of a name the list lacks that waits on
// a re-list is refused if the agent was paused meanwhile, though the name
// is then listed: the toolset it would run from says paused.
func TestMCPPausedDuringRelist(t *testing.T) {
	f, _ := setup(t)
	f.shared = true
	s, url := serveAgent7(t, Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Hour}, false)
	if a := post(t, f, url, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); a.status != 200 {
		t.Fatalf("tools/list: %d %s", a.status, a.body)
	}
	yes := true
	actions := append(slices.Clone(f.actions),
		connectors.Action{Name: "peek", InputSchema: json.RawMessage(`{"type":"object"}`), Retryable: true, Annotations: &catalog.Annotations{ReadOnlyHint: &yes}})
	entered, release := make(chan struct{}), make(chan struct{})
	f.mu.Lock()
	f.requests = nil
	f.relist = func() ([]connectors.Action, error) {
		close(entered)
		<-release
		f.mu.Lock()
		f.actions = actions
		f.mu.Unlock()
		return actions, nil
	}
	f.mu.Unlock()
	done := make(chan answer, 1)
	go func() { done <- post(t, f, url, nil, toolsCall("My_Mail__peek", `{}`)) }()
	<-entered
	f.mu.Lock()
	f.status = map[int64]agents.Status{7: agents.Paused} // the PATCH commits…
	f.mu.Unlock()
	s.ForgetAgent(1, 7) // …and this replica forgets the agent's list
	close(release)
	a := <-done
	f.mu.Lock()
	n := len(f.requests)
	f.mu.Unlock()
	if n != 0 || !strings.Contains(a.body, "is paused") {
		t.Fatalf("paused during the re-list: the engine ran %d call(s); answer %d %s", n, a.status, a.body)
	}
}
