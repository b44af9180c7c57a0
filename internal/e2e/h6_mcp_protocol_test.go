package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// An agent's MCP endpoint as a strict client of the MCP specification
// (streamable HTTP, lifecycle, JSON-RPC) exercises it, for each protocol
// version the Go SDK serves.

// h6Agent creates an agent with tools and returns its endpoint's path.
func h6Agent(t *testing.T, srv *testserver.Server, tools ...int64) string {
	t.Helper()
	if tools == nil {
		tools = []int64{}
	}
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "h6", "tools": tools})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	return fmt.Sprintf("/api/v1/agents/%d/mcp", int64(r.JSON()["id"].(float64)))
}

// h6Meta is the _meta a 2026-07-28 client sends with every request.
const h6Meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// h6Post posts one JSON-RPC body under protocol version ("" sends no
// MCP-Protocol-Version header), with the Accept header the spec asks for,
// and, under 2026-07-28, the Mcp-Method and Mcp-Name headers.
func h6Post(t *testing.T, srv *testserver.Server, path, version, method, name, body string, headers ...string) *testserver.Response {
	t.Helper()
	h := append([]string{"Accept", "application/json, text/event-stream"}, headers...)
	if version != "" {
		h = append(h, "MCP-Protocol-Version", version)
	}
	if version == "2026-07-28" {
		h = append(h, "Mcp-Method", method)
		if name != "" {
			h = append(h, "Mcp-Name", name)
		}
	}
	return srv.Do("POST", path, body, h...)
}

// h6RPC decodes a JSON-RPC answer.
type h6RPC struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func h6Decode(t *testing.T, r *testserver.Response) h6RPC {
	t.Helper()
	var m h6RPC
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%d %s: not a JSON-RPC answer: %v", r.Status, r.Body, err)
	}
	return m
}

