package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzFastCallAnswerAsSDK: a tools/call answer (any 2xx status, session ID,
// Content-Type and body)
// that the fast path reads as a result, the SDK's client reads as the same
// result, and does not fail on. Both talk to cannedServer, a round tripper
// in this process, which writes @ID@ in the answer as the ID each side
// sent. Documented differences are left out: structuredContent is compared
// by presence only (the fast path keeps the server's JSON, the SDK reads it
// into float64s), the stream forms the SDK fails on (a lone CR ending a
// line, a byte order mark, a line without a colon) are not required of it, and neither is a result
// the SDK's CallToolResult refuses (a number past float64, bad base64),
// which Connector.Call reads on its own (unfamiliar). The result the fast
// path maps (decoded) is also the one result makes of the SDK client's, as
// FuzzDecodedAsSDK checks on results alone.
func FuzzFastCallAnswerAsSDK(f *testing.F) {
	const ev, js = "text/event-stream", "application/json"
	answer := `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]}}`
	for _, c := range [][2]string{
		{js, answer},
		{js + "; charset=utf-8", answer + "\n"},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[],"isError":true}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1e400}}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"resource_link","uri":"a:b","name":"n"}]}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"resource","resource":{"uri":"a:b","text":"t"}}],"_meta":{"k":[1,2]}}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@.0,"result":{"content":[]}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[]},"error":null}`},
		{js, `{"id":@ID@,"result":{"content":[]}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"Result":{"content":[]},"result":{"content":[{"type":"text","text":"1"}]}}`},
		{js, `{"jsonrpc":"2.0","ID":@ID@,"result":{"content":[]}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"Content":[{"type":"text","text":"1"}],"IsError":true}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"1","Text":"2"}]}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"{}"}],"ISERROR":true}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"audio","data":"@@","mimeType":"a"}]}}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[]}} {"more":1}`},
		{ev, "event: message\ndata: " + answer + "\n\n"},
		{ev, "id: 1\ndata:\n\nid: 2\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":@ID@,\"result\":{\"content\":[]}}\n\n"},
		{ev, ": comment\r\nretry: 10\r\ndata:" + answer + "\r\n\r\n"},
		{ev, "data: " + answer},
		{ev, "event: other\ndata: " + answer + "\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"id\":\"ask-1\",\"method\":\"ping\"}\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"id\":12345,\"result\":{}}\n\ndata: " + answer + "\n\n"},
		{ev, "data: " + answer + "\n\ndata: {\"x\n\n"},
		{ev, "data:  " + answer + "  \n\n"},
		{ev, "DATA: " + answer + "\n\n"},
		{ev, "data: " + answer + " xyz\n\n"},
		{ev + ";charset=utf-8", "event:message\ndata:" + answer + "\n\n"},
		// Found by fuzzing.
		{"AppliCAtion/json;0", `{"jsonrpc":"2.0","id":@ID@,"result":{}}`},
		{"teXt/event-streAm", "00\ndata:{\"jsonrpc\":\"2.0\",\"id\":@ID@,\"result\":{}}"},
		{ev, "data:\ndata:\n\ndata: " + answer + "\n\n"},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[],"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`},
		{js, `{"jsonrpc":"2.0","method":"","id":@ID@,"result":{"content":[]}}`},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"result\":{}}\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"id\":1e400,\"result\":{}}\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"1.0\",\"method\":\"notifications/message\"}\n\ndata: " + answer + "\n\n"},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"Method\":\"notifications/message\"}\n\ndata: " + answer + "\n\n"},
		{js, `{"jsonrpc":"2.0","id":@ID@,"reſult":{"content":[]}}`},
		{js, `{"jsonrpc":"2.0","id":"x","id":@ID@,"result":{"content":[]},"jsonrpc":"1.0","jsonrpc":"2.0"}`},
		{js, `{"jsonrpc":"2.0","id":@ID@,"result":{"content":[{"type":"text","text":"a"}]},"result":{"content":[]}}`},
		{ev, "data: {\"jsonrpc\":\"2.0\",\"id\":@ID@,\"method\":null,\"result\":{}}\n\ndata: " + answer + "\n\n"},
	} {
		f.Add(uint8(0), "", c[0], []byte(c[1]))
	}
	f.Add(uint8(1), canned, js, []byte(answer))
	f.Add(uint8(2), "", ev, []byte("data: "+answer+"\n\n"))
	f.Add(uint8(3), "other", js, []byte(answer))
	f.Add(uint8(0), "other", ev, []byte("data: "+answer+"\n\n"))
	srv := &cannedServer{}
	client := &http.Client{Transport: srv}
	c := &Connector{opts: Options{MaxResponseBytes: 1 << 30}}
	f.Fuzz(func(t *testing.T, status uint8, session, contentType string, body []byte) {
		if len(body) > 16<<10 {
			return
		}
		srv.set(200+int(status%4), session, contentType, body)
		fs := &fastSession{client: client, endpoint: "http://mcp.test/mcp", version: "2025-06-18", maxBytes: 1 << 20,
			sessionID: canned, sessionValue: []string{canned}, versionValue: []string{"2025-06-18"}}
		fs.ids.Store(1 << 40)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		raw, err := fs.call(ctx, "act", json.RawMessage(`{}`))
		if err != nil {
			return // the fast path failed: not required to match
		}
		var ours mcp.CallToolResult
		oursErr := json.Unmarshal(raw, &ours)

		if ct := strings.ToLower(contentType); strings.Contains(ct, "event-stream") &&
			(bytes.HasPrefix(body, []byte("\xEF\xBB\xBF")) || loneCR(body) || colonless(body)) {
			return // forms the SDK fails on (see events)
		}
		theirs, sdkErr := sdkCall(ctx, client)
		if sdkErr != nil && oursErr != nil {
			return // a result the SDK's type refuses: call.go reads it (unfamiliar)
		}
		if sdkErr != nil {
			t.Fatalf("%q %q: the fast path read %s; the SDK failed: %v", contentType, body, raw, sdkErr)
		}
		if oursErr != nil {
			t.Fatalf("%q %q: the fast path read %s, which the SDK's result type refuses (%v); the SDK read it", contentType, body, raw, oursErr)
		}
		mapped, err := c.decoded(raw)
		want, werr := c.result(theirs, nil)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q %q: mapping failed with %v here, %v through the SDK", contentType, body, err, werr)
		}
		if why := sameMapped(mapped, want); why != "" {
			t.Fatalf("%q %q: %s\nfast path: %+v\nSDK:       %+v", contentType, body, why, show(mapped), show(want))
		}
		if (ours.StructuredContent == nil) != (theirs.StructuredContent == nil) {
			t.Fatalf("%q %q: structured content %v here, %v through the SDK", contentType, body, ours.StructuredContent, theirs.StructuredContent)
		}
		ours.StructuredContent, theirs.StructuredContent = nil, nil
		a, _ := json.Marshal(&ours)
		b, _ := json.Marshal(theirs)
		if !bytes.Equal(a, b) {
			t.Fatalf("%q %q:\nfast path: %s\nSDK:       %s", contentType, body, a, b)
		}
	})
}

