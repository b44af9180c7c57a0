package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/calls"
)

func objectAnswer(calls.Request) (*calls.Response, error) {
	return &calls.Response{Status: 200, Body: []byte(`{"call_id":"c_1","tool":11,"action":"read","is_error":false,"result":{"n":12345678901234567890,"h":"<a&b>"},"duration_ms":1}`)}, nil
}

// TestMCPScreen sends what the SDK alone answers in plain text, or
// wrongly, and checks the JSON-RPC answers screen gives instead, through
// the fast path's server and the SDK-only one alike.
func TestMCPScreen(t *testing.T) {
	f, _, fastURL, sdkURL := pair(t)
	const read = `"method":"tools/call","params":{"name":"My_Mail__read","arguments":{}}`
	const (
		parseError = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the body is not one JSON value"}}`
		badID      = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an ID is a string or an integer of at most 2^53 in size"}}`
	)
	cases := []struct {
		name   string
		header map[string]string
		body   string
		status int
		want   string // the answer's body; "" for none
		calls  int    // calls that reached the engine
	}{
		{"unknown method", nil, `{"jsonrpc":"2.0","id":3,"method":"foo/bar"}`,
			200, `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: \"foo/bar\""}}`, 0},
		{"unknown method, string id kept as sent", map[string]string{headerProtocol: "2025-11-25"}, `{"jsonrpc":"2.0","id":"a\u00e9","method":"foo/bar","params":{}}`,
			200, `{"jsonrpc":"2.0","id":"a\u00e9","error":{"code":-32601,"message":"Method not found: \"foo/bar\""}}`, 0},
		{"unknown notification", nil, `{"jsonrpc":"2.0","method":"notifications/foo"}`, 202, "", 0},
		{"fractional id", nil, `{"jsonrpc":"2.0","id":1.5,` + read + `}`, 400, badID, 0},
		{"id beyond 2^53", nil, `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, 400, badID, 0},
		{"id with an exponent", nil, `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, 400, badID, 0},
		{"null id", nil, `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, badID, 0},
		{"boolean id", nil, `{"jsonrpc":"2.0","id":true,"method":"ping"}`, 400, badID, 0},
		{"trailing data", nil, `{"jsonrpc":"2.0","id":1,` + read + `} garbage`, 400, parseError, 0},
		{"bad JSON", nil, `{not json`, 400, parseError, 0},
		{"not UTF-8", nil, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}",
			400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the body is not UTF-8 JSON nested at most 1000 deep"}}`, 0},
		{"not an object", nil, `42`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message is a JSON object"}}`, 0},
		{"null body", nil, `null`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message is a JSON object"}}`, 0},
		{"version tag missing", nil, `{"id":4,"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}`, 0},
		{"id twice", nil, `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"id\" is given twice"}}`, 0},
		{"escaped member twice", nil, `{"jsonrpc":"2.0","id":1,"\u006dethod":"ping","method":"ping"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"method\" is given twice"}}`, 0},
		{"name twice", nil, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"My_Mail__send","name":"My_Mail__read","arguments":{}}}`,
			200, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: \"name\" is given twice"}}`, 0},
		{"no method, result or error", nil, `{"jsonrpc":"2.0","id":1}`, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: a message has a method, or is a response with an ID and a result or an error"}}`, 0},
		{"missing params", nil, `{"jsonrpc":"2.0","id":6,"method":"tools/call"}`,
			200, `{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: \"tools/call\" needs params"}}`, 0},
		{"null params, as missing", nil, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":null}`,
			200, `{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: \"tools/call\" needs params"}}`, 0},
		{"array arguments", nil, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"My_Mail__send","arguments":[1]}}`,
			200, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: \"arguments\" must be an object, not an array"}}`, 0},
		{"string arguments", nil, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"My_Mail__read","arguments":"s"}}`,
			200, `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: \"arguments\" must be an object, not a string"}}`, 0},
		{"a request without an id", nil, `{"jsonrpc":"2.0","method":"ping"}`, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: \"ping\" is a request: it needs an ID"}}`, 0},
		{"a notification with an id", nil, `{"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}`, 400,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"Invalid Request: \"notifications/initialized\" is a notification: it has no ID"}}`, 0},
		{"batch under 2025-06-18, which has none", map[string]string{headerProtocol: "2025-06-18"}, `[{"jsonrpc":"2.0","id":2,"method":"nope"},` + `{"jsonrpc":"2.0","id":3,` + read + `}]`,
			400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: protocol 2025-06-18 has no batches; send one message per request"}}`, 0},
		{"empty batch", nil, ` [ ] `, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the batch is empty"}}`, 0},
		{"batch: unknown members answered, the rest by the SDK", map[string]string{headerProtocol: "2025-03-26"},
			`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","method":"notifications/initialized"},` +
				`{"jsonrpc":"2.0","method":"notifications/nope"},{"jsonrpc":"2.0","id":3,` + read + `},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`,
			200, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":3,"result":{"_meta":{"quiver/call_id":"c_1"},"content":[{"type":"text","text":"{\"n\":12345678901234567890,\"h\":\"\u003ca\u0026b\u003e\"}"}],"structuredContent":{"n":12345678901234567890,"h":"\u003ca\u0026b\u003e"}}},` +
				`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: \"nope\""}},` + badID + `]`, 1},
		{"batch: nothing left for the SDK", nil, `[{"jsonrpc":"2.0","method":"notifications/nope"},{"jsonrpc":"2.0","id":"x","method":"nope"}]`,
			200, `[{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found: \"nope\""}}]`, 0},
		{"batch: initialize is not sent in one", nil, `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}]`,
			200, `[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: \"initialize\" is not sent in a batch"}}]`, 0},
		{"params not an object", nil, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":5}`,
			200, `{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Invalid params: params must be an object"}}`, 0},
		{"optional params not an object", nil, `{"jsonrpc":"2.0","id":11,"method":"ping","params":[1]}`,
			200, `{"jsonrpc":"2.0","id":11,"error":{"code":-32602,"message":"Invalid params: params must be an object"}}`, 0},
		{"2026-07-28: invalid params is a 400, as the SDK sends it", withName(newHeaders, "My_Mail__read"),
			`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"My_Mail__read","arguments":"s",` + newMeta + `}}`,
			400, `{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"Invalid params: \"arguments\" must be an object, not a string"}}`, 0},
		{"initialize: a member of the wrong kind", nil, `{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			200, `{"jsonrpc":"2.0","id":13,"error":{"code":-32602,"message":"Invalid params: \"protocolVersion\" must be a string, not a number"}}`, 0},
		{"initialize: clientInfo's name of the wrong kind", nil, `{"jsonrpc":"2.0","id":14,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":["c"],"version":"1"}}}`,
			200, `{"jsonrpc":"2.0","id":14,"error":{"code":-32602,"message":"Invalid params: \"clientInfo.name\" must be a string, not an array"}}`, 0},
		{"tools/list: cursor a number", nil, `{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"cursor":5}}`,
			200, `{"jsonrpc":"2.0","id":15,"error":{"code":-32602,"message":"Invalid params: \"cursor\" must be a string, not a number"}}`, 0},
		{"tools/call: name a number", nil, `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":5,"arguments":{}}}`,
			200, `{"jsonrpc":"2.0","id":16,"error":{"code":-32602,"message":"Invalid params: \"name\" must be a string, not a number"}}`, 0},
		{"tools/call: _meta a string", nil, `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"My_Mail__read","arguments":{},"_meta":"m"}}`,
			200, `{"jsonrpc":"2.0","id":20,"error":{"code":-32602,"message":"Invalid params: \"_meta\" must be an object, not a string"}}`, 0},
		{"ping: _meta an array", nil, `{"jsonrpc":"2.0","id":17,"method":"ping","params":{"_meta":[]}}`,
			200, `{"jsonrpc":"2.0","id":17,"error":{"code":-32602,"message":"Invalid params: \"_meta\" must be an object, not an array"}}`, 0},
		{"a client's error response with a null id", nil, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, 202, "", 0},
		{"batch: the SDK's part all notifications", nil, `[{"jsonrpc":"2.0","method":"notifications/nope"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, 202, "", 0},
		{"batch: only unknown notifications", nil, `[{"jsonrpc":"2.0","method":"notifications/nope"}]`, 202, "", 0},
		{"batch: a request ID given twice", nil,
			`[{"jsonrpc":"2.0","id":0,"method":"ping"},{"jsonrpc":"2.0","id":-0,"method":"ping"},{"jsonrpc":"2.0","id":"0","method":"ping"},{"jsonrpc":"2.0","id":"0","method":"ping"}]`,
			200, `[{"jsonrpc":"2.0","id":0,"result":{}},{"jsonrpc":"2.0","id":"0","result":{}},` +
				`{"jsonrpc":"2.0","id":-0,"error":{"code":-32600,"message":"Invalid Request: another request of the batch has this ID"}},` +
				`{"jsonrpc":"2.0","id":"0","error":{"code":-32600,"message":"Invalid Request: another request of the batch has this ID"}}]`, 0},
	}
	f.mu.Lock()
	f.answer = objectAnswer
	f.mu.Unlock()
	for _, c := range cases {
		for _, url := range []string{fastURL, sdkURL} {
			got := post(t, f, url, c.header, c.body)
			if got.status != c.status || !sameAnswer(got.body, c.want) || len(got.engineBodies) != c.calls {
				t.Errorf("%s: %d %s, %d calls; want %d %s, %d calls", c.name, got.status, got.body, len(got.engineBodies), c.status, c.want, c.calls)
			}
			if c.want != "" && got.contentType != "application/json" {
				t.Errorf("%s: Content-Type %q", c.name, got.contentType)
			}
		}
	}

	// What screen has nothing to say about reaches the SDK as it came.
	for _, c := range []struct {
		name   string
		header map[string]string
		body   string
	}{
		{"unknown method under 2026-07-28", map[string]string{headerProtocol: protocolStateless, headerMethod: "nope"}, `{"jsonrpc":"2.0","id":2,"method":"nope","params":{` + newMeta + `}}`},
		{"Accept JSON only", map[string]string{"Accept": "application/json"}, `{"jsonrpc":"2.0","id":2,"method":"nope"}`},
		{"unsupported version", map[string]string{headerProtocol: "2099-01-01"}, `{"jsonrpc":"2.0","id":2,"method":"nope"}`},
		{"a client's response", nil, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{"null where a string goes, as not given", nil, `{"jsonrpc":"2.0","id":18,"method":"tools/list","params":{"cursor":null}}`},
		{"a member MCP does not type", nil, `{"jsonrpc":"2.0","id":19,"method":"tools/list","params":{"x":5,"_meta":{"k":[]}}}`},
	} {
		got := post(t, f, sdkURL, c.header, c.body)
		if strings.Contains(got.body, "Method not found:") || strings.Contains(got.body, "Invalid Request:") || strings.Contains(got.body, "Invalid params:") {
			t.Errorf("%s: screened: %d %s", c.name, got.status, got.body)
		}
	}
}

// TestSDKMethods checks sdkMethods against the SDK's server with the
// options serve uses: each method is one it handles, a notification or not
// as listed, its params optional or not as listed, and a method it does not
// know still fails the whole request in plain text (else screen's answer
// to it can go).
func TestSDKMethods(t *testing.T) {
	send := bareSDK()
	if code, body := send(`{"jsonrpc":"2.0","id":1,"method":"foo/bar"}`); code != 400 || !strings.Contains(body, "not handled") {
		t.Errorf("unknown method: %d %s: the SDK answers it itself now", code, body)
	}
	for method, kind := range sdkMethods {
		id, wrongID := `"id":1,`, ""
		if kind&notification != 0 {
			id, wrongID = "", `"id":1,`
		}
		if _, body := send(fmt.Sprintf(`{"jsonrpc":"2.0",%s"method":%q,"params":{}}`, id, method)); strings.Contains(body, "not handled") {
			t.Errorf("%s: the SDK does not handle it: %s", method, body)
		}
		_, body := send(fmt.Sprintf(`{"jsonrpc":"2.0",%s"method":%q,"params":{}}`, wrongID, method))
		if want := map[bool]string{true: "unexpected id", false: "missing id"}[kind&notification != 0]; !strings.Contains(body, want) {
			t.Errorf("%s with the ID turned around: %s, want %q", method, body, want)
		}
		_, body = send(fmt.Sprintf(`{"jsonrpc":"2.0",%s"method":%q}`, id, method))
		if missing := strings.Contains(body, `missing required "params"`); missing != (kind&paramsOptional == 0) {
			t.Errorf("%s without params: %s (listed as params optional: %v)", method, body, kind&paramsOptional != 0)
		}
	}
}

// TestParamShapes checks paramShapes against the SDK's server: each member
// listed, given as another kind, is refused by the SDK too (so screen only
// words a refusal the SDK would make), and is a method it has.
func TestParamShapes(t *testing.T) {
	send := bareSDK()
	wrong := map[byte]string{'"': "5", '{': `"s"`}
	var check func(method, at string, shapes []shape, wrap func(string) string)
	check = func(method, at string, shapes []shape, wrap func(string) string) {
		for _, sh := range shapes {
			params := wrap(fmt.Sprintf(`{%q:%s}`, sh.name, wrong[sh.kind]))
			if _, body := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)); !strings.Contains(body, `"error"`) {
				t.Errorf("%s with %s%s of another kind: the SDK takes it: %s", method, at, sh.name, body)
			}
			if sh.inner != nil {
				check(method, at+sh.name+".", sh.inner, func(v string) string { return wrap(fmt.Sprintf(`{%q:%s}`, sh.name, v)) })
			}
		}
	}
	for method, shapes := range paramShapes {
		if kind, ok := sdkMethods[method]; !ok || kind&notification != 0 {
			t.Errorf("%s: not a request of sdkMethods", method)
		}
		check(method, "", append([]shape{metaShape}, shapes...), func(v string) string { return v })
	}
}

// bareSDK sends a body to the SDK's stateless handler, with no screen in
// front, and returns its answer.
func bareSDK() func(body string) (int, string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return func(body string) (int, string) {
		r := httptest.NewRequestWithContext(context.Background(), "POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
}

// sameAnswer reports whether got is the answer want: byte for byte, or,
// for a batch, the same members in any order. JSON-RPC 2.0 lets a batch's
// answers come in any order, and the SDK answers its members at once, so
// which finishes first is the scheduler's.
func sameAnswer(got, want string) bool {
	if got == want {
		return true
	}
	var g, w []json.RawMessage
	if !strings.HasPrefix(want, "[") || json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil || len(g) != len(w) {
		return false
	}
	members := func(ms []json.RawMessage) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = string(m)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(members(g), members(w))
}
