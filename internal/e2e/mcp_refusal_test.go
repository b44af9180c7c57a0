package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// mrfRefusal is how mrfGate answers a JSON-RPC method it refuses: with
// status, header and body, or, when rpcError is set, 200 and a JSON-RPC
// error answering the request's ID.
type mrfRefusal struct {
	status   int
	header   map[string]string
	body     string
	rpcError string
}

// mrfGate stands in front of an MCP server and answers the methods it is
// told to refuse at the HTTP layer, as a proxy, a rate limiter or a server
// that moved its endpoint would, passing everything else on.
type mrfGate struct {
	next http.Handler

	mu     sync.Mutex
	refuse map[string]mrfRefusal
}

func (g *mrfGate) set(method string, r mrfRefusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.status == 0 {
		delete(g.refuse, method)
		return
	}
	g.refuse[method] = r
}

func (g *mrfGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var peek struct {
			Method string
			ID     json.RawMessage
		}
		_ = json.Unmarshal(body, &peek)
		g.mu.Lock()
		refusal, ok := g.refuse[peek.Method]
		g.mu.Unlock()
		if ok && refusal.rpcError != "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}`, peek.ID, refusal.rpcError)
			return
		}
		if ok {
			for k, v := range refusal.header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(refusal.status)
			io.WriteString(w, refusal.body)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// TestMCPServerRefusals: an MCP server that refuses a request at the HTTP
// layer ran nothing, and what Quiver answers says whose refusal it was. A
// 429 is the server's rate limit (429 rate_limited with its Retry-After), a
// 405, or a JSON-RPC "method not found", refuses the request itself (502
// upstream_refused), never the caller's arguments; each releases the key.
// A listing the server fails, which a call needs when its cached actions
// were invalidated, ran nothing either: tool_unreachable, not an unknown
// outcome.
func TestMCPServerRefusals(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	var sends, lookups atomic.Int64
	up := mcp.NewServer(&mcp.Implementation{Name: "mailer", Version: "1"}, nil)
	object := json.RawMessage(`{"type":"object"}`)
	ok := func(n *atomic.Int64) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
		}
	}
	up.AddTool(&mcp.Tool{Name: "send", InputSchema: object}, ok(&sends)) // no annotations: not retryable
	up.AddTool(&mcp.Tool{Name: "lookup", InputSchema: object, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ok(&lookups))
	gate := &mrfGate{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil), refuse: map[string]mrfRefusal{}}
	hs := httptest.NewServer(gate)
	t.Cleanup(func() {
		hs.CloseClientConnections() // Quiver's pooled session holds a stream open
		hs.Close()
	})
	id := mqConnect(t, srv, "mailer", map[string]any{"url": hs.URL})
	args := map[string]any{"to": "a@b.c"}
	released := func(key string) {
		t.Helper()
		if r := srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil); r.Status != 404 {
			t.Errorf("key %s after a refusal: %d %s, want 404 (released)", key, r.Status, r.Body)
		}
	}

	t.Run("429 is the server's rate limit", func(t *testing.T) {
		gate.set("tools/call", mrfRefusal{status: 429, header: map[string]string{"Retry-After": "7", "Content-Type": "application/json"},
			body: `{"error":"rate_limited","message":"Slow down: ten calls a minute."}`})
		r := mqCall(srv, id, "send", args, "k-429")
		m := mqWant(t, r, 429, "rate_limited")
		if got := r.Header.Get("Retry-After"); got != "7" {
			t.Errorf("Retry-After %q, want the server's 7", got)
		}
		if msg, _ := m["message"].(string); !strings.Contains(msg, "Slow down: ten calls a minute.") || !strings.Contains(msg, "not Quiver's") {
			t.Errorf("message %q should carry the server's words and say whose limit it was", msg)
		}
		released("k-429")
	})

	t.Run("405 refuses the request, not its arguments", func(t *testing.T) {
		gate.set("tools/call", mrfRefusal{status: 405, header: map[string]string{"Allow": "GET"}, body: "Method Not Allowed"})
		m := mqWant(t, mqCall(srv, id, "send", args, "k-405"), 502, "upstream_refused")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "HTTP 405") {
			t.Errorf("message %q does not name the status", msg)
		}
		if m["fields"] != nil {
			t.Errorf("fields %v: the arguments were not what was refused", m["fields"])
		}
		released("k-405")
	})

	t.Run("a JSON-RPC refusal that is not about the arguments", func(t *testing.T) {
		gate.set("tools/call", mrfRefusal{status: 400, header: map[string]string{"Content-Type": "application/json"},
			body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: tools/call"}}`})
		m := mqWant(t, mqCall(srv, id, "send", args, "k-rpc"), 502, "upstream_refused")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "Method not found") {
			t.Errorf("message %q does not carry the server's refusal", msg)
		}
		released("k-rpc")
	})

	t.Run("over the agent MCP endpoint, the same code", func(t *testing.T) {
		gate.set("tools/call", mrfRefusal{status: 405, body: "Method Not Allowed"})
		_, endpoint := mqaAgent(t, srv, id)
		cs := mqaSession(t, srv, endpoint)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mailer__send",
			Arguments: map[string]any{"to": "a@b.c", "idempotency_key": "k-agent"}})
		if err != nil {
			t.Fatal(err)
		}
		if env := mqEnvelope(t, res); env["error"] != "upstream_refused" {
			t.Errorf("tool error %v, want upstream_refused", env)
		}
		released("k-agent")
	})

	if n := sends.Load(); n != 0 {
		t.Fatalf("send ran %d times behind refusals", n)
	}
	gate.set("tools/call", mrfRefusal{})
	if r := mqCall(srv, id, "send", args, "k-405"); r.Status != 200 || sends.Load() != 1 {
		t.Fatalf("the released key once the server takes calls: %d %s, %d sends", r.Status, r.Body, sends.Load())
	}

	t.Run("a listing that fails ran nothing", func(t *testing.T) {
		actions := func() *testserver.Response {
			return srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", id), nil)
		}
		// The server fails tools/list, then says its list changed: the
		// cached actions go, and the next call must list them again.
		gate.set("tools/list", mrfRefusal{status: 500, body: "boom"})
		up.AddTool(&mcp.Tool{Name: "extra", InputSchema: object}, ok(new(atomic.Int64)))
		testserver.Eventually(t, 5*time.Second, "the cached actions invalidated", func() bool { return actions().Status != 200 })
		mqWant(t, actions(), 502, "tool_unreachable")
		mqWant(t, mqCall(srv, id, "lookup", nil, ""), 502, "tool_unreachable")
		mqWant(t, mqCall(srv, id, "send", args, "k-list"), 502, "tool_unreachable")
		released("k-list")

		// A JSON-RPC error that does not say the listing went unprocessed
		// is the server failing, not refusing: tool_unreachable too, which
		// the SDKs retry, and its message says what the server said.
		gate.set("tools/list", mrfRefusal{status: 200, rpcError: `{"code":-32603,"message":"backend database down"}`})
		m := mqWant(t, actions(), 502, "tool_unreachable")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "could not be listed") || !strings.Contains(msg, "backend database down") {
			t.Errorf("message %q", msg)
		}
		mqWant(t, mqCall(srv, id, "lookup", nil, ""), 502, "tool_unreachable")

		gate.set("tools/list", mrfRefusal{status: 429, header: map[string]string{"Retry-After": "3"}})
		r := actions()
		mqWant(t, r, 429, "rate_limited")
		if got := r.Header.Get("Retry-After"); got != "3" {
			t.Errorf("Retry-After %q, want the server's 3", got)
		}
		gate.set("tools/list", mrfRefusal{status: 405, body: "Method Not Allowed"})
		mqWant(t, actions(), 502, "upstream_refused")
		mqWant(t, mqCall(srv, id, "send", args, "k-list"), 502, "upstream_refused")
		released("k-list")

		gate.set("tools/list", mrfRefusal{})
		if a := mqActions(t, srv, id); a["extra"] == nil {
			t.Errorf("actions once the server lists again: %v, want extra among them", a)
		}
		if n := lookups.Load() + sends.Load(); n != 1 {
			t.Errorf("%d tool runs behind failed listings, want only the one send before", n)
		}
	})
}

