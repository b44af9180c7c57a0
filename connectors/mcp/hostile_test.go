package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// hostileServer is a stateful MCP server written by hand: it answers
// initialize, tools/list (one tool "act", not retryable) and notifications
// itself and hands each tools/call, and every GET, to onCall / onGet.
type hostileServer struct {
	onCall func(w http.ResponseWriter, r *http.Request, id string)
	onGet  func(w http.ResponseWriter, r *http.Request)
	calls  atomic.Int32
	url    string
}

func startHostile(t *testing.T, s *hostileServer) *connectors.Tool {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": hs.URL + "/mcp"}, Version: 1}
}

func (s *hostileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if s.onGet != nil {
			s.onGet(w, r)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	_ = json.Unmarshal(b, &m)
	w.Header().Set("Mcp-Session-Id", "s-1")
	switch {
	case m.Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"audit","version":"1"}}}`,
			m.ID, m.Params.ProtocolVersion)
	case m.Method == "tools/list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"act","inputSchema":{"type":"object"}}]}}`, m.ID)
	case m.Method == "tools/call":
		s.calls.Add(1)
		s.onCall(w, r, string(m.ID))
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestHostileEndlessResponseHead: a server that answers tools/call with a
// response head that never ends (one header line growing forever) must not
// get more than a bounded amount of it read, on either path: net/http's
// Transport stops at MaxResponseHeaderBytes (10 MiB by default). The fast
// path's h1 transport hands any head over 8 KiB to http.ReadResponse, which
// reads it without a limit until the call's deadline.
func TestHostileEndlessResponseHead(t *testing.T) {
	const serverStop = 256 << 20 // the server gives up after 256 MiB, to spare the machine
	for name, sdk := range paths {
		for shape, unit := range map[string]string{
			"one long line":  strings.Repeat("a", 32<<10),
			"endless fields": strings.Repeat("X-Junk: a\r\n", 3000),
		} {
			t.Run(name+"/"+shape, func(t *testing.T) {
				var written atomic.Int64
				s := &hostileServer{onCall: func(w http.ResponseWriter, _ *http.Request, _ string) {
					conn, bw, err := http.NewResponseController(w).Hijack()
					if err != nil {
						return
					}
					defer conn.Close()
					bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
					if shape == "one long line" {
						bw.WriteString("X-Long: ")
					}
					for written.Load() < serverStop {
						n, err := bw.WriteString(unit)
						written.Add(int64(n))
						if err != nil {
							return
						}
					}
				}}
				tool := startHostile(t, s)
				c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk, MaxResponseBytes: 1 << 20})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := c.Call(ctx, tool, "act", json.RawMessage(`{}`))
				if err == nil {
					t.Fatal("the call succeeded")
				}
				wantKind(t, err, connectors.KindOutcomeUnknown)
				if n := written.Load(); n > 32<<20 {
					t.Errorf("the client read %d MiB of one response head (limit of a response: 1 MiB)", n>>20)
				}
			})
		}
	}
}

// TestHostileRedirectToAnUncappedStream: a server that answers tools/call
// with 303 See Other has the client GET the Location; answered 200
// text/event-stream, the round tripper takes that GET for the session's
// standalone stream and leaves its body uncapped. An event whose data
// lines never end then grows without bound on the fast path (its scanner
// bounds a line, not an event), until the call's deadline.
func TestHostileRedirectToAnUncappedStream(t *testing.T) {
	const serverStop = 256 << 20
	for name, sdk := range paths {
		t.Run(name, func(t *testing.T) {
			var written atomic.Int64
			line := "data: " + strings.Repeat("a", 32<<10) + "\n"
			s := &hostileServer{
				onCall: func(w http.ResponseWriter, r *http.Request, _ string) {
					http.Redirect(w, r, "/elsewhere", http.StatusSeeOther)
				},
				onGet: func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/elsewhere" {
						w.WriteHeader(http.StatusMethodNotAllowed)
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					for written.Load() < serverStop {
						n, err := io.WriteString(w, line)
						written.Add(int64(n))
						if err != nil {
							return
						}
					}
				},
			}
			tool := startHostile(t, s)
			c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk, MaxResponseBytes: 1 << 20})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := c.Call(ctx, tool, "act", json.RawMessage(`{}`))
			t.Logf("result %s, error %v", res.Content, err)
			if n := written.Load(); n > 32<<20 {
				t.Errorf("the client read %d MiB of the answer (limit: 1 MiB)", n>>20)
			}
		})
	}
}

