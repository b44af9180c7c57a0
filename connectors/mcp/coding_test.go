package mcp

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// codingServer is a hand-written MCP server: a session per initialize,
// one tool "act" whose calls onCall answers (n counts them from 1), and
// GETs (a stream's resumption) onGet answers when set.
type codingServer struct {
	onCall func(w http.ResponseWriter, id string, n int)
	onGet  func(w http.ResponseWriter, r *http.Request)

	mu           sync.Mutex
	inits, calls int
	gets         int
	lastID       string
}

func (s *codingServer) counts() (inits, calls, gets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inits, s.calls, s.gets
}

func (s *codingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && s.onGet != nil && r.Header.Get("Last-Event-ID") != "" {
		s.mu.Lock()
		s.gets++
		s.mu.Unlock()
		s.onGet(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &m)
	w.Header().Set("Content-Type", "application/json")
	switch m.Method {
	case "initialize":
		s.mu.Lock()
		s.inits++
		w.Header().Set("Mcp-Session-Id", fmt.Sprint("s-", s.inits))
		s.mu.Unlock()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"coding","version":"1"}}}`,
			m.ID, m.Params.ProtocolVersion)
	case "tools/list":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"act","inputSchema":{"type":"object"}}]}}`, m.ID)
	case "tools/call":
		s.mu.Lock()
		s.calls++
		n := s.calls
		s.lastID = string(m.ID)
		s.mu.Unlock()
		s.onCall(w, string(m.ID), n)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func (s *codingServer) start(t *testing.T) *connectors.Tool {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": hs.URL}, Version: 1}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.Bytes()
}

func okAnswer(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]}}`
}

// sdkOnly sends c's calls through the SDK from now on.
func sdkOnly(c *Connector) {
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	for _, s := range c.pool.slots {
		s.fast.Store(nil)
	}
}

// TestLostSessionAnswered400: the TypeScript example server's 400 for a
// session it lost, and the TypeScript transport's own when one transport
// serves the whole process and was started afresh (it refuses every request
// until an initialize), gzipped or not, on either path, get a new session
// and the call sent once more (it did not run); a 400 whose JSON-RPC error
// answers our request, even one about a "session" of the tool's own, is
// not sent again.
func TestLostSessionAnswered400(t *testing.T) {
	t.Parallel()
	for shape, lost := range map[string]string{
		"example":   `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`,
		"transport": `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`,
	} {
		for _, path := range []string{"fast", "sdk"} {
			for _, enc := range []string{"gzip", "identity"} {
				t.Run(shape+"/"+path+"/"+enc, func(t *testing.T) {
					t.Parallel()
					srv := &codingServer{onCall: func(w http.ResponseWriter, id string, n int) {
						if n > 1 {
							io.WriteString(w, okAnswer(id))
							return
						}
						body := []byte(lost)
						if enc == "gzip" {
							w.Header().Set("Content-Encoding", "gzip")
							body = gzipped(lost)
						}
						w.WriteHeader(http.StatusBadRequest)
						w.Write(body)
					}}
					tool := srv.start(t)
					c := setup(t, nil)
					if _, err := c.Actions(ctxFor(t, 10*time.Second), tool); err != nil {
						t.Fatal(err)
					}
					if path == "sdk" {
						sdkOnly(c)
					}
					res, err := c.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
					inits, calls, _ := srv.counts()
					if err != nil || string(res.Content) != `{"ok":true}` || inits != 2 || calls != 2 {
						t.Fatalf("result %s, %v; %d sessions, %d calls; want the call sent again on a new session", res.Content, err, inits, calls)
					}
				})
			}
		}
	}
	t.Run("an error for our request", func(t *testing.T) {
		t.Parallel()
		srv := &codingServer{onCall: func(w http.ResponseWriter, id string, _ int) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"upstream browser session closed"}}`)
		}}
		tool := srv.start(t)
		c := setup(t, nil)
		_, err := c.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
		wantKind(t, err, connectors.KindUpstreamRefused)
		if _, calls, _ := srv.counts(); calls != 1 {
			t.Fatalf("sent %d times, want once", calls)
		}
	})
	t.Run("an application's not initialized or session", func(t *testing.T) {
		t.Parallel()
		// A server's own 400 for a tool that failed part way, in words
		// like a transport's but not its refusal: it may have acted.
		for _, body := range []string{
			`{"error":"Bad Request: ledger client not initialized"}`,
			`Bad Request: Server not initialized`,
			`Bad Request: browser session crashed`,
			`Bad Request: the user's session expired after the order was placed`,
		} {
			srv := &codingServer{onCall: func(w http.ResponseWriter, _ string, _ int) {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, body)
			}}
			tool := srv.start(t)
			c := setup(t, nil)
			_, err := c.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
			wantKind(t, err, connectors.KindUpstreamRefused)
			if _, calls, _ := srv.counts(); calls != 1 {
				t.Fatalf("%s: sent %d times, want once", body, calls)
			}
		}
	})
}

