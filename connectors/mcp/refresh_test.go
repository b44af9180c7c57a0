package mcp

import (
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// How a connector's view of a server is refreshed: the discovery cache
// dropped by a tools/list_changed notice that comes on a call's own stream,
// and a session the server forgot replaced for requests other than the fast
// path's tools/call (TestSessionForgottenReconnects covers that one).

// slotOf returns the pooled slot of tool, or nil.
func slotOf(c *Connector, tool *connectors.Tool) *slot {
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	return c.pool.slots[slotKey{tool.ID, tool.Version}]
}

// wantFastPath fails unless tool's pooled session sends tools/call by the
// fast path (fast) or through the SDK (!fast).
func wantFastPath(t *testing.T, c *Connector, tool *connectors.Tool, fast bool) {
	t.Helper()
	s := slotOf(c, tool)
	if s == nil {
		t.Fatal("no pooled session")
	}
	if got := s.fast.Load() != nil; got != fast {
		t.Fatalf("fast path in use = %v, want %v", got, fast)
	}
}

// listed returns the names of tool's actions.
func listed(t *testing.T, c *Connector, tool *connectors.Tool) map[string]bool {
	t.Helper()
	actions, err := c.Actions(ctxFor(t, 10*time.Second), tool)
	if err != nil {
		t.Fatalf("Actions: %v", err)
	}
	out := map[string]bool{}
	for _, a := range actions {
		out[a.Name] = true
	}
	return out
}

// TestRefreshOnCallStreamNotice: a server whose tool list changed says so
// on the stream of the next tools/call it answers; the discovery cache is
// dropped then, and not before, on the fast path and through the SDK.
func TestRefreshOnCallStreamNotice(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		for _, sdk := range []bool{false, true} {
			t.Run(fmt.Sprintf("stateless=%v,sdk=%v", stateless, sdk), func(t *testing.T) {
				t.Parallel()
				srv, c, tool := counterSetup(t, mcptest.Options{Stateless: stateless, PageSize: 100},
					&Options{AllowPrivate: true, SDKCalls: sdk})
				if got := listed(t, c, tool); len(got) != mcptest.CounterTools || !got["dummy_05"] {
					t.Fatalf("first listing: %d actions, dummy_05 %v", len(got), got["dummy_05"])
				}

				// The change alone tells no one: the cached list stands.
				srv.DropTool("dummy_05")
				before := srv.Requests()
				if got := listed(t, c, tool); !got["dummy_05"] {
					t.Fatal("the cache was dropped without a notice")
				}
				if n := srv.Requests() - before; n != 0 {
					t.Fatalf("a cached listing made %d requests", n)
				}

				srv.AnnounceOnNextCall()
				res := mustCall(t, c, tool, "read_count", `{}`)
				if string(res.Content) != `{"count":0}` || res.IsError {
					t.Fatalf("the call carrying the notice answered %s (error %v)", res.Content, res.IsError)
				}
				wantFastPath(t, c, tool, !sdk)
				var got map[string]bool
				if !eventually(t, 2*time.Second, func() bool {
					got = listed(t, c, tool)
					return !got["dummy_05"]
				}) {
					t.Fatal("the notice on the call's stream did not drop the discovery cache")
				}
				if len(got) != mcptest.CounterTools-1 || !got["increment"] {
					t.Fatalf("after the notice: %d actions, increment %v", len(got), got["increment"])
				}
				if n := srv.Initializes(); n != 1 {
					t.Errorf("initializes = %d, want 1 (a notice is no reason to reconnect)", n)
				}
			})
		}
	}
}

// TestRefreshForgottenSessionActions: tools/list to a session the server
// forgot gets 404, which proves nothing ran; Actions lists again on a new
// session.
func TestRefreshForgottenSessionActions(t *testing.T) {
	t.Parallel()
	// A TTL of a nanosecond lists afresh every time.
	srv, c, tool := counterSetup(t, mcptest.Options{}, &Options{AllowPrivate: true, DiscoveryTTL: time.Nanosecond})
	if got := listed(t, c, tool); len(got) != mcptest.CounterTools {
		t.Fatalf("%d actions, want %d", len(got), mcptest.CounterTools)
	}
	old := slotOf(c, tool)

	srv.ForgetSessions()
	before := srv.Requests()
	if got := listed(t, c, tool); len(got) != mcptest.CounterTools {
		t.Fatalf("after the server forgot the session: %d actions, want %d", len(got), mcptest.CounterTools)
	}
	if srv.Requests() == before {
		t.Fatal("the second listing never reached the server")
	}
	if n := srv.Initializes(); n != 2 {
		t.Errorf("initializes = %d, want 2 (one reconnect)", n)
	}
	if s := slotOf(c, tool); s == nil || s == old {
		t.Error("the forgotten session is still pooled")
	}
	// The new session serves calls without another reconnect.
	mustCall(t, c, tool, "increment", `{}`)
	wantRuns(t, srv, "increment", 1, 2)
}

// TestRefreshForgottenSessionSDKCall mirrors TestSessionForgottenReconnects
// for tools/call sent through the SDK's client session.
func TestRefreshForgottenSessionSDKCall(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{}, &Options{AllowPrivate: true, SDKCalls: true})
	mustCall(t, c, tool, "increment", `{}`)
	wantFastPath(t, c, tool, false)

	// The 404 proves the call did not run: it is re-sent once on a new
	// session, and runs exactly once.
	srv.ForgetSessions()
	res := mustCall(t, c, tool, "increment", `{}`)
	if string(res.Content) != `{"count":2}` {
		t.Errorf("second increment answered %s, want {\"count\":2}", res.Content)
	}
	wantRuns(t, srv, "increment", 2, 2)
	wantFastPath(t, c, tool, false)
}
