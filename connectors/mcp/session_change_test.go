package mcp

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// How the pool meets a server that replaced the session it serves us: by
// naming another session ID in an answer, or by answering 404.

// paths are the two ways a tools/call is sent.
var paths = map[string]bool{"fast": false, "sdk": true}

// TestSessionReplacedByTheServer: a server that names a session other than
// ours in an answer has replaced our session. Through the SDK that answer
// failed ("mismatching session IDs"): a call that ran was an unknown outcome
// (504) and broke the session, so that the next call had to find it broken
// first; a server that issues a session per call made every call 504. Now
// the answer is the call's outcome and the session is retired at once: the
// next call opens a fresh one. The fast path never looked at the header.
func TestSessionReplacedByTheServer(t *testing.T) {
	t.Parallel()
	for name, sdk := range paths {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			replacer := &mcptest.SessionReplacer{}
			srv, c, tool := counterSetup(t, mcptest.Options{Wrap: replacer.Wrap}, &Options{AllowPrivate: true, SDKCalls: sdk})
			mustCall(t, c, tool, "increment", `{}`)
			first := slotOf(c, tool)

			replacer.Replace()
			res, err := call(t, c, tool, "increment", `{}`)
			if err != nil || string(res.Content) != `{"count":2}` {
				t.Fatalf("the call answered in a replaced session: %s, %v; want its answer, {\"count\":2}", res.Content, err)
			}
			if replacer.Issued() != 1 {
				t.Fatalf("the server replaced %d sessions, want 1", replacer.Issued())
			}
			if sdk {
				if s := slotOf(c, tool); s == first || s != nil {
					t.Fatal("the replaced session is still pooled")
				}
				mustCall(t, c, tool, "increment", `{}`)
				wantRuns(t, srv, "increment", 3, 2)
				return
			}
			mustCall(t, c, tool, "increment", `{}`)
			wantRuns(t, srv, "increment", 3, 1)
		})
	}
}

// TestSessionReplacedOnListing: the SDK's own requests (tools/list here)
// meet a replaced session on either path. The listing failed and broke the
// session; now it is answered, and the next call opens a fresh session.
func TestSessionReplacedOnListing(t *testing.T) {
	t.Parallel()
	replacer := &mcptest.SessionReplacer{Method: "tools/list"}
	srv, c, tool := counterSetup(t, mcptest.Options{Wrap: replacer.Wrap, PageSize: 100}, nil)
	replacer.Replace()
	if !listed(t, c, tool)["increment"] {
		t.Fatal("increment is not listed")
	}
	if replacer.Issued() != 1 || slotOf(c, tool) != nil {
		t.Fatalf("replaced %d sessions, pooled %v; want 1 replaced and retired", replacer.Issued(), slotOf(c, tool) != nil)
	}
	mustCall(t, c, tool, "increment", `{}`)
	wantRuns(t, srv, "increment", 1, 2)
}

// TestSessionPerCall: a gateway that names a new session in the answer to
// every call. Each call has its answer and runs once.
func TestSessionPerCall(t *testing.T) {
	t.Parallel()
	for name, sdk := range paths {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			replacer := &mcptest.SessionReplacer{EveryCall: true}
			srv, c, tool := counterSetup(t, mcptest.Options{Wrap: replacer.Wrap, JSONResponse: true}, &Options{AllowPrivate: true, SDKCalls: sdk})
			for i := range 3 {
				res, err := call(t, c, tool, "increment", `{}`)
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				if want := `{"count":` + string(rune('1'+i)) + `}`; string(res.Content) != want {
					t.Fatalf("call %d answered %s, want %s", i+1, res.Content, want)
				}
			}
			if n := srv.Calls("increment"); n != 3 {
				t.Errorf("increment ran %d times, want 3", n)
			}
		})
	}
}

// TestNotFoundAnsweringTheCallIsNotResent: a 404 whose JSON-RPC error
// answers our request's own ID is the server's answer to it, not news of a
// lost session, and may come after the tool acted (a server that gives its
// tools' errors HTTP statuses). It was taken for a lost session and the
// call sent again: a non-retryable action ran twice. Now it is sent once;
// the session stays.
func TestNotFoundAnsweringTheCallIsNotResent(t *testing.T) {
	t.Parallel()
	for name, sdk := range paths {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			nf := &mcptest.NotFoundCalls{AfterActing: true, Times: 1,
				Body: `{"jsonrpc":"2.0","id":{id},"error":{"code":-32002,"message":"Invoice not found"}}`}
			srv, c, tool := counterSetup(t, mcptest.Options{Wrap: nf.Wrap}, &Options{AllowPrivate: true, SDKCalls: sdk})
			_, err := call(t, c, tool, "increment", `{}`)
			wantRuns(t, srv, "increment", 1, 1)
			wantKind(t, err, connectors.KindUpstreamRefused)
			mustCall(t, c, tool, "increment", `{}`)
			wantRuns(t, srv, "increment", 2, 1)
		})
	}
}

// TestNotFoundLostSessionShapes: the SDKs' answers to a session they do not
// know (the Go SDK's plain text, TypeScript's JSON-RPC error with a null
// ID, Python's with an ID of its own) get a new session and the call sent
// once more.
func TestNotFoundLostSessionShapes(t *testing.T) {
	t.Parallel()
	for name, sdk := range paths {
		for shape, body := range map[string]string{
			"go":         "",
			"typescript": `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`,
			"python":     `{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Not Found: Session has been terminated"}}`,
		} {
			t.Run(name+"/"+shape, func(t *testing.T) {
				t.Parallel()
				nf := &mcptest.NotFoundCalls{Body: body, Times: 1}
				srv, c, tool := counterSetup(t, mcptest.Options{Wrap: nf.Wrap}, &Options{AllowPrivate: true, SDKCalls: sdk})
				res, err := call(t, c, tool, "increment", `{}`)
				if err != nil || string(res.Content) != `{"count":1}` {
					t.Fatalf("result %s, %v; want the call sent again on a new session", res.Content, err)
				}
				wantRuns(t, srv, "increment", 1, 2)
			})
		}
	}
}

// TestNotFoundWithoutASessionIsNotResent: a stateless server's session has
// no ID, and a 404 to a request that carried none says nothing of a
// session. The SDK takes up a session ID a stateless server sends late
// (here on tools/list), while the fast path goes on without one; the 404
// was judged by the SDK's ID, not the request's, and the call sent again
// after the tool had acted.
func TestNotFoundWithoutASessionIsNotResent(t *testing.T) {
	t.Parallel()
	nf := &mcptest.NotFoundCalls{AfterActing: true, Times: 1}
	late := func(next http.Handler) http.Handler {
		return nf.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/list"`)) {
				w.Header().Set("Mcp-Session-Id", "late")
			}
			next.ServeHTTP(w, r)
		}))
	}
	srv, c, tool := counterSetup(t, mcptest.Options{Stateless: true, Wrap: late}, nil)
	if _, err := c.Actions(ctxFor(t, 10*time.Second), tool); err != nil {
		t.Fatal(err)
	}
	wantFastPath(t, c, tool, true)
	if id := slotOf(c, tool).sess.ID(); id != "late" {
		t.Fatalf("the SDK's session ID is %q, want it to have taken up %q", id, "late")
	}
	_, err := call(t, c, tool, "increment", `{}`)
	wantRuns(t, srv, "increment", 1, 1)
	wantKind(t, err, connectors.KindUpstreamRefused)
}