// TestHostileNotFoundOnResumeIsUnknown: a call whose stream the server
// accepted (200, an event ID) and then cut, and whose resumption the
// server answers 404 (session gone), was sent and may have run: its outcome
// is unknown, and it is not sent again.
func TestHostileNotFoundOnResumeIsUnknown(t *testing.T) {
	for name, sdk := range paths {
		t.Run(name, func(t *testing.T) {
			s := &hostileServer{
				onCall: func(w http.ResponseWriter, _ *http.Request, _ string) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, "id: e1\ndata: \n\n")
				},
				onGet: func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("Last-Event-ID") != "" {
						http.Error(w, "Session not found", http.StatusNotFound)
						return
					}
					w.WriteHeader(http.StatusMethodNotAllowed)
				},
			}
			tool := startHostile(t, s)
			c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk})
			_, err := c.Call(ctxFor(t, 10*time.Second), tool, "act", json.RawMessage(`{}`))
			wantKind(t, err, connectors.KindOutcomeUnknown)
			if n := s.calls.Load(); n != 1 {
				t.Errorf("tools/call sent %d times, want 1", n)
			}
		})
	}
}

// TestHostileEndlessInterimResponses: a server that answers with 1xx
// interim responses forever ends the call at its deadline, as an unknown
// outcome, and nothing grows meanwhile.
func TestHostileEndlessInterimResponses(t *testing.T) {
	for name, sdk := range paths {
		t.Run(name, func(t *testing.T) {
			s := &hostileServer{onCall: func(w http.ResponseWriter, _ *http.Request, _ string) {
				conn, bw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				for i := 0; i < 1<<22; i++ {
					if _, err := bw.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"); err != nil {
						return
					}
				}
			}}
			tool := startHostile(t, s)
			c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			_, err := c.Call(ctx, tool, "act", json.RawMessage(`{}`))
			wantKind(t, err, connectors.KindOutcomeUnknown)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestHostileFramingOddities: answers with odd framing end with a result or a
// typed error, in bounded time, each classified by what is known.
func TestHostileFramingOddities(t *testing.T) {
	answer := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]}}`
	}
	cases := map[string]struct {
		raw  func(id string) string
		want string // "ok", or a Kind
	}{
		"http/1.0 no length": {func(id string) string {
			return "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + answer(id)
		}, "ok"},
		"100 continue first": {func(id string) string {
			return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
				fmt.Sprint(len(answer(id))) + "\r\n\r\n" + answer(id)
		}, "ok"},
		"te and cl": {func(id string) string {
			a := answer(id)
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(a), a)
		}, "ok"},
		"cl too long": {func(id string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
		"cl too short": {func(id string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
		"bad chunk size": {func(id string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
		"huge chunk size": {func(id string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffff\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
		"huge content-length": {func(id string) string {
			return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9223372036854775807\r\n\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
		"204 with body": {func(id string) string {
			return "HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\n\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
		"other id": {func(id string) string {
			a := answer(`"zz"`)
			return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(a), a)
		}, string(connectors.KindOutcomeUnknown)},
		"101 switching": {func(id string) string {
			return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n" + answer(id)
		}, string(connectors.KindOutcomeUnknown)},
	}
	for name, sdk := range paths {
		for cname, tc := range cases {
			t.Run(name+"/"+cname, func(t *testing.T) {
				s := &hostileServer{onCall: func(w http.ResponseWriter, _ *http.Request, id string) {
					conn, bw, err := http.NewResponseController(w).Hijack()
					if err != nil {
						return
					}
					bw.WriteString(tc.raw(id))
					bw.Flush()
					if strings.HasPrefix(cname, "http/1.0") {
						conn.Close() // its body ends at the close
						return
					}
					// Hold the connection (a Content-Length too long waits).
					go func() { time.Sleep(4 * time.Second); conn.Close() }()
				}}
				tool := startHostile(t, s)
				c := setup(t, &Options{AllowPrivate: true, SDKCalls: sdk})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				start := time.Now()
				res, err := c.Call(ctx, tool, "act", json.RawMessage(`{}`))
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("took %v", d)
				}
				if tc.want == "ok" {
					if err != nil || string(res.Content) != `{"ok":true}` {
						t.Errorf("got %s, %v; want the answer", res.Content, err)
					}
				} else if err == nil {
					t.Errorf("got the result %s (is_error %v), want %s", res.Content, res.IsError, tc.want)
				} else {
					wantKind(t, err, connectors.Kind(tc.want))
				}
				if n := s.calls.Load(); n != 1 {
					t.Errorf("tools/call sent %d times", n)
				}
			})
		}
	}
}

// TestHostileEgressAddressForms: every spelling of a loopback or unspecified
// address in a URL is refused before anything is sent.
func TestHostileEgressAddressForms(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				br := bufio.NewReader(conn)
				br.ReadString('\n')
				conn.Close()
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	c := setup(t, &Options{AllowPrivate: false})
	for i, host := range []string{"127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1",
		"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "0.0.0.0", "0", "[::]", "[::1]", "localhost", "localhost.", "[0:0:0:0:0:ffff:127.0.0.1]",
		"127.0.0.1.nip.io"} {
		tool := &connectors.Tool{ID: int64(10 + i), AccountID: 1, Entry: customEntry, Version: 1,
			Config: map[string]string{"url": fmt.Sprintf("http://%s:%d/mcp", host, port)}}
		_, err := call(t, c, tool, "act", `{}`)
		if got := connectors.KindOf(err); got != connectors.KindUnreachable {
			t.Errorf("%s: kind %s (%v)", host, got, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback server accepted %d connections", n)
	}
}

// TestHostileSwitchingProtocolsHeld: a server that answers 101 Switching
// Protocols to a POST and then holds the connection open must not hold the
// request past its deadline. net/http hands a 101's connection over as the
// body, which the request's context no longer governs, and the round
// tripper reads the start of every non-2xx body (for classify) from it.
func TestHostileSwitchingProtocolsHeld(t *testing.T) {
	// switching answers 101 and holds the connection for 7s, past every bound checked.
	switching := func(*testing.T) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			bw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
			bw.Flush()
			<-time.After(7 * time.Second)
		}
	}
	within := func(t *testing.T, d time.Duration, what string, f func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			t.Logf("%s: %v", what, err)
		case <-time.After(d):
			t.Errorf("%s is still running after %v, past its deadline", what, d)
		}
	}
	t.Run("sdk call", func(t *testing.T) {
		answer := switching(t)
		s := &hostileServer{onCall: func(w http.ResponseWriter, _ *http.Request, _ string) { answer(w) }}
		tool := startHostile(t, s)
		c := setup(t, &Options{AllowPrivate: true, SDKCalls: true})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		within(t, 5*time.Second, "a call with a 1s deadline", func() error {
			_, err := c.Call(ctx, tool, "act", json.RawMessage(`{}`))
			wantKind(t, err, connectors.KindOutcomeUnknown) // sent, then no answer
			return err
		})
	})
	t.Run("verify", func(t *testing.T) {
		answer := switching(t)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
		t.Cleanup(hs.Close)
		c := setup(t, &Options{AllowPrivate: true, ConnectTimeout: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		within(t, 5*time.Second, "Verify with a 1s deadline", func() error {
			return c.Verify(ctx, customEntry, map[string]string{"url": hs.URL + "/mcp"})
		})
	})
	t.Run("session connect", func(t *testing.T) {
		answer := switching(t)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
		t.Cleanup(hs.Close)
		c := setup(t, &Options{AllowPrivate: true, ConnectTimeout: time.Second, DiscoveryTimeout: time.Second})
		tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: map[string]string{"url": hs.URL + "/mcp"}, Version: 1}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := c.Actions(ctx, tool)
		t.Logf("actions: %v", err)
		// ConnectTimeout (1s) has passed: the slot's connect must have ended.
		c.pool.mu.Lock()
		pooled := c.pool.slots[slotKey{1, 1}] != nil
		c.pool.mu.Unlock()
		if pooled {
			t.Errorf("the session is still connecting 3s after its 1s ConnectTimeout: every caller waits out its deadline")
		}
		within(t, 5*time.Second, "the Connector's Close", c.Close)
	})
}
