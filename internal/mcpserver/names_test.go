package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
)

func TestMCPNames(t *testing.T) {
	for in, want := range map[string]string{"": "tool", "a b/c": "a_b_c", "__x__": "x", "Ünï": "n", "a__b": "a_b", "a _ b": "a_b",
		strings.Repeat("a", 80): strings.Repeat("a", 64), strings.Repeat("a", 63) + "_b": strings.Repeat("a", 63)} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := toolName("t", "a/b.c"); got != "t__a_b.c" {
		t.Errorf("toolName = %q", got)
	}
	tools := []agentTool{{id: 5, base: "x"}, {id: 3, base: "x"}, {id: 4, base: "y"}}
	disambiguate(tools)
	if tools[0].name != "x_5" || tools[1].name != "x" || tools[2].name != "y" {
		t.Errorf("disambiguate = %+v", tools)
	}
}

// TestMCPNamesIndependentOfOrder: in every order of the same tools, every
// action gets a name, each name one action, and the same name the same
// action; names keep MCP's rules.
func TestMCPNamesIndependentOfOrder(t *testing.T) {
	long := strings.Repeat("l", 140)
	acts := func(names ...string) []connectors.Action {
		var out []connectors.Action
		for _, n := range names {
			out = append(out, connectors.Action{Name: n})
		}
		return out
	}
	base := []agentTool{
		{id: 1, base: sanitize("up"), actions: acts("read")},
		{id: 2, base: sanitize("up"), actions: acts("read")},
		{id: 4, base: sanitize("up_2"), actions: acts("read")},
		{id: 6, base: sanitize("up_2"), actions: acts("read")},
		{id: 7, base: sanitize("up_2_2"), actions: acts("read")},
		{id: 8, base: sanitize("foo bar"), actions: acts("read")},
		{id: 9, base: sanitize("foo_bar"), actions: acts("read")},
		{id: 10, base: sanitize("c"), actions: acts("read__count")},
		{id: 11, base: sanitize("c__read"), actions: acts("count")},
		{id: 12, base: sanitize(strings.Repeat("z", 70)), actions: acts("a/b", "a_b", "a.b", long+"1", long+"2", long, "x_d5a5e2a2")},
		{id: 123456789, base: sanitize(strings.Repeat("z", 70)), actions: acts("a")},
	}
	type key struct {
		tool   int64
		action string
	}
	named := func(tools []agentTool) map[string]key {
		tools = slices.Clone(tools)
		disambiguate(tools)
		out := map[string]key{}
		for _, tl := range tools {
			names := actionNames(tl.name, tl.actions)
			for i, n := range names {
				if n == "" || len(n) > maxNameLen || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != "" {
					t.Fatalf("bad name %q", n)
				}
				if prev, ok := out[n]; ok {
					t.Fatalf("%s names %v and %v", n, prev, key{tl.id, tl.actions[i].Name})
				}
				out[n] = key{tl.id, tl.actions[i].Name}
			}
		}
		return out
	}
	want := named(base)
	if n := 11 + 6; len(want) != n {
		t.Fatalf("%d names, want %d: %v", len(want), n, want)
	}
	for name, k := range map[string]key{"up__read": {1, "read"}, "up_2__read": {4, "read"}, "up_2_2__read": {7, "read"},
		"up_2_6__read": {6, "read"}, "up_2_3__read": {2, "read"}, "foo_bar__read": {8, "read"}, "foo_bar_9__read": {9, "read"},
		"c__read__count": {10, "read__count"}, "c_read__count": {11, "count"}} {
		if want[name] != k {
			t.Errorf("%s = %v, want %v", name, want[name], k)
		}
	}
	z := strings.Repeat("z", 64)
	if want[z+"__a_b"] != (key{12, "a_b"}) || want[z+"__a.b"] != (key{12, "a.b"}) {
		t.Errorf("the action named so keeps its name: %v", want)
	}
	if k := want[strings.Repeat("z", 54)+"_123456789__a"]; k != (key{123456789, "a"}) {
		t.Errorf("a long tool name with its suffix: %v", want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		tools := slices.Clone(base)
		rng.Shuffle(len(tools), func(i, j int) { tools[i], tools[j] = tools[j], tools[i] })
		for i := range tools {
			as := slices.Clone(tools[i].actions)
			rng.Shuffle(len(as), func(i, j int) { as[i], as[j] = as[j], as[i] })
			tools[i].actions = as
		}
		if got := named(tools); !maps.Equal(got, want) {
			t.Fatalf("another order named them otherwise:\n%v\n%v", got, want)
		}
	}
	// A repeated action name is listed once: the engine runs the first.
	if names := actionNames("t", acts("a", "a")); names[0] != "t__a" || names[1] != "" {
		t.Errorf("repeat: %q", names)
	}
}

// TestMCPUpstreamKeyArgument: an action with an idempotency_key argument of
// its own takes Quiver's key as quiver_idempotency_key (or further), and
// its own argument goes on.
func TestMCPUpstreamKeyArgument(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object"}`: keyArg,
		`{"type":"object","properties":{"idempotency_key":{"type":"string"}}}`:                                            altKeyArg,
		`{"type":"object","required":["idempotency_key"]}`:                                                                altKeyArg,
		`{"type":"object","properties":{"idempotency_key":{},"quiver_idempotency_key":{},"quiver_idempotency_key_2":{}}}`: altKeyArg + "_3",
	} {
		tool, key, err := mcpTool("t__a", &connectors.Action{Name: "a", InputSchema: json.RawMessage(schema)})
		if err != nil || key != want {
			t.Fatalf("%s: key %q, %v; want %q", schema, key, err, want)
		}
		s := tool.InputSchema.(map[string]any)
		if !slices.Contains(s["required"].([]any), any(want)) || !strings.Contains(tool.Description, want) {
			t.Errorf("%s: %v %q", schema, s, tool.Description)
		}
	}
	if _, key, _ := mcpTool("t__a", &connectors.Action{Name: "a", Retryable: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"idempotency_key":{}}}`)}); key != "" {
		t.Errorf("a retryable action has key %q", key)
	}

	f, url := setup(t)
	f.mu.Lock()
	f.actions = append(f.actions, connectors.Action{Name: "pay",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"idempotency_key":{"type":"string"}},"required":["idempotency_key"]}`)})
	f.mu.Unlock()
	cs := connect(t, url+"/api/v1/agents/7/mcp")
	cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "My_Mail__pay",
		Arguments: json.RawMessage(`{"idempotency_key":"theirs","quiver_idempotency_key":"ours"}`)})
	if len(f.requests) != 1 || f.requests[0].Key != "ours" ||
		string(f.requests[0].Body) != `{"tool":11,"action":"pay","arguments":{"idempotency_key":"theirs"}}` {
		t.Fatalf("engine got %+v", f.requests)
	}
}
