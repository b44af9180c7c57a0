package mcpserver

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// gatedListing lists as listing does, but a tool with a gate waits for it
// to open (or for its context) first.
type gatedListing struct {
	listing
	mu    sync.Mutex
	gates map[int64]chan struct{}
	asked map[int64]int
}

func (g *gatedListing) Actions(ctx context.Context, account, id int64) (*toolconfig.Resolved, []connectors.Action, error) {
	g.mu.Lock()
	g.asked[id]++
	gate := g.gates[id]
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return g.listing.Actions(ctx, account, id)
}

func (g *gatedListing) askedOf(id int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked[id]
}

// TestMCPSlowListingHoldsNoOne: a tool listed before keeps its list while
// it is listed anew, so a build (and every request to the agent) does not
// wait for its server; one listing of it runs at a time, however many
// builds come; its new list shows once it ends.
func TestMCPSlowListingHoldsNoOne(t *testing.T) {
	f, _ := setup(t)
	g := &gatedListing{listing: listing{f}, gates: map[int64]chan struct{}{}, asked: map[int64]int{}}
	s := New(Options{Agents: f, Tools: f, Actions: g, Calls: engineFunc(f.CallEngine), ListTTL: 20 * time.Millisecond})
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	cs := connect(t, hs.URL+"/api/v1/agents/7/mcp")
	if names := listNames(t, cs); names["My_Mail_12__read"] == nil || names["My_Mail__read"] == nil {
		t.Fatalf("names = %v", names)
	}

	gate := make(chan struct{})
	g.mu.Lock()
	g.gates[12] = gate
	g.mu.Unlock()
	before := g.askedOf(12)
	for range 5 {
		time.Sleep(30 * time.Millisecond) // past the list's TTL
		t0 := time.Now()
		names := listNames(t, cs)
		if took := time.Since(t0); took > time.Second {
			t.Fatalf("tools/list waited %v for a tool listed before", took)
		}
		if names["My_Mail_12__read"] == nil || names["My_Mail__read"] == nil {
			t.Fatalf("while tool 12 lists anew: names = %v", names)
		}
	}
	if n := g.askedOf(12) - before; n != 1 {
		t.Errorf("tool 12 was listed %d times over five builds, want once at a time", n)
	}

	f.mu.Lock()
	f.actions = append(f.actions[:len(f.actions):len(f.actions)], connectors.Action{Name: "extra", Retryable: true})
	f.mu.Unlock()
	close(gate)
	deadline := time.Now().Add(5 * time.Second)
	for listNames(t, cs)["My_Mail_12__extra"] == nil {
		if time.Now().After(deadline) {
			t.Fatal("tool 12's new list never showed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMCPFailedToolRetryHoldsNoOne: a tool whose server failed to list it
// is left out and asked again once retryDiscovery has passed; that retry
// used to hold up the build, and every request to the agent, for as long
// as the server took (discoveryWait at most). It now runs in the
// background, and the tool shows once it succeeds.
func TestMCPFailedToolRetryHoldsNoOne(t *testing.T) {
	f, _ := setup(t)
	g := &gatedListing{listing: listing{f}, gates: map[int64]chan struct{}{}, asked: map[int64]int{}}
	s := New(Options{Agents: f, Tools: f, Actions: failFirst{g, 12}, Calls: engineFunc(f.CallEngine), ListTTL: 20 * time.Millisecond})
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	cs := connect(t, hs.URL+"/api/v1/agents/7/mcp")
	if names := listNames(t, cs); names["My_Mail_12__read"] != nil || names["My_Mail__read"] == nil {
		t.Fatalf("with tool 12's server failing: names = %v", names)
	}
	// retryDiscovery has passed since the failure, and the server now
	// takes its time to list.
	gate := make(chan struct{})
	g.mu.Lock()
	g.gates[12] = gate
	g.mu.Unlock()
	s.sets.mu.Lock()
	for _, ts := range s.sets.m {
		select {
		case <-ts.done:
			if _, ok := ts.failed[12]; ok {
				ts.failed[12] = time.Now().Add(-retryDiscovery - time.Second)
			}
			ts.expires = time.Time{}
		default:
		}
	}
	s.sets.mu.Unlock()
	for range 3 {
		t0 := time.Now()
		names := listNames(t, cs)
		if took := time.Since(t0); took > time.Second {
			t.Fatalf("tools/list waited %v for the retry of a tool that failed", took)
		}
		if names["My_Mail__read"] == nil {
			t.Fatalf("names = %v", names)
		}
		time.Sleep(30 * time.Millisecond)
	}
	close(gate)
	deadline := time.Now().Add(5 * time.Second)
	for listNames(t, cs)["My_Mail_12__read"] == nil {
		if time.Now().After(deadline) {
			t.Fatal("tool 12 never showed once its server listed it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failFirst fails tool's first listing at once, as a server refusing
// connections does.
type failFirst struct {
	*gatedListing
	tool int64
}

func (f failFirst) Actions(ctx context.Context, account, id int64) (*toolconfig.Resolved, []connectors.Action, error) {
	if id == f.tool && f.askedOf(id) == 0 {
		f.mu.Lock()
		f.asked[id]++
		f.mu.Unlock()
		return nil, nil, errors.New("connection refused")
	}
	return f.gatedListing.Actions(ctx, account, id)
}

// TestMCPListReadAgainKeepsServer: a tool's list read anew (a connector's
// cache ran out) that says what it said before kept nothing of the
// agent's server: every schema was parsed and every tool added again, on
// the build every request to the agent waited for (seconds, for big
// schemas). The server is kept now; a list that changed still makes a
// new one.
func TestMCPListReadAgainKeepsServer(t *testing.T) {
	f, _ := setup(t) // f.Actions hands out a new copy of the list each time
	s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: engineFunc(f.CallEngine), ListTTL: 20 * time.Millisecond})
	r := gin.New()
	s.Register(r.Group("/api/v1", asAccount1))
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	cs := connect(t, hs.URL+"/api/v1/agents/7/mcp")
	current := func() *mcp.Server {
		s.sets.mu.Lock()
		defer s.sets.mu.Unlock()
		return s.sets.m[agentKey{1, 7}].srv
	}
	listNames(t, cs)
	first := current()
	time.Sleep(40 * time.Millisecond) // past the list's TTL
	listNames(t, cs)
	if current() != first {
		t.Error("the same lists read again made the agent's server anew")
	}
	f.mu.Lock()
	f.actions = append(slices.Clone(f.actions), connectors.Action{Name: "more", Retryable: true})
	f.mu.Unlock()
	time.Sleep(40 * time.Millisecond)
	if listNames(t, cs)["My_Mail__more"] == nil || current() == first {
		t.Error("a changed list did not make the agent's server anew")
	}
}