// TestMCPLegacySSEServer: a server on MCP's older HTTP+SSE transport, which
// Quiver does not speak, is named as such when configured, rather than
// taken for a wrong URL.
func TestMCPLegacySSEServer(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	legacy := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	}, nil))
	t.Cleanup(func() {
		legacy.CloseClientConnections()
		legacy.Close()
	})
	_, r := mqConfigure(t, srv, "legacy", map[string]any{"url": legacy.URL + "/sse"})
	m := mqWant(t, r, 422, "validation_error")
	if f, _ := m["fields"].(map[string]any); !strings.Contains(fmt.Sprint(f["url"]), "older HTTP+SSE transport") {
		t.Errorf("fields %v, want url to name the older transport", m["fields"])
	}
}

// mssTSServer is a streamable-HTTP MCP server that, like the TypeScript
// SDK's example server and the many written from it, answers a request
// carrying a session ID it does not know with 400 "No valid session ID
// provided" rather than the spec's 404. restart forgets every session.
type mssTSServer struct {
	up *mcp.Server

	mu      sync.Mutex
	sdk     http.Handler
	known   map[string]bool
	refused int
}

func (s *mssTSServer) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.up }, nil)
	s.known = map[string]bool{}
}

func (s *mssTSServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sdk := s.sdk
	id := r.Header.Get("Mcp-Session-Id")
	if id != "" && !s.known[id] {
		s.refused++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		return
	}
	s.mu.Unlock()
	sdk.ServeHTTP(&mssRecorder{ResponseWriter: w, s: s}, r)
}