// keptSession takes a session ID other than the request's off a response,
// as roundTripper.checkSession does.
type keptSession struct{ rt http.RoundTripper }

func (k keptSession) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := k.rt.RoundTrip(req)
	if err == nil {
		if got, sent := resp.Header[sessionHeader], req.Header[sessionHeader]; len(got) > 0 && len(sent) > 0 && got[0] != sent[0] {
			delete(resp.Header, sessionHeader)
		}
	}
	return resp, err
}

// colonless reports whether b has a line that is not blank and holds no
// colon: a field with an empty value, which the SDK fails the call on.
func colonless(b []byte) bool {
	for line := range bytes.Lines(b) {
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 && !bytes.Contains(line, []byte{':'}) {
			return true
		}
	}
	return false
}

// loneCR reports whether b has a CR not followed by an LF.
func loneCR(b []byte) bool {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			return true
		}
	}
	return false
}

// sdkCall calls "act" through a new SDK client session over client, whose
// answers naming another session lose that header first, as the SDK's
// sessions get them from Quiver's round tripper (checkSession: the answer
// counts and the session is retired; TestSessionReplacedByTheServer).
func sdkCall(ctx context.Context, client *http.Client) (*mcp.CallToolResult, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
	sessions := &http.Client{Transport: keptSession{client.Transport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://mcp.test/mcp", HTTPClient: sessions,
		MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "act", Arguments: json.RawMessage(`{}`)})
}

// cannedServer is an MCP server as a round tripper: initialize is answered
// with session canned, tools/call with the status, session ID (none if
// empty) and answer set, with @ID@ as
// the request's ID, another request with method not found, a notification
// or reply with 202, and GET (a resumption) with 405.
type cannedServer struct {
	mu                   sync.Mutex
	status               int
	session, contentType string
	body                 []byte
}

// canned is cannedServer's session ID.
const canned = "canned-1"

func (s *cannedServer) set(status int, session, contentType string, body []byte) {
	s.mu.Lock()
	s.status, s.session, s.contentType, s.body = status, session, contentType, body
	s.mu.Unlock()
}

func (s *cannedServer) RoundTrip(req *http.Request) (*http.Response, error) {
	reply := func(code int, contentType, body string) *http.Response {
		h := http.Header{"Mcp-Session-Id": {canned}}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code), Proto: "HTTP/1.1",
			ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: req}
	}
	if req.Method != http.MethodPost {
		return reply(http.StatusMethodNotAllowed, "", ""), nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(b, &m)
	switch m.Method {
	case "initialize":
		return reply(http.StatusOK, "application/json", `{"jsonrpc":"2.0","id":`+string(m.ID)+
			`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}}`), nil
	case "tools/call":
		s.mu.Lock()
		status, session, ct, body := s.status, s.session, s.contentType, string(s.body)
		s.mu.Unlock()
		resp := reply(status, ct, strings.ReplaceAll(body, "@ID@", string(m.ID)))
		if resp.Header.Del("Mcp-Session-Id"); session != "" {
			resp.Header.Set("Mcp-Session-Id", session)
		}
		return resp, nil
	case "":
	default:
		if len(m.ID) > 0 { // server/discover, which an older server does not know
			return reply(http.StatusOK, "application/json", `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32601,"message":"no"}}`), nil
		}
	}
	return reply(http.StatusAccepted, "", ""), nil
}
