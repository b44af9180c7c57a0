package mcpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
)

// pair serves the same fakes twice: through the fast path, and through the
// SDK alone.
func pair(t *testing.T) (f *fakes, fast *Server, fastURL, sdkURL string) {
	t.Helper()
	f, _ = setup(t)
	opts := Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: time.Minute}
	fast, fastURL = serveAgent7(t, opts, false)
	_, sdkURL = serveAgent7(t, opts, true)
	return f, fast, fastURL, sdkURL
}

// serveAgent7 serves a Server made from opts as account 1's, through the
// fast path or through the SDK alone, and returns it and agent 7's
// endpoint URL.
func serveAgent7(t *testing.T, opts Options, sdkOnly bool) (*Server, string) {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	s := New(opts)
	s.sdkOnly = sdkOnly
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	return s, hs.URL + "/api/v1/agents/7/mcp"
}

// toolsCall is a tools/call of name with args (JSON), as request 1.
func toolsCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

type answer struct {
	status                    int
	contentType, cacheControl string
	body                      string
	engineBodies, engineKeys  []string
}

func post(t *testing.T, f *fakes, url string, header map[string]string, body string) answer {
	t.Helper()
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
		cacheControl: resp.Header.Get("Cache-Control"), body: string(b)}
	f.mu.Lock()
	for _, r := range f.requests {
		a.engineBodies = append(a.engineBodies, string(r.Body))
		a.engineKeys = append(a.engineKeys, r.Key)
	}
	f.mu.Unlock()
	return a
}

const newMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

var newHeaders = map[string]string{headerProtocol: protocolStateless, headerMethod: "tools/call", headerName: "My_Mail__read"}

func withName(h map[string]string, name string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	out[headerName] = name
	return out
}

