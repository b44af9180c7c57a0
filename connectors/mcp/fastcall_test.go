package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// TestFastCallMatchesSDK calls the same actions through the fast path and
// through the SDK's client session, on servers answering with event streams
// and with JSON, stateful and stateless, and wants the same answers: the
// same bytes, the same error flag, the same kind of failure.
func TestFastCallMatchesSDK(t *testing.T) {
	t.Parallel()
	calls := []struct {
		mail         bool // Mail's tool, else Counter's
		action, args string
	}{
		{true, "get_upcoming_travel", `{}`},
		{true, "ask", `{"question":"When is my next flight?"}`},
		{true, "send_draft", `{"draft_id":"d_1"}`},
		{true, "get_excerpt", `{"message_id":"m1"}`},
		{true, "no_such_tool", `{}`},
		{false, "read_count", `{}`},
		{false, "fail", ``},
		{false, "plain", `null`},
		{false, "structured", `{}`},
		{false, "echo", `{"text":"<a & b>","n":12345678901234567890,"nested":{"z":1,"a":[true,null]}}`},
		{false, "big", `{"bytes":70000}`},
	}
	for _, mode := range []mcptest.Options{{}, {Stateless: true}, {JSONResponse: true}, {Stateless: true, JSONResponse: true}} {
		t.Run(fmt.Sprintf("stateless=%v,json=%v", mode.Stateless, mode.JSONResponse), func(t *testing.T) {
			t.Parallel()
			// Each path has servers of its own, which count (approval IDs)
			// from the same start.
			servers := func() map[bool]*mcptest.Server {
				return map[bool]*mcptest.Server{true: mcptest.Start(t, mcptest.Mail, mode), false: mcptest.Start(t, mcptest.Counter, mode)}
			}
			fastSrv, sdkSrv := servers(), servers()
			fast, sdk := setup(t, nil), setup(t, &Options{AllowPrivate: true, SDKCalls: true})
			for _, c := range calls {
				got, gotErr := call(t, fast, toolFor(fastSrv[c.mail], 1, nil), c.action, c.args)
				want, wantErr := call(t, sdk, toolFor(sdkSrv[c.mail], 1, nil), c.action, c.args)
				if !sameFailure(gotErr, wantErr) {
					t.Errorf("%s: fast path error %v, SDK error %v", c.action, gotErr, wantErr)
					continue
				}
				if got.IsError != want.IsError || !bytes.Equal(got.Content, want.Content) {
					t.Errorf("%s:\n fast %v %.200s\n sdk  %v %.200s", c.action, got.IsError, got.Content, want.IsError, want.Content)
				}
			}
			if n := fastSessions(fast); n == 0 {
				t.Error("no session of the fast connector took the fast path")
			}
		})
	}
}

// sameFailure reports whether two call errors are both nil or of one kind.
func sameFailure(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ca, cb *connectors.Error
	return errors.As(a, &ca) && errors.As(b, &cb) && ca.Kind == cb.Kind
}

// fastSessions counts the pooled sessions that have a fast path.
func fastSessions(c *Connector) int {
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	n := 0
	for _, s := range c.pool.slots {
		if s.fast.Load() != nil {
			n++
		}
	}
	return n
}

// TestFastCallAnswersTheServer: a tool that logs and pings the client on
// its call's stream before answering gets its ping answered and finishes.
func TestFastCallAnswersTheServer(t *testing.T) {
	t.Parallel()
	_, c, tool := counterSetup(t, mcptest.Options{}, nil)
	for i := 1; i <= 3; i++ {
		res := mustCall(t, c, tool, "chatty", `{}`)
		if res.IsError || string(res.Content) != fmt.Sprintf(`{"pings":%d}`, i) {
			t.Fatalf("chatty: %v %s", res.IsError, res.Content)
		}
	}
	if fastSessions(c) != 1 {
		t.Fatal("the call did not take the fast path")
	}
}

// TestFastCallKeepsCallerIDsApart: calls on the fast path and requests the
// SDK sends on the same session (tools/list) interleave without mixing up
// their answers.
func TestFastCallKeepsCallerIDsApart(t *testing.T) {
	t.Parallel()
	_, c, tool := counterSetup(t, mcptest.Options{PageSize: 4}, &Options{AllowPrivate: true, DiscoveryTTL: time.Millisecond})
	for i := range 5 {
		res := mustCall(t, c, tool, "echo", fmt.Sprintf(`{"i":%d}`, i))
		if want := fmt.Sprintf(`{"i":%d}`, i); string(res.Content) != want {
			t.Fatalf("echo %d = %s", i, res.Content)
		}
		time.Sleep(2 * time.Millisecond)
		actions, err := c.Actions(ctxFor(t, 5*time.Second), tool)
		if err != nil || len(actions) != mcptest.CounterTools {
			t.Fatalf("actions: %d, %v", len(actions), err)
		}
	}
	var v json.RawMessage = mustCall(t, c, tool, "read_count", `{}`).Content
	if string(v) != `{"count":0}` {
		t.Fatalf("read_count = %s", v)
	}
}