// TestFastCallReadsGzip: a server may gzip an answer to a request that
// names no coding (RFC 9110), and some behind compressing proxies do. The
// SDK's path read it; the fast path took it for an unknown outcome
// although the tool had run. A small body that expands past the limit is
// the usual result_too_large.
func TestFastCallReadsGzip(t *testing.T) {
	t.Parallel()
	gzipAnswer := func(ct, body string) func(http.ResponseWriter, string, int) {
		return func(w http.ResponseWriter, id string, _ int) {
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzipped(strings.ReplaceAll(body, "ID", id)))
		}
	}
	for name, srv := range map[string]*codingServer{
		"json":         {onCall: gzipAnswer("application/json", okAnswer("ID"))},
		"event stream": {onCall: gzipAnswer("text/event-stream", "event: message\ndata: "+okAnswer("ID")+"\n\n")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool := srv.start(t)
			conn := setup(t, nil)
			res, err := conn.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
			if err != nil || res.IsError || string(res.Content) != `{"ok":true}` {
				t.Fatalf("result %s (error %v), %v", res.Content, res.IsError, err)
			}
			if fastSessions(conn) != 1 {
				t.Fatalf("fast sessions %d", fastSessions(conn))
			}
		})
	}
	t.Run("expanding past the limit", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("x", 64<<10)
		srv := &codingServer{onCall: gzipAnswer("application/json",
			`{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"`+big+`"}]}}`)}
		tool := srv.start(t)
		conn := setup(t, &Options{AllowPrivate: true, MaxResponseBytes: 16 << 10}) // 64 KiB gzips to far less
		res, err := conn.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
		if err != nil || !res.IsError || !strings.Contains(string(res.Content), "result_too_large") {
			t.Fatalf("result %s (error %v), %v; want result_too_large", res.Content, res.IsError, err)
		}
	})
}

// TestGzippedStreams: a gzipped event stream that ends early is resumed
// and the resumption, gzipped too, read; one whose answer expands past the
// limit is result_too_large, not resumed (it had event IDs) into an
// unknown outcome.
func TestGzippedStreams(t *testing.T) {
	t.Parallel()
	stream := func(w http.ResponseWriter, events string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped(events))
	}
	t.Run("resumed", func(t *testing.T) {
		t.Parallel()
		srv := &codingServer{}
		srv.onCall = func(w http.ResponseWriter, _ string, _ int) { stream(w, "id: e1\ndata: \n\n") }
		srv.onGet = func(w http.ResponseWriter, _ *http.Request) {
			srv.mu.Lock()
			id := srv.lastID
			srv.mu.Unlock()
			stream(w, "id: e2\nevent: message\ndata: "+okAnswer(id)+"\n\n")
		}
		tool := srv.start(t)
		c := setup(t, nil)
		res, err := c.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
		if _, _, gets := srv.counts(); err != nil || string(res.Content) != `{"ok":true}` || gets != 1 || fastSessions(c) != 1 {
			t.Fatalf("result %s, %v; %d resumptions, fast sessions %d", res.Content, err, gets, fastSessions(c))
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("x", 64<<10)
		srv := &codingServer{onCall: func(w http.ResponseWriter, id string, _ int) {
			stream(w, "id: e1\ndata: \n\nid: e2\nevent: message\ndata: "+
				`{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"`+big+`"}]}}`+"\n\n")
		}}
		tool := srv.start(t)
		c := setup(t, &Options{AllowPrivate: true, MaxResponseBytes: 16 << 10})
		res, err := c.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
		if err != nil || !res.IsError || !strings.Contains(string(res.Content), "result_too_large") {
			t.Fatalf("result %s, %v; want result_too_large", res.Content, err)
		}
	})
}

func TestLostSession(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`: true,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}`:           true,
		`Bad Request: Session not found`: true,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`: true,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`:    false,
		// "not initialized" is the TypeScript transport's refusal only in its
		// own shape: elsewhere it is any code's error, perhaps after a tool
		// acted (its database client, say), and must not send a call again.
		`Bad Request: Server not initialized`:                                                                      false,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`:                false,
		`{"error":"payment client not initialized"}`:                                                               false,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"ledger not initialized"},"id":null}`:                   false,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"write done; Server not initialized"},"id":null}`:       false,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"bad request: server NOT initialized"},"id":null}`:      true,
		`{"jsonrpc":"2.0","id":7,"error":"session expired"}`:                                                       false,
		`{"jsonrpc":"2.0","id":1099511627777,"error":{"code":-32603,"message":"upstream browser session closed"}}`: false,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"session expired"}}`:                           false,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: invalid protocol version"},"id":null}`:    false,
		// Words a tool's own failure may use, perhaps after it acted: a
		// session it holds, not ours.
		`Bad Request: browser session crashed`:                                                   false,
		`{"error":"upstream session closed after the write"}`:                                    false,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"session pool exhausted"},"id":null}`: false,
		`Bad Request: Missing session ID`:                                                        true,
		`Bad Request: Mcp-Session-Id header is required`:                                         true,
		`{"error":"invalid or expired session"}`:                                                 true,
		`Invalid session`:                                                                        true,
		`{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session has expired"},"id":null}`:    true,
		// The SDKs' and their examples' refusals, whole or in a sentence.
		`Bad Request: No valid session ID provided`:                                                                true,
		`Bad Request: GET requires an Mcp-Session-Id header`:                                                       true,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Not Found: Invalid or expired session ID"},"id":null}`: true,
		`{"error":"Missing or invalid session ID"}`:                                                                true,
		`Bad request: missing session ID or not an initialize request`:                                             true,
		`{"message":"Session not found."}`:                                                                         true,
		// A session's loss in a tool's own words, a session it holds: it
		// may have acted before it failed.
		`Bad Request: the user's session expired after the order was placed`:                           false,
		`{"error":"upstream login session expired"}`:                                                   false,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"websocket session terminated"},"id":null}`: false,
		`Bad Request: payment session unknown`:                                                         false,
		`{"error":"invalid session token for the CRM"}`:                                                false,
		`Bad Request: checkout_session_id is required`:                                                 false,
		`no session cookie from the upstream login`:                                                    false,
		``: false,
	} {
		if got := lostSession([]byte(body)); got != want {
			t.Errorf("lostSession(%s) = %v, want %v", body, got, want)
		}
	}
}
