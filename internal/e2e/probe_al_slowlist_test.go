package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// alListGate delays (or, with hang, holds until the client gives up) every
// tools/list while on is set.
type alListGate struct {
	on    atomic.Bool
	hang  bool
	delay time.Duration
}

func (g *alListGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.on.Load() && r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if bytes.Contains(b, []byte(`"tools/list"`)) {
				if g.hang {
					<-r.Context().Done()
					return
				}
				select {
				case <-time.After(g.delay):
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestProbeALSlowListHoldsOthers: an agent's list is built anew once its
// TTL has passed, and the build waited for every tool's actions. So when
// one tool's cached list ran out (the connector's 60 s, or a
// tools/list_changed notice) and its server was slow to list again, every
// request to the agent waited for it: a tools/call of another tool, and
// tools/list, held up to discoveryWait (5 s). A tool with a list already
// now keeps it while the new one is read; only a tool never listed is
// waited for.
func TestProbeALSlowListHoldsOthers(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	fast := mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: true, PageSize: 100})
	gate := &alListGate{hang: true}
	slow := mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: true, PageSize: 100, Wrap: gate.wrap})
	fastID := mqConnect(t, srv, "fast", map[string]any{"url": fast.URL})
	slowID := mqConnect(t, srv, "slow", map[string]any{"url": slow.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "al", "tools": []int64{fastID, slowID}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	path := fmt.Sprintf("/api/v1/agents/%d/mcp", int64(r.JSON()["id"].(float64)))
	hdr := []string{"Accept", "application/json, text/event-stream"}
	list := func() (string, time.Duration) {
		t0 := time.Now()
		r := srv.Do("POST", path, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, hdr...)
		if r.Status != 200 {
			t.Fatalf("tools/list: %d %s", r.Status, r.Body)
		}
		return string(r.Body), time.Since(t0)
	}
	if body, _ := list(); !strings.Contains(body, `"slow__read_count"`) || !strings.Contains(body, `"fast__read_count"`) {
		t.Fatalf("the agent lists %s", body)
	}

	// The slow tool's server says its list changed, and from then on
	// does not answer tools/list.
	slow.AnnounceOnNextCall()
	if r := mqCall(srv, slowID, "read_count", nil, ""); r.Status != 200 {
		t.Fatalf("slow call: %d %s", r.Status, r.Body)
	}
	gate.on.Store(true)
	t.Cleanup(func() { gate.on.Store(false) })
	time.Sleep(1200 * time.Millisecond) // the agent's list (QUIVER_CACHE_TTL 1s) has run out

	t0 := time.Now()
	c := srv.Do("POST", path, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fast__read_count","arguments":{}}}`, hdr...)
	took := time.Since(t0)
	if c.Status != 200 || !strings.Contains(string(c.Body), "quiver/call_id") {
		t.Fatalf("fast call: %d %s", c.Status, c.Body)
	}
	if took > 2*time.Second {
		t.Errorf("a call of the fast tool took %v: it waited for the other tool's list", took.Round(time.Millisecond))
	}
	body, took := list()
	if took > 2*time.Second {
		t.Errorf("tools/list took %v", took.Round(time.Millisecond))
	}
	if !strings.Contains(body, `"slow__read_count"`) || !strings.Contains(body, `"fast__read_count"`) {
		t.Errorf("while its server does not list, the agent lists %s", body)
	}
}