// scriptedServer answers the fast path's requests by hand, to reach what
// the SDK's server does not do on demand: a call's stream cut before its
// answer, resumed by GET with Last-Event-ID.
type scriptedServer struct {
	mu        sync.Mutex
	posts     []string // bodies of POSTs
	resumedAt []string // Last-Event-ID of each GET
	pending   json.RawMessage
	noIDs     bool // send events without IDs: nothing to resume from
	// cutAnswer ends the stream in the middle of the answer's event, with
	// no blank line after it (the server went away).
	cutAnswer bool
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodPost:
		b, _ := io.ReadAll(r.Body)
		s.posts = append(s.posts, string(b))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(b, &m)
		if m.Method != "tools/call" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		// A progress event with an ID, then the stream ends: no answer.
		w.Header().Set("Content-Type", "text/event-stream")
		id := "id: e1\n"
		if s.noIDs {
			id = ""
		}
		fmt.Fprint(w, id+"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n")
		if s.cutAnswer {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"res", m.ID)
		}
		s.pending = m.ID
	case http.MethodGet:
		s.resumedAt = append(s.resumedAt, r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\n", s.pending)
		fmt.Fprintf(w, "data: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"resumed\\\":true}\"}]}}\n\n")
	}
}

func scriptedSession(t *testing.T, srv *scriptedServer) *fastSession {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	f := &fastSession{client: hs.Client(), endpoint: hs.URL, version: ProtocolVersion, sessionID: "s1", maxBytes: 1 << 20}
	f.ids.Store(1 << 40)
	return f
}

// TestFastCallResumesACutStream: a call's stream that ends after an event
// with an ID, before the answer, is resumed from that ID with a GET, and
// the answer read there (its data split over two lines).
func TestFastCallResumesACutStream(t *testing.T) {
	t.Parallel()
	srv := &scriptedServer{}
	f := scriptedSession(t, srv)
	raw, err := f.call(ctxFor(t, 5*time.Second), "x", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `\"resumed\":true`) {
		t.Fatalf("result = %s", raw)
	}
	if len(srv.posts) != 1 || len(srv.resumedAt) != 1 || srv.resumedAt[0] != "e1" {
		t.Fatalf("posts %d, resumed at %q", len(srv.posts), srv.resumedAt)
	}
}

// TestFastCallResumesAStreamCutInAnEvent: a stream that ends in the middle
// of the answer's event is resumed too (an event the stream ends in counts
// only when its data is whole).
func TestFastCallResumesAStreamCutInAnEvent(t *testing.T) {
	t.Parallel()
	srv := &scriptedServer{cutAnswer: true}
	f := scriptedSession(t, srv)
	raw, err := f.call(ctxFor(t, 5*time.Second), "x", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(raw), `\"resumed\":true`) {
		t.Fatalf("result %s, %v", raw, err)
	}
	if len(srv.posts) != 1 || len(srv.resumedAt) != 1 || srv.resumedAt[0] != "e1" {
		t.Fatalf("posts %d, resumed at %q", len(srv.posts), srv.resumedAt)
	}
}

// TestFastCallCutStreamWithoutIDs: with no event ID there is nothing to
// resume from; the call fails (classify makes it an unknown outcome) and is
// not sent again.
func TestFastCallCutStreamWithoutIDs(t *testing.T) {
	t.Parallel()
	srv := &scriptedServer{noIDs: true}
	f := scriptedSession(t, srv)
	_, err := f.call(ctxFor(t, 5*time.Second), "x", json.RawMessage(`{}`))
	if !errors.Is(err, errStreamEnded) {
		t.Fatalf("error = %v, want the stream's early end", err)
	}
	if len(srv.posts) != 1 || len(srv.resumedAt) != 0 {
		t.Fatalf("posts %d, resumes %d", len(srv.posts), len(srv.resumedAt))
	}
}

// TestFastCallCancelsAnAbandonedCall: a call whose time runs out after it
// was sent tells the server with notifications/cancelled, which ends the
// tool's handler.
func TestFastCallCancelsAnAbandonedCall(t *testing.T) {
	t.Parallel()
	counter, c, tool := counterSetup(t, mcptest.Options{SlowDelay: time.Minute}, nil)
	mustCall(t, c, tool, "read_count", `{}`) // a warm session
	_, err := c.Call(ctxFor(t, 300*time.Millisecond), tool, "slow", json.RawMessage(`{}`))
	wantKind(t, err, connectors.KindOutcomeUnknown)
	if !eventually(t, 5*time.Second, func() bool { return counter.Cancelled("slow") > 0 }) {
		t.Fatal("the server's slow handler was not cancelled")
	}
}

