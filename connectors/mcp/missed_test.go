package mcp

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
)

// streamCutter ends a server's standalone event streams when told to, as a
// proxy does that closes a connection idle for too long (nginx's
// proxy_read_timeout): the session lives on, its stream is reopened.
type streamCutter struct {
	mu   sync.Mutex
	cuts []context.CancelFunc
}

func (c *streamCutter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			c.mu.Lock()
			c.cuts = append(c.cuts, cancel)
			c.mu.Unlock()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// streams is how many standalone streams were opened.
func (c *streamCutter) streams() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cuts)
}

func (c *streamCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.cuts {
		cancel()
	}
}

// TestRefreshAfterMissedNotices: a server says its tool list changed on the
// session's standalone stream, so a notice sent while that stream was down
// (a proxy cut it, the server restarted and lost the session) never
// arrives. The cached list was kept for DiscoveryTTL regardless, and a call
// of a tool the server had added meanwhile was not_found for that long. Now
// a stream that reopens, and a session the server lost, drop it.
func TestRefreshAfterMissedNotices(t *testing.T) {
	t.Parallel()
	for name, miss := range map[string]func(*mcptest.Server, *streamCutter){
		"stream reopened":   func(_ *mcptest.Server, c *streamCutter) { c.cut() },
		"server restarted":  func(s *mcptest.Server, _ *streamCutter) { s.Restart() },
		"session forgotten": func(s *mcptest.Server, _ *streamCutter) { s.ForgetSessions() },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cutter := &streamCutter{}
			srv, c, tool := counterSetup(t, mcptest.Options{PageSize: 100, Wrap: cutter.Wrap}, &Options{AllowPrivate: true})
			if got := listed(t, c, tool); !got["dummy_05"] {
				t.Fatal("first listing: no dummy_05")
			}
			if !eventually(t, 5*time.Second, func() bool { return cutter.streams() > 0 }) {
				t.Fatal("the session never opened its standalone stream")
			}

			srv.DropTool("dummy_05") // a change whose notice is missed
			miss(srv, cutter)
			if name == "session forgotten" {
				// Nothing tells the client until it sends something: a call
				// meets the 404, and runs on a new session.
				mustCall(t, c, tool, "read_count", `{}`)
			}
			if !eventually(t, 5*time.Second, func() bool { return !listed(t, c, tool)["dummy_05"] }) {
				t.Fatal("the list cached before the notice was missed is still in use")
			}
		})
	}
}

// eventStreams answers every request with an empty event stream.
type eventStreams struct{}

func (eventStreams) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: http.NoBody, Request: req}, nil
}

// TestStreamReopenedNotResumed: of a session's standalone streams, the
// first is no news, and one resumed from an event ID loses nothing (the
// server replays what it sent meanwhile, as one that ends its stream for
// the client to poll does every few seconds); one opened afresh after
// either may have missed a notice.
func TestStreamReopenedNotResumed(t *testing.T) {
	t.Parallel()
	var reopened int
	rt := &roundTripper{base: eventStreams{}, target: &target{}, maxBytes: 1 << 20, reopened: func() { reopened++ }}
	for i, tc := range []struct {
		lastEventID string
		want        int
	}{{"", 0}, {"s_1", 0}, {"s_2", 0}, {"", 1}, {"", 2}} {
		req, _ := http.NewRequest(http.MethodGet, "http://mcp.example/mcp", nil)
		req.Header.Set(sessionHeader, "s")
		if tc.lastEventID != "" {
			req.Header.Set("Last-Event-ID", tc.lastEventID)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if reopened != tc.want {
			t.Fatalf("stream %d (Last-Event-ID %q): reopened %d times, want %d", i+1, tc.lastEventID, reopened, tc.want)
		}
	}
}
