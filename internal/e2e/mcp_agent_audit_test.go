package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// The audit of /api/v1/agents/{id}/mcp: naming, the idempotency key
// argument, duplicate members, error order and details, and the tool list
// cache, each through the HTTP API with the Go SDK's client.

// mqaUpstream is an MCP server whose tools record the raw arguments they
// were called with and answer {"ran": tool}.
type mqaUpstream struct {
	URL  string
	mu   sync.Mutex
	runs []mqaRun
}

type mqaRun struct {
	tool string
	args string
}

// mqaStart serves tools (nil annotations: not retryable) statelessly.
func mqaStart(t testing.TB, tools ...*mcp.Tool) *mqaUpstream {
	t.Helper()
	u := &mqaUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "audit-upstream", Version: "1"}, nil)
	for _, tool := range tools {
		if tool.InputSchema == nil {
			tool.InputSchema = map[string]any{"type": "object"}
		}
		name := tool.Name
		srv.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			u.runs = append(u.runs, mqaRun{tool: name, args: string(req.Params.Arguments)})
			u.mu.Unlock()
			b, _ := json.Marshal(map[string]string{"ran": name})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	u.URL = hs.URL
	return u
}

func (u *mqaUpstream) ran() []mqaRun {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.runs)
}

func mqaReadOnly(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
}

// mqaAgent creates an agent with tools and returns its MCP endpoint.
func mqaAgent(t testing.TB, srv *testserver.Server, tools ...int64) (int64, string) {
	t.Helper()
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "audit", "tools": tools})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	return id, fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, id)
}