// mssRecorder notes the session IDs the SDK hands out.
type mssRecorder struct {
	http.ResponseWriter
	s *mssTSServer
}

func (w *mssRecorder) note() {
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		w.s.mu.Lock()
		w.s.known[id] = true
		w.s.mu.Unlock()
	}
}

func (w *mssRecorder) WriteHeader(code int) {
	w.note()
	w.ResponseWriter.WriteHeader(code)
}

func (w *mssRecorder) Write(b []byte) (int, error) {
	w.note()
	return w.ResponseWriter.Write(b)
}

func (w *mssRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestMCPSessionLostAnswered400: after such a server restarts, the next call
// is refused with that 400 on the session Quiver holds. Nothing ran, so
// Quiver opens a new session and sends the call again, as it does for the
// spec's 404: the caller gets the tool's answer, which ran once. Before, the
// session was kept and every call answered 502 upstream_refused.
func TestMCPSessionLostAnswered400(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	var sends atomic.Int64
	up := mcp.NewServer(&mcp.Implementation{Name: "ts-style", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "send", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sends.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"sent":true}`}}}, nil
		})
	ts := &mssTSServer{up: up}
	ts.restart()
	hs := httptest.NewServer(ts)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	id := mqConnect(t, srv, "ts-style", map[string]any{"url": hs.URL})
	if r := mqCall(srv, id, "send", nil, "k-1"); r.Status != 200 {
		t.Fatalf("first call: %d %s", r.Status, r.Body)
	}
	ts.restart()
	for i, key := range []string{"k-2", "k-3"} {
		if r := mqCall(srv, id, "send", nil, key); r.Status != 200 {
			t.Fatalf("call %d after the restart: %d %s", i+1, r.Status, r.Body)
		}
	}
	if n := sends.Load(); n != 3 {
		t.Errorf("send ran %d times, want 3", n)
	}
	ts.mu.Lock()
	refused := ts.refused
	ts.mu.Unlock()
	if refused == 0 {
		t.Error("the server never refused the old session: the test did not test anything")
	}
}
