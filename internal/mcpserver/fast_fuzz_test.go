package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
)

// FuzzParseCallAsSDK: a tools/call body the fast path takes is answered as
// the SDK alone answers it, byte for byte, having reached the engine with
// the same request: the same ID, tool and arguments, and no answer where
// the SDK refuses the body. Both servers run in this process (no socket),
// so each input costs two handler runs; the bodies the fast path leaves
// reach the SDK untouched on both sides and are not run.
func FuzzParseCallAsSDK(f *testing.F) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, s := range []string{
		// The Go SDK's client (jsonrpc2's wire form: jsonrpc, id, method, params).
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"My_Mail__read","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"x"},` + meta + `}}`,
		// The TypeScript SDK's client (method, params, jsonrpc, id).
		`{"method":"tools/call","params":{"name":"My_Mail__send","arguments":{"to":"a@b.c","idempotency_key":"k-1"},"_meta":{"progressToken":0}},"jsonrpc":"2.0","id":0}`,
		`{"method":"tools/call","params":{"name":"My_Mail__read"},"jsonrpc":"2.0","id":"a-1"}` + "\n",
		// IDs.
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":-9007199254740992,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":"<a&b>","method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":"\u0061","method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		// Escapes, duplicates, odd members.
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail\u005f_read"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"\ud800\u00e9\"\\","q":"y"}}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","name":"My_Mail__send"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","Name":"My_Mail__send"}}`,
		`{"JSONRPC":"2.0","jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":null,"_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"n":[1,-0.5e+3,true,false,null,{}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"progressToken":1e308,"x":[1E-400]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"progressToken":1e400}}}`,
		"\t\r\n {\"jsonrpc\" : \"2.0\" , \"id\" : 1 , \"method\" : \"tools/call\" , \"params\" : { \"name\" : \"My_Mail__read\" } } \r\n",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"a":` + strings.Repeat("[", 996) + strings.Repeat("]", 996) + `}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"a":"` + "\xff" + `"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"a":"` + "\u2028\U0001F600" + `"}}}`,
		// SEP-2575 _meta variants.
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"IO.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"Roots":1,"sampling":{},"elicitation":{"form":{}},"x":[]}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"roots":null}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","title":"t","icons":[{"src":"a"}],"Name":2}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{}}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"My_Mail__read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p","io.modelcontextprotocol/x":null}}}`,
	} {
		for _, v := range []string{"", "2025-11-25", protocolStateless} {
			f.Add([]byte(s), v)
		}
	}
	fast, slow := fuzzPair(f)
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		if len(body) > 8<<10 {
			return
		}
		req, ok := parseCall(body, version, new(metaSet))
		if !ok {
			return
		}
		header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		if version != "" {
			header.Set(headerProtocol, version)
		}
		if version == protocolStateless {
			header.Set(headerMethod, methodToolsCall)
			header.Set(headerName, req.name)
		}
		calls := fast.fastCalls()
		got := fast.post(header, body)
		if fast.fastCalls() == calls {
			return // an unknown tool, or headers it does not take: the SDK's
		}
		want := slow.post(header, body)
		if got != want {
			t.Fatalf("%q (%q)\nfast: %s\nsdk:  %s", body, version, got, want)
		}
	})
}

// fuzzServer is a Server of fakes answering in this process, and what its
// engine saw.
type fuzzServer struct {
	s   *Server
	h   http.Handler
	mu  sync.Mutex
	saw []calls.Request
}

// fuzzPair is a fast-path server and an SDK-only one over the same tools,
// whose engines answer with what they were asked.
func fuzzPair(tb testing.TB) (fast, slow *fuzzServer) {
	tb.Helper()
	f := &fakes{
		agentTools: map[int64][]int64{7: {11, 12}},
		names:      map[int64]string{11: "My Mail!", 12: "My Mail!"},
		configured: map[int64]bool{11: true, 12: true},
	}
	yes, no := true, false
	f.actions = []connectors.Action{
		{Name: "read", Description: "Reads.", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Retryable: true, Annotations: &catalog.Annotations{ReadOnlyHint: &yes, DestructiveHint: &no}},
		{Name: "send", Description: "Sends.", InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)},
	}
	gin.SetMode(gin.ReleaseMode)
	mk := func(sdkOnly bool) *fuzzServer {
		fs := &fuzzServer{}
		engine := engineFunc(func(_ context.Context, r calls.Request) (*calls.Response, error) {
			fs.mu.Lock()
			fs.saw = append(fs.saw, r)
			fs.mu.Unlock()
			echo, _ := json.Marshal(string(r.Body))
			return &calls.Response{Status: 200, Body: []byte(`{"call_id":"c_1","is_error":false,"result":` + string(echo) + `}`)}, nil
		})
		fs.s = New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engine, ListTTL: time.Hour})
		fs.s.sdkOnly = sdkOnly
		r := gin.New()
		fs.s.Register(r.Group("/api/v1", asAccount1))
		fs.h = r
		return fs
	}
	return mk(false), mk(true)
}

