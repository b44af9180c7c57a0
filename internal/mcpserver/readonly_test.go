package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
)

// asReadOnly1 stands in for the API's auth middleware: the caller is
// account 1 with a read-only key.
func asReadOnly1(c *gin.Context) {
	c.Request = c.Request.WithContext(accounts.WithPrincipal(c.Request.Context(), accounts.Principal{Account: 1, ReadOnly: true}))
}

// serveScoped serves a Server made from opts to account 1's full key under
// /api/v1 and to its read-only key under /ro/api/v1, and returns it and
// agent 7's endpoint URL for each.
func serveScoped(t *testing.T, opts Options, sdkOnly bool) (s *Server, full, ro string) {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	s = New(opts)
	s.sdkOnly = sdkOnly
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	s.Register(r.Group("/ro/api/v1", asReadOnly1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	return s, hs.URL + "/api/v1/agents/7/mcp", hs.URL + "/ro/api/v1/agents/7/mcp"
}

// refuseToReadOnly answers as the engine does a read-only key's call of an
// action other than read and peek, the fakes' read-only ones.
func refuseToReadOnly(ok func(calls.Request) (*calls.Response, error)) func(calls.Request) (*calls.Response, error) {
	return func(r calls.Request) (*calls.Response, error) {
		body := string(r.Body)
		if r.ReadOnly && !strings.Contains(body, `"action":"read"`) && !strings.Contains(body, `"action":"peek"`) {
			return nil, problem.New(problem.Forbidden, "This API key is read-only, and this action is not annotated read-only.")
		}
		return ok(r)
	}
}

func sortedNames(tools map[string]*mcp.Tool) []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestMCPReadOnlyKeyListsWhatItMayCall: a read-only key is listed the
// read-only actions alone, a full key every action as before; a hidden
// action called by name is the engine's to refuse (forbidden), through the
// fast path and through the SDK alike.
func TestMCPReadOnlyKeyListsWhatItMayCall(t *testing.T) {
	for _, sdkOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "sdk"}[sdkOnly], func(t *testing.T) {
			f, _ := setup(t)
			f.answer = refuseToReadOnly(f.answer)
			s, full, ro := serveScoped(t, Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Minute}, sdkOnly)
			list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			before := post(t, f, full, nil, list)

			roTools := listNames(t, connect(t, ro))
			if got, want := sortedNames(roTools), []string{"My_Mail_12__read", "My_Mail__read"}; !slices.Equal(got, want) {
				t.Fatalf("read-only key's list = %v, want %v", got, want)
			}
			if got, want := sortedNames(listNames(t, connect(t, full))), []string{"My_Mail_12__read", "My_Mail_12__send", "My_Mail__read", "My_Mail__send"}; !slices.Equal(got, want) {
				t.Fatalf("full key's list = %v, want %v", got, want)
			}
			if after := post(t, f, full, nil, list); after.body != before.body || before.status != 200 {
				t.Fatalf("full key's list changed once a read-only key listed:\n%d %s\n%s", before.status, before.body, after.body)
			}

			cs := connect(t, ro)
			ctx := context.Background()
			f.mu.Lock()
			f.requests = nil
			f.mu.Unlock()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__send", Arguments: map[string]any{"to": "a", keyArg: "k-ro"}})
			if err != nil {
				t.Fatalf("a hidden action: %v (want the engine's tool error)", err)
			}
			if env := envelopeOf(t, res); !res.IsError || env["error"] != "forbidden" {
				t.Fatalf("a hidden action: isError=%v %v", res.IsError, env)
			}
			f.mu.Lock()
			got := slices.Clone(f.requests)
			f.mu.Unlock()
			if len(got) != 1 || !got[0].ReadOnly || got[0].Key != "k-ro" {
				t.Fatalf("the engine got %+v", got)
			}
			if fast := s.fastCalls.Load(); (fast == 1) == sdkOnly {
				t.Fatalf("%d calls took the fast path", fast)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "My_Mail__read", Arguments: map[string]any{}}); err != nil || res.IsError {
				t.Fatalf("a read-only action: %v %+v", err, res)
			}
		})
	}
}

// TestMCPReadOnlyKeyRelist: a read-only key's call of an action the
// server just added re-lists as a full key's does; the new list shows a
// read-only key the new read-only action alone, a full key both.
func TestMCPReadOnlyKeyRelist(t *testing.T) {
	for _, sdkOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "sdk"}[sdkOnly], func(t *testing.T) {
			f, _ := setup(t)
			f.shared = true
			f.answer = refuseToReadOnly(f.answer)
			_, full, ro := serveScoped(t, Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Hour}, sdkOnly)
			if got := sortedNames(listNames(t, connect(t, ro))); len(got) != 2 {
				t.Fatalf("read-only key's list = %v", got)
			}
			yes := true
			actions := append(slices.Clone(f.actions),
				connectors.Action{Name: "peek", InputSchema: json.RawMessage(`{"type":"object"}`), Retryable: true, Annotations: &catalog.Annotations{ReadOnlyHint: &yes}},
				connectors.Action{Name: "poke", InputSchema: json.RawMessage(`{"type":"object"}`), Retryable: true})
			f.mu.Lock()
			f.actions = actions
			f.relist = func() ([]connectors.Action, error) { return actions, nil }
			f.mu.Unlock()

			if a := post(t, f, ro, nil, toolsCall("My_Mail__peek", `{}`)); len(a.engineBodies) != 1 || strings.Contains(a.body, `"isError":true`) {
				t.Fatalf("a new read-only action, read-only key: %d %s", a.status, a.body)
			}
			if got, want := sortedNames(listNames(t, connect(t, ro))), []string{"My_Mail_12__peek", "My_Mail_12__read", "My_Mail__peek", "My_Mail__read"}; !slices.Equal(got, want) {
				t.Fatalf("read-only key's list after the re-list = %v, want %v", got, want)
			}
			if a := post(t, f, ro, nil, toolsCall("My_Mail__poke", `{}`)); len(a.engineBodies) != 1 || !strings.Contains(a.body, `\"error\":\"forbidden\"`) {
				t.Fatalf("a new hidden action, read-only key: %d %s", a.status, a.body)
			}
			if got := sortedNames(listNames(t, connect(t, full))); len(got) != 8 {
				t.Fatalf("full key's list after the re-list = %v", got)
			}
		})
	}
}