func mqaSession(t testing.TB, srv *testserver.Server, endpoint string) *mcp.ClientSession {
	t.Helper()
	cs, err := mqSession(t, endpoint, srv.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func mqaSorted(tools map[string]*mcp.Tool) []string {
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestMCPAuditNamesIndependentOfAttachOrder: every configured tool attached
// is listed whatever its name, and a name means the same tool in any
// attach order.
func TestMCPAuditNamesIndependentOfAttachOrder(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	ups := map[string]*mqaUpstream{}
	connect := func(label, name string, up *mqaUpstream) int64 {
		ups[label] = up
		return mqConnect(t, srv, name, map[string]any{"url": up.URL})
	}
	up1 := connect("up1", "up", mqaStart(t, mqaReadOnly("read")))
	up2 := connect("up2", "up", mqaStart(t, mqaReadOnly("read")))
	// A literal name equal to the suffix the second "up" would get.
	upLit := connect("uplit", fmt.Sprintf("up_%d", up2), mqaStart(t, mqaReadOnly("read")))
	// Sanitized the same.
	fooSp := connect("foosp", "foo bar", mqaStart(t, mqaReadOnly("read")))
	fooUs := connect("foous", "foo_bar", mqaStart(t, mqaReadOnly("read")))
	// A tool name with "__" against an action name with "__".
	cTool := connect("c", "c", mqaStart(t, mqaReadOnly("read__count")))
	cRead := connect("cread", "c__read", mqaStart(t, mqaReadOnly("count")))
	all := []int64{up1, up2, upLit, fooSp, fooUs, cTool, cRead}
	labels := map[int64]string{up1: "up1", up2: "up2", upLit: "uplit", fooSp: "foosp", fooUs: "foous", cTool: "c", cRead: "cread"}

	orders := [][]int64{all, {upLit, up2, up1, cRead, cTool, fooUs, fooSp}, {cRead, up2, fooUs, up1, upLit, fooSp, cTool}}
	var first map[string]string // name → label of the tool it ran
	for i, order := range orders {
		_, endpoint := mqaAgent(t, srv, order...)
		cs := mqaSession(t, srv, endpoint)
		tools := mqToolNames(t, cs)
		if len(tools) != len(all) {
			t.Fatalf("order %d: %d tools listed, want %d: %v", i, len(tools), len(all), mqaSorted(tools))
		}
		got := map[string]string{}
		for _, name := range mqaSorted(tools) {
			if len(name) > 128 {
				t.Errorf("name %q is over 128 characters", name)
			}
			before := map[string]int{}
			for l, up := range ups {
				before[l] = len(up.ran())
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("order %d: %s: %v %+v", i, name, err, res)
			}
			for l, up := range ups {
				if len(up.ran()) == before[l]+1 {
					got[name] = l
				}
			}
		}
		ranBy := map[string]bool{}
		for _, l := range got {
			ranBy[l] = true
		}
		if len(ranBy) != len(all) {
			t.Fatalf("order %d: the names ran %d distinct tools, want %d: %v", i, len(ranBy), len(all), got)
		}
		if i == 0 {
			first = got
			t.Logf("names: %v", got)
			continue
		}
		for name, l := range got {
			if first[name] != l {
				t.Errorf("order %d: %s runs %s, in the first order %s", i, name, l, first[name])
			}
		}
	}
	// The lowest ID keeps the plain name; the others get their ID.
	if first["up__read"] != "up1" || first[fmt.Sprintf("up_%d__read", up2)] != "uplit" || first["foo_bar__read"] != "foosp" ||
		first[fmt.Sprintf("foo_bar_%d__read", fooUs)] != "foous" || first["c__read__count"] != "c" || first["c_read__count"] != "cread" {
		t.Errorf("names: %v (IDs %v)", first, labels)
	}
}

// TestMCPAuditUpstreamIdempotencyKey: an action whose own schema has an
// idempotency_key argument gets Quiver's key under another name, and its
// own argument reaches it untouched.
func TestMCPAuditUpstreamIdempotencyKey(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	schema := map[string]any{"type": "object", "required": []string{"idempotency_key", "amount"}, "properties": map[string]any{
		"idempotency_key": map[string]any{"type": "string", "description": "The payment provider's own key."},
		"amount":          map[string]any{"type": "integer"},
	}}
	up := mqaStart(t, &mcp.Tool{Name: "pay", InputSchema: schema}, &mcp.Tool{Name: "send"})
	tool := mqConnect(t, srv, "pay", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	cs := mqaSession(t, srv, endpoint)
	tools := mqToolNames(t, cs)

	pay, _ := json.Marshal(tools["pay__pay"].InputSchema)
	var ps struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(pay, &ps); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ps.Required, "quiver_idempotency_key") || !slices.Contains(ps.Required, "idempotency_key") {
		t.Fatalf("pay required = %v", ps.Required)
	}
	if ps.Properties["idempotency_key"]["description"] != "The payment provider's own key." {
		t.Errorf("the upstream's own idempotency_key was changed: %v", ps.Properties["idempotency_key"])
	}
	if d, _ := ps.Properties["quiver_idempotency_key"]["description"].(string); !strings.Contains(d, "quiver_idempotency_key") {
		t.Errorf("the key argument's description does not name it: %q", d)
	}
	if !strings.Contains(tools["pay__pay"].Description, "quiver_idempotency_key") {
		t.Errorf("description: %q", tools["pay__pay"].Description)
	}
	// Every other action keeps idempotency_key.
	send, _ := json.Marshal(tools["pay__send"].InputSchema)
	if !bytes.Contains(send, []byte(`"idempotency_key"`)) || bytes.Contains(send, []byte("quiver_idempotency_key")) {
		t.Errorf("send schema: %s", send)
	}

	args := map[string]any{"idempotency_key": "provider-1", "amount": 5, "quiver_idempotency_key": "q-pay-1"}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pay__pay", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("pay: %v %+v", err, res)
	}
	runs := up.ran()
	if len(runs) != 1 || runs[0].tool != "pay" {
		t.Fatalf("runs: %v", runs)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(runs[0].args), &sent); err != nil || sent["idempotency_key"] != "provider-1" ||
		sent["amount"] != float64(5) || len(sent) != 2 {
		t.Fatalf("the upstream got %s", runs[0].args)
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/q-pay-1", nil); r.Status != 200 {
		t.Fatalf("Quiver's key was not used: %d %s", r.Status, r.Body)
	}
	again, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pay__pay", Arguments: args})
	if err != nil || again.Meta["quiver/replayed"] != true || len(up.ran()) != 1 {
		t.Fatalf("retry: %v %+v, %d runs", err, again, len(up.ran()))
	}
	// Without Quiver's key it is refused; the upstream's key is not it.
	res, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pay__pay", Arguments: map[string]any{"idempotency_key": "provider-2", "amount": 1}})
	if env := mqEnvelope(t, res); env["error"] != "idempotency_key_required" || !strings.Contains(env["message"].(string), "quiver_idempotency_key") {
		t.Fatalf("without quiver_idempotency_key: %v", env)
	}
	if len(up.ran()) != 1 {
		t.Fatal("ran without Quiver's key")
	}
}

// TestMCPAuditDuplicateMembers: duplicate members in the arguments are
// invalid_json, as a duplicate key in a REST body is, whatever the action.
func TestMCPAuditDuplicateMembers(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	up := mqaStart(t, &mcp.Tool{Name: "send"}, mqaReadOnly("read"))
	tool := mqConnect(t, srv, "dup", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	cs := mqaSession(t, srv, endpoint)
	for _, c := range []struct{ name, args string }{
		{"dup__send", `{"idempotency_key":"dup1","idempotency_key":"dup2","x":1}`},
		{"dup__send", `{"x":1,"x":2,"idempotency_key":"dup3"}`},
		{"dup__send", `{"idempotency_key":"dup4","x":{"y":1,"y":2}}`},
		{"dup__read", `{"x":1,"x":2}`},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: json.RawMessage(c.args)})
		if err != nil {
			t.Fatal(err)
		}
		if env := mqEnvelope(t, res); env["error"] != "invalid_json" {
			t.Errorf("%s %s: %v", c.name, c.args, env)
		}
	}
	if runs := up.ran(); len(runs) != 0 {
		t.Fatalf("ran: %v", runs)
	}
	for _, k := range []string{"dup1", "dup2", "dup3", "dup4"} {
		if r := srv.Do("GET", "/api/v1/idempotency-keys/"+k, nil); r.Status != 404 {
			t.Errorf("key %s: %d %s", k, r.Status, r.Body)
		}
	}
	// REST says the same of the same body.
	r := srv.Do("POST", mqCallPath, fmt.Sprintf(`{"tool":%d,"action":"send","arguments":{"x":1,"x":2}}`, tool), "Idempotency-Key", "dup5")
	mqWant(t, r, 400, "invalid_json")
}

// TestMCPAuditErrorOrder: over MCP a call is refused with the code REST
// gives the same call.
func TestMCPAuditErrorOrder(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	up := mqaStart(t, &mcp.Tool{Name: "send"}, mqaReadOnly("read"))
	tool := mqConnect(t, srv, "order", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	ro, _, err := srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	roSession, err := mqSession(t, endpoint, ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := mqaSession(t, srv, endpoint)
	rest := func(key string, args string, idem string) string {
		var h []string
		if idem != "" {
			h = []string{"Idempotency-Key", idem}
		}
		r := testserver.Do(t, srv.URL, key, "POST", mqCallPath, fmt.Sprintf(`{"tool":%d,"action":"send","arguments":%s}`, tool, args), h...)
		code, _ := r.JSON()["error"].(string)
		return code
	}
	over := func(cs *mcp.ClientSession, args string) string {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "order__send", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return mqEnvelope(t, res)["error"].(string)
	}
	for _, c := range []struct {
		name    string
		key     string
		cs      *mcp.ClientSession
		mcpArgs string
		args    string
		idem    string
		want    string
	}{
		{"read-only key, no key", ro, roSession, `{"to":"a"}`, `{"to":"a"}`, "", "forbidden"},
		{"read-only key, a key", ro, roSession, `{"to":"a","idempotency_key":"ro-1"}`, `{"to":"a"}`, "ro-1", "forbidden"},
		{"no key", srv.Key, cs, `{"to":"a"}`, `{"to":"a"}`, "", "idempotency_key_required"},
	} {
		restCode := rest(c.key, c.args, c.idem)
		if got := over(c.cs, c.mcpArgs); got != c.want || restCode != c.want {
			t.Errorf("%s: MCP %s, REST %s, want %s", c.name, got, restCode, c.want)
		}
	}
	// Arguments that are not an object fail CallToolRequest's schema: over
	// MCP a protocol error (invalid params) before anything else, where
	// REST, whose body has no such schema, asks for the key first.
	for _, args := range []string{`[1]`, `"x"`} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "order__send", Arguments: json.RawMessage(args)})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("arguments %s over MCP: %v, want invalid params", args, err)
		}
		if got := rest(srv.Key, args, ""); got != "idempotency_key_required" {
			t.Errorf("arguments %s over REST: %s", args, got)
		}
	}
	if runs := up.ran(); len(runs) != 0 {
		t.Fatalf("ran: %v", runs)
	}
}