// TestMCPFastPathMatchesSDK sends each tools/call to the fast path and to
// the SDK and compares the answers byte for byte, and what reached the
// engine; requests the fast path must not take go to the SDK on both sides.
func TestMCPFastPathMatchesSDK(t *testing.T) {
	f, fast, fastURL, sdkURL := pair(t)
	answers := map[string]func(calls.Request) (*calls.Response, error){
		"object": func(calls.Request) (*calls.Response, error) {
			return &calls.Response{Status: 200, Body: []byte(`{"call_id":"c_1","tool":11,"action":"read","is_error":false,"result":{"n":12345678901234567890,"h":"<a&b>"},"duration_ms":1}`)}, nil
		},
		"replayed tool error": func(calls.Request) (*calls.Response, error) {
			return &calls.Response{Status: 200, Replayed: true, Body: []byte(`{"call_id":"c_2","is_error":true,"result":{"error":"boom"}}`)}, nil
		},
		"array": func(calls.Request) (*calls.Response, error) {
			return &calls.Response{Status: 200, Body: []byte(`{"call_id":"c_3","is_error":false,"result":[{"type":"text","text":"é ✓"}]}`)}, nil
		},
		"odd body": func(calls.Request) (*calls.Response, error) {
			return &calls.Response{Status: 200, Body: []byte(`not json`)}, nil
		},
		"refused": func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.InvalidArguments, Message: "bad <q>", Fields: map[string]string{"q": "must be a string"}}
		},
		"in progress": func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.RequestInProgress, Message: "running", RetryAfter: 2}
		},
		"rate limited": func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.RateLimited, Message: "slow down", RetryAfter: 3}
		},
		"key required": func(calls.Request) (*calls.Response, error) {
			return nil, &problem.Error{Code: problem.IdempotencyKeyRequired, Message: "header"}
		},
		"internal": func(calls.Request) (*calls.Response, error) { return nil, errors.New("disk on fire") },
	}
	taken := []struct {
		name   string
		header map[string]string
		body   string
	}{
		{"legacy, no version", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"x"}}}`},
		{"legacy 2025-11-25, string id, no arguments", map[string]string{headerProtocol: "2025-11-25"}, ` {"method":"tools/call","params":{"name":"My_Mail__read"},"id":"a-1","jsonrpc":"2.0"}` + "\n"},
		{"string id that HTML escaping would change", nil, `{"jsonrpc":"2.0","id":"<a&b>","method":"tools/call","params":{"name":"My_Mail__read","arguments":{}}}`},
		{"legacy 2025-06-18, null arguments, negative id", map[string]string{headerProtocol: "2025-06-18"}, `{"jsonrpc":"2.0","id":-42,"method":"tools/call","params":{"name":"My_Mail__read","arguments":null}}`},
		{"legacy with a progress token", map[string]string{headerProtocol: "2025-11-25"}, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"My_Mail__read","arguments":{}}}`},
		{"2026-07-28", newHeaders, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"x"},` + newMeta + `}}`},
		{"2026-07-28 without clientInfo", newHeaders, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}}`},
		{"2026-07-28 keyed", withName(newHeaders, "My_Mail__send"), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"<a@b.c>","n":1.50,"idempotency_key":"k-1"},` + newMeta + `}}`},
		{"2026-07-28 keyed without a key", withName(newHeaders, "My_Mail__send"), `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"a"},` + newMeta + `}}`},
		{"legacy keyed, bad key", nil, `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"a","idempotency_key":" k"}}}`},
		{"keyed, key twice", nil, `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"idempotency_key":"k1","to":"a","idempotency_key":"k2"}}}`},
		{"keyed, a member twice", nil, `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"a", "to":"b" ,"idempotency_key":"k"}}}`},
		{"keyed, escaped key", nil, `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"a","\u0069dempotency_key":"k\u0021"}}}`},
	}
	for an, fn := range answers {
		f.mu.Lock()
		f.answer = fn
		f.mu.Unlock()
		for _, c := range taken {
			before := fast.fastCalls.Load()
			got := post(t, f, fastURL, c.header, c.body)
			if fast.fastCalls.Load() != before+1 {
				t.Errorf("%s, %s: the fast path did not take it", an, c.name)
			}
			want := post(t, f, sdkURL, c.header, c.body)
			compare(t, an+", "+c.name, got, want)
		}
	}

	passed := []struct {
		name   string
		header map[string]string
		body   string
	}{
		{"unknown tool", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}`},
		{"unknown tool, 2026-07-28", withName(newHeaders, "nope"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope",` + newMeta + `}}`},
		{"no clientCapabilities", newHeaders, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"bad clientInfo", newHeaders, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":3,"io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"Mcp-Name mismatch", withName(newHeaders, "My_Mail__send"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read",` + newMeta + `}}`},
		{"no Mcp-Method", map[string]string{headerProtocol: protocolStateless, headerName: "My_Mail__read"}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read",` + newMeta + `}}`},
		{"2026-07-28 header, no _meta", newHeaders, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"_meta version, legacy header", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read",` + newMeta + `}}`},
		{"unsupported version", map[string]string{headerProtocol: "2099-01-01"}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"fractional id", nil, `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"escaped id", nil, `{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"notification", nil, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"batch", nil, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}]`},
		{"tools/list", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"extra member", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"},"x":1}`},
		{"extra param", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","requestState":"s"}}`},
		{"trailing data", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}} x`},
		{"bad JSON", nil, `{"jsonrpc":"2.0","id":1,`},
		{"wrong version tag", nil, `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"Accept JSON only", map[string]string{"Accept": "application/json"}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}`},
		{"a progress token beyond float64", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"a","idempotency_key":"k"},"_meta":{"progressToken":1e400}}}`},
		{"2026-07-28, a _meta number beyond float64", newHeaders, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x":{"y":[-1e999]}}}}`},
		{"array arguments", nil, `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"My_Mail__send","arguments":[1]}}`},
		{"too deep", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}}`},
	}
	f.mu.Lock()
	f.answer = answers["object"]
	f.mu.Unlock()
	for _, c := range passed {
		before := fast.fastCalls.Load()
		got := post(t, f, fastURL, c.header, c.body)
		if fast.fastCalls.Load() != before {
			t.Errorf("%s: the fast path took it", c.name)
		}
		want := post(t, f, sdkURL, c.header, c.body)
		compare(t, c.name, got, want)
	}

	// Agent 8 has agent 7's tools and is paused: both paths refuse every
	// call alike (paused.go), and neither reaches the engine.
	f.mu.Lock()
	f.agentTools[8], f.status = f.agentTools[7], map[int64]agents.Status{8: agents.Paused}
	f.mu.Unlock()
	fastURL8, sdkURL8 := strings.Replace(fastURL, "/agents/7/", "/agents/8/", 1), strings.Replace(sdkURL, "/agents/7/", "/agents/8/", 1)
	for _, c := range taken {
		before := fast.fastCalls.Load()
		got := post(t, f, fastURL8, c.header, c.body)
		if fast.fastCalls.Load() != before+1 {
			t.Errorf("paused, %s: the fast path did not take it", c.name)
		}
		want := post(t, f, sdkURL8, c.header, c.body)
		compare(t, "paused, "+c.name, got, want)
		if len(got.engineBodies)+len(want.engineBodies) > 0 || !strings.Contains(got.body, `"isError":true`) ||
			!strings.Contains(got.body, `"structuredContent":{"error":"forbidden"`) {
			t.Errorf("paused, %s: %s, engine saw %v %v", c.name, got.body, got.engineBodies, want.engineBodies)
		}
	}
	for _, c := range passed {
		before := fast.fastCalls.Load()
		got := post(t, f, fastURL8, c.header, c.body)
		if fast.fastCalls.Load() != before {
			t.Errorf("paused, %s: the fast path took it", c.name)
		}
		want := post(t, f, sdkURL8, c.header, c.body)
		compare(t, "paused, "+c.name, got, want)
		if len(got.engineBodies)+len(want.engineBodies) > 0 {
			t.Errorf("paused, %s: engine saw %v %v", c.name, got.engineBodies, want.engineBodies)
		}
	}
}

func compare(t *testing.T, name string, got, want answer) {
	t.Helper()
	if got.status != want.status || got.contentType != want.contentType || got.cacheControl != want.cacheControl || got.body != want.body {
		t.Errorf("%s:\n fast %d %q %q %s\n sdk  %d %q %q %s", name,
			got.status, got.contentType, got.cacheControl, got.body, want.status, want.contentType, want.cacheControl, want.body)
	}
	if strings.Join(got.engineBodies, "|") != strings.Join(want.engineBodies, "|") || strings.Join(got.engineKeys, "|") != strings.Join(want.engineKeys, "|") {
		t.Errorf("%s: engine saw %v %v through the fast path, %v %v through the SDK", name,
			got.engineBodies, got.engineKeys, want.engineBodies, want.engineKeys)
	}
}

// TestMCPFastPathBodyLimit checks a body over the limit gets the API's 413
// envelope, with or without a Content-Length, and one at the limit is read
// whole.
func TestMCPFastPathBodyLimit(t *testing.T) {
	f, _ := setup(t)
	s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), MaxBodyBytes: 300})
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	url := hs.URL + "/api/v1/agents/7/mcp"
	body := func(n int) string {
		b := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"` + strings.Repeat("x", n) + `"}}}`
		return b
	}
	for _, length := range []bool{true, false} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body(400)))
		if !length {
			req, _ = http.NewRequest("POST", url, io.MultiReader(strings.NewReader(body(400))))
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != calls.ContentType ||
			!strings.Contains(string(b), `"error":"payload_too_large"`) {
			t.Errorf("over the limit (Content-Length %v): %d %q %s", length, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	if len(f.requests) != 0 {
		t.Fatal("an oversized call reached the engine")
	}
	small := body(300 - len(body(0)))
	if a := post(t, f, url, nil, small); a.status != 200 || s.fastCalls.Load() != 1 {
		t.Errorf("at the limit (%d bytes): %d %s, fast calls %d", len(small), a.status, a.body, s.fastCalls.Load())
	}
}

// TestMCPFastPathTakesSDKClient checks the SDK client's own tools/call (the
// 2026-07-28 protocol, and the legacy one after initialize) takes the fast
// path and reads its answer.
func TestMCPFastPathTakesSDKClient(t *testing.T) {
	_, fast, fastURL, _ := pair(t)
	for _, version := range []string{"", "2025-11-25"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		var opts *mcp.ClientSessionOptions
		if version != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: fastURL}, opts)
		if err != nil {
			t.Fatal(err)
		}
		before := fast.fastCalls.Load()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "My_Mail__read", Arguments: map[string]any{"q": "x"}})
		if err != nil || res.IsError || res.Meta[metaCallID] != "c_1" {
			t.Fatalf("%q: %v %+v", version, err, res)
		}
		if fast.fastCalls.Load() != before+1 {
			t.Errorf("%q: the SDK client's call did not take the fast path", version)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; text != `{"n":12345678901234567890}` || res.StructuredContent == nil {
			t.Errorf("%q: content %s, structured %v", version, text, res.StructuredContent)
		}
		cs.Close()
	}
}