func (fs *fuzzServer) fastCalls() int64 { return fs.s.fastCalls.Load() }

// post answers body as this server does, with what its engine saw.
func (fs *fuzzServer) post(header http.Header, body []byte) string {
	fs.mu.Lock()
	fs.saw = nil
	fs.mu.Unlock()
	req := httptest.NewRequest(http.MethodPost, "/api/v1/agents/7/mcp", strings.NewReader(string(body)))
	req.Header = header.Clone()
	rec := httptest.NewRecorder()
	fs.h.ServeHTTP(rec, req)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var saw strings.Builder
	for _, r := range fs.saw {
		saw.WriteString(string(r.Body) + " key=" + r.Key + "|")
	}
	return rec.Result().Status + " " + rec.Header().Get("Content-Type") + " " + rec.Body.String() + " engine: " + saw.String()
}

// FuzzFastPathHeadersAsSDK: a tools/call the fast path takes under any
// Content-Type, Accept, Mcp-Protocol-Version, Mcp-Method and Mcp-Name
// (each possibly given twice, split at "|") is answered as the SDK alone
// answers it.
func FuzzFastPathHeadersAsSDK(f *testing.F) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{"q":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"My_Mail__read",` + meta + `}}`,
	}
	for _, h := range [][5]string{
		{"application/json", "application/json, text/event-stream", "", "", ""},
		{"application/json; charset=utf-8", "text/event-stream|application/json", "2025-06-18", "", ""},
		{"Application/JSON", "*/*", "2025-03-26", "tools/call", "My_Mail__read"},
		{"application/json", "application/*, text/*;q=0.5", protocolStateless, "tools/call", "My_Mail__read"},
		{"application/json", "application/json, text/event-stream", protocolStateless, "tools/call|tools/list", "My_Mail__read|x"},
		{"application/json", "application/json, text/event-stream", protocolStateless, " tools/call", "My_Mail__read "},
		{"application/json;x", "APPLICATION/JSON,TEXT/EVENT-STREAM", "2025-11-25|2026-07-28", "", ""},
		{"application/json", "application/json, text/event-stream", protocolStateless, "tools/call", "My_Mail__send"},
		{"application/json", "application/json, text/event-stream", protocolStateless, "tools/list", "My_Mail__read"},
		{"application/json", "application/json, text/event-stream", protocolStateless, "Tools/Call", "my_mail__read"},
	} {
		for i := range bodies {
			f.Add(uint8(i), h[0], h[1], h[2], h[3], h[4])
		}
	}
	fast, slow := fuzzPair(f)
	f.Fuzz(func(t *testing.T, which uint8, contentType, accept, version, method, name string) {
		body := []byte(bodies[int(which)%len(bodies)])
		header := http.Header{}
		for k, v := range map[string]string{"Content-Type": contentType, "Accept": accept, headerProtocol: version,
			headerMethod: method, headerName: name} {
			if v == "" {
				continue
			}
			for _, one := range strings.Split(v, "|") {
				if !validHeaderValue(one) {
					return // no client sends it; net/http would not take it either
				}
				header.Add(k, one)
			}
		}
		calls := fast.fastCalls()
		got := fast.post(header, body)
		if fast.fastCalls() == calls {
			return
		}
		want := slow.post(header, body)
		if got != want {
			t.Fatalf("%s %q\nfast: %s\nsdk:  %s", body, header, got, want)
		}
	})
}

// validHeaderValue reports whether v could come in a request's header.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