// TestMCPAuditRetryAfter: rate_limited carries retry_after, as REST carries
// Retry-After.
func TestMCPAuditRetryAfter(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true,
		Env: map[string]string{"QUIVER_CALL_RATE_LIMIT": "0.2", "QUIVER_CALL_RATE_BURST": "1"}})
	up := mqaStart(t, mqaReadOnly("read"))
	tool := mqConnect(t, srv, "rl", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	cs := mqaSession(t, srv, endpoint)
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rl__read"}); err != nil || res.IsError {
		t.Fatalf("first call: %v %+v", err, res)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rl__read"})
	if err != nil {
		t.Fatal(err)
	}
	env := mqEnvelope(t, res)
	if ra, _ := env["retry_after"].(float64); env["error"] != "rate_limited" || ra < 1 {
		t.Fatalf("rate limited: %v", env)
	}
	r := mqCall(srv, tool, "read", nil, "")
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("REST: %d %v", r.Status, r.Header)
	}
}

// TestMCPAuditBodyLimit: a body over QUIVER_BODY_LIMIT is the API's 413
// envelope, with or without a Content-Length.
func TestMCPAuditBodyLimit(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_BODY_LIMIT": "2048"}})
	up := mqaStart(t, mqaReadOnly("read"))
	tool := mqConnect(t, srv, "big", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big__read","arguments":{"q":"` + strings.Repeat("x", 4096) + `"}}}`
	for _, chunked := range []bool{false, true} {
		var rd io.Reader = strings.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // no Content-Length
		}
		req, _ := http.NewRequest("POST", endpoint, rd)
		req.Header.Set("X-API-KEY", srv.Key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var env map[string]any
		_ = json.Unmarshal(b, &env)
		if resp.StatusCode != 413 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || env["error"] != "payload_too_large" {
			t.Errorf("chunked %v: %d %q %s", chunked, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	if len(up.ran()) != 0 {
		t.Fatal("an oversized call ran")
	}
}