// TestFastCallFallsBackWhenItCannotConnect: when the fast path cannot
// connect where the session did (nothing sent), the call goes through the
// SDK, once, and the session stays on the SDK's path.
func TestFastCallFallsBackWhenItCannotConnect(t *testing.T) {
	t.Parallel()
	counter, c, tool := counterSetup(t, mcptest.Options{}, nil)
	c.h1.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("no route for the fast path")}
	}
	for i := 1; i <= 2; i++ {
		res := mustCall(t, c, tool, "increment", `{}`)
		if string(res.Content) != fmt.Sprintf(`{"count":%d}`, i) {
			t.Fatalf("increment %d = %s", i, res.Content)
		}
	}
	if n := counter.Calls("increment"); n != 2 {
		t.Fatalf("increment ran %d times, want 2", n)
	}
	if fastSessions(c) != 0 {
		t.Fatal("the session kept its fast path")
	}
}

// Event stream forms the fast path reads: a priming event (an ID and empty
// data, which servers send first so the stream can be resumed) and a CR
// that ends one write and its LF the next, as the SDK reads them; lone CR
// line ends, a byte order mark and a line without a colon (a field with an
// empty value), which the SDK (v1.8.0) fails on. Before,
// each of these made a call that had run an unknown outcome.
func TestFastCallReadsEveryEventStreamForm(t *testing.T) {
	t.Parallel()
	answer := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]}}`
	}
	for name, parts := range map[string]func(id string) []string{
		"priming event": func(id string) []string {
			return []string{"id: prime-1\ndata:\n\n", "id: 2\ndata: " + answer(id) + "\n\n"}
		},
		"priming with space": func(id string) []string { return []string{"id: p\ndata: \n\n", "data: " + answer(id) + "\n\n"} },
		"lone CR":            func(id string) []string { return []string{"id: 1\rdata: " + answer(id) + "\r\r"} },
		"CRLF split":         func(id string) []string { return []string{"data: " + answer(id) + "\r", "\n\r", "\n"} },
		"byte order mark":    func(id string) []string { return []string{"\xEF\xBB\xBFdata: " + answer(id) + "\n\n"} },
		"line without colon": func(id string) []string { return []string{"retry\nid\ndata: " + answer(id) + "\n\n"} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &m)
				w.Header().Set("Content-Type", "text/event-stream")
				for _, p := range parts(string(m.ID)) {
					fmt.Fprint(w, p)
					w.(http.Flusher).Flush()
					time.Sleep(5 * time.Millisecond)
				}
			}))
			t.Cleanup(hs.Close)
			f := &fastSession{client: hs.Client(), endpoint: hs.URL, version: ProtocolVersion, sessionID: "s1", maxBytes: 1 << 20}
			f.ids.Store(1 << 40)
			raw, err := f.call(ctxFor(t, 5*time.Second), "x", json.RawMessage(`{}`))
			if err != nil || !strings.Contains(string(raw), `\"ok\":true`) {
				t.Fatalf("result %s, %v", raw, err)
			}
		})
	}
}

// TestFastCallStreamHeldOpen: a server that keeps a call's event stream
// open after the answer costs the call nothing: the answer goes on as it
// comes, the rest is waited for off the call's path, and the next call
// works (on a new connection: the held one is closed after drainWait, as
// TestH1ReleasedDrain shows).
func TestFastCallStreamHeldOpen(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	target, _ := url.Parse(srv.URL)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.URL.Path = target.Path }, FlushInterval: -1}
	release := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			select { // the answer went out; the stream's end waits
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}
	}))
	t.Cleanup(front.Close)
	t.Cleanup(func() { close(release) }) // before front.Close waits for the handlers
	c := setup(t, nil)
	tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": front.URL + "/mcp"}, Version: 1}
	for i := range 2 {
		start := time.Now()
		res := mustCall(t, c, tool, "echo", fmt.Sprintf(`{"i":%d}`, i))
		if want := fmt.Sprintf(`{"i":%d}`, i); string(res.Content) != want {
			t.Fatalf("echo %d = %s", i, res.Content)
		}
		if d := time.Since(start); d >= drainWait {
			t.Fatalf("call %d took %v: it waited for the stream's end (drainWait %v)", i, d, drainWait)
		}
	}
	if fastSessions(c) != 1 {
		t.Fatal("the calls did not take the fast path")
	}
}