// TestH6MCPUnofferedMethods: the agent's server declares the tools
// capability alone, so a method of a capability it does not declare
// (resources, prompts, completions, logging) is -32601 method not found,
// as MCP's lifecycle asks, under every protocol version; it used to answer
// empty resource and prompt lists, "not found" -32602 for a read, and {}
// for logging/setLevel. subscriptions/listen, a 2026-07-28 method, does
// not exist under the versions before it (it used to open an event
// stream). What is offered keeps answering.
func TestH6MCPUnofferedMethods(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	path := h6Agent(t, srv)
	type req struct{ method, name, params string }
	unoffered := []req{
		{"resources/list", "", `{}`},
		{"resources/templates/list", "", `{}`},
		{"resources/read", "file:///x", `{"uri":"file:///x"}`},
		{"resources/subscribe", "", `{"uri":"file:///x"}`},
		{"resources/unsubscribe", "", `{"uri":"file:///x"}`},
		{"prompts/list", "", `{}`},
		{"prompts/get", "p", `{"name":"p"}`},
		{"completion/complete", "", `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}`},
		{"logging/setLevel", "", `{"level":"debug"}`},
	}
	for _, version := range []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		methods := unoffered
		if version != "2026-07-28" {
			methods = append(methods, req{"subscriptions/listen", "", `{"notifications":{"toolsListChanged":true}}`})
		}
		for _, m := range methods {
			params := m.params
			if version == "2026-07-28" {
				params = strings.TrimSuffix(params, "}")
				if params != "{" {
					params += ","
				}
				params += h6Meta + "}"
			}
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, m.method, params)
			r := h6Post(t, srv, path, version, m.method, m.name, body)
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s under %q: %d %s %s, want a JSON answer", m.method, version, r.Status, ct, r.Body)
				continue
			}
			got := h6Decode(t, r)
			status := 200 // under 2026-07-28, -32601 goes with HTTP 404
			if version == "2026-07-28" {
				status = 404
			}
			if r.Status != status || got.Error == nil || got.Error.Code != -32601 || string(got.ID) != "7" {
				t.Errorf("%s under %q: %d %s, want %d, -32601 method not found for ID 7", m.method, version, r.Status, r.Body, status)
			}
		}
		// What the server offers still answers.
		offered := map[string]string{"tools/list": `{}`}
		if version != "2026-07-28" {
			offered["ping"] = `{}`
			offered["initialize"] = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h6","version":"1"}}`
		} else {
			offered["server/discover"] = `{}`
		}
		for method, params := range offered {
			if version == "2026-07-28" {
				params = "{" + h6Meta + "}"
			}
			r := h6Post(t, srv, path, version, method, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":%q,"params":%s}`, method, params))
			got := h6Decode(t, r)
			if r.Status != 200 || got.Error != nil || got.Result == nil {
				t.Errorf("%s under %q: %d %s, want a result", method, version, r.Status, r.Body)
				continue
			}
			if caps, ok := got.Result["capabilities"].(map[string]any); ok && (len(caps) != 1 || caps["tools"] == nil) {
				t.Errorf("%s under %q: capabilities %v, want tools alone", method, version, caps)
			}
		}
	}

	// In a batch (2025-03-26 has them) each is answered alone.
	r := h6Post(t, srv, path, "2025-03-26", "", "",
		`[{"jsonrpc":"2.0","id":1,"method":"prompts/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	var answers []h6RPC
	if err := json.Unmarshal(r.Body, &answers); err != nil || len(answers) != 2 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	for _, a := range answers {
		switch string(a.ID) {
		case "1":
			if a.Error == nil || a.Error.Code != -32601 {
				t.Errorf("batch's prompts/list: %s", r.Body)
			}
		case "2":
			if a.Error != nil || a.Result == nil {
				t.Errorf("batch's ping: %s", r.Body)
			}
		default:
			t.Errorf("batch: %s", r.Body)
		}
	}
}

// TestH6MCPBatchRefusedAsJSONRPC: protocol 2025-06-18 took batches out of
// MCP, and the SDK refuses one sent under it (or a later version) with a
// plain-text 400. A JSON-RPC client reads the answer to what it sent as
// JSON-RPC, and the endpoint's documented answer to a message that is not
// a valid request is -32600 with a null ID: so it is now, and nothing of
// the batch runs. Under the versions before, a batch is answered whole.
func TestH6MCPBatchRefusedAsJSONRPC(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	path := h6Agent(t, srv)
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		r := h6Post(t, srv, path, version, "ping", "", batch)
		if ct := r.Header.Get("Content-Type"); r.Status != 400 || ct != "application/json" {
			t.Errorf("batch under %s: %d %s %s, want 400 application/json", version, r.Status, ct, r.Body)
			continue
		}
		got := h6Decode(t, r)
		if got.Error == nil || got.Error.Code != -32600 || string(got.ID) != "null" || !strings.Contains(got.Error.Message, version) {
			t.Errorf("batch under %s: %s, want -32600 with a null ID naming the version", version, r.Body)
		}
	}
	for _, version := range []string{"", "2024-11-05", "2025-03-26"} {
		r := h6Post(t, srv, path, version, "", "", batch)
		var answers []h6RPC
		if err := json.Unmarshal(r.Body, &answers); r.Status != 200 || err != nil || len(answers) != 2 {
			t.Errorf("batch under %q: %d %s, want both answered", version, r.Status, r.Body)
		}
	}
}

// TestH6MCPUnknownNotificationDropped: a notification of a method the
// server does not know gets no answer (JSON-RPC: a notification is never
// answered; MCP's transport: 202 Accepted) under every protocol version.
// Under 2026-07-28 the SDK refused it with a plain-text 400.
func TestH6MCPUnknownNotificationDropped(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	path := h6Agent(t, srv)
	for _, version := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		for _, body := range []string{
			`{"jsonrpc":"2.0","method":"notifications/h6"}`,
			`{"jsonrpc":"2.0","method":"notifications/h6","params":{"_meta":{}}}`,
			`{"jsonrpc":"2.0","method":"h6/later"}`,
		} {
			var method struct{ Method string }
			_ = json.Unmarshal([]byte(body), &method)
			r := h6Post(t, srv, path, version, method.Method, "", body)
			if r.Status != 202 || len(r.Body) != 0 {
				t.Errorf("%s under %q: %d %s, want 202 and no body", body, version, r.Status, r.Body)
			}
		}
	}
}
