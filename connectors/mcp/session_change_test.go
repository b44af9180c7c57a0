package mcp

import (
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
)

// How the pool meets a server that replaced the session it serves us by
// naming another session ID in an answer.

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
