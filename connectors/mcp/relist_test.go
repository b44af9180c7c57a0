package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/config"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// fakeClock is a discovery clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// relistSetup starts a stateless Counter server (no standalone stream, so
// no notice of a change to its list) and a Connector whose discovery runs
// on a fake clock, and lists the tool once.
func relistSetup(t *testing.T, srvOpts mcptest.Options) (*mcptest.Server, *Connector, *connectors.Tool, *fakeClock) {
	t.Helper()
	srvOpts.Stateless, srvOpts.PageSize = true, 100
	srv, c, tool := counterSetup(t, srvOpts, nil)
	clock := &fakeClock{now: time.Now()}
	c.discovery.now = clock.Now
	if listed(t, c, tool)["added"] {
		t.Fatal("the server lists \"added\" already")
	}
	return srv, c, tool, clock
}

func has(actions []connectors.Action, name string) bool {
	for _, a := range actions {
		if a.Name == name {
			return true
		}
	}
	return false
}

func relist(t *testing.T, c *Connector, tool *connectors.Tool) []connectors.Action {
	t.Helper()
	actions, _ := c.RelistActions(ctxFor(t, 10*time.Second), tool)
	if actions == nil {
		t.Fatal("RelistActions: no list")
	}
	return actions
}

// TestRelistFindsAddedTool: a tool the stateless server added after its
// list was cached is found by the re-list a call missing it asks for, once
// the list is not fresh; the renewed list is cached, for GET .../actions/
// and the agents' tools/list.
func TestRelistFindsAddedTool(t *testing.T) {
	t.Parallel()
	srv, c, tool, clock := relistSetup(t, mcptest.Options{})
	before := srv.Listings()
	srv.AddTool("added")
	if listed(t, c, tool)["added"] {
		t.Fatal("the cached list learned of the tool unasked")
	}

	// Fresh: the list was read just now; no re-list.
	if has(relist(t, c, tool), "added") || srv.Listings() != before {
		t.Fatalf("a fresh list was re-read (%d listings, want %d)", srv.Listings(), before)
	}

	clock.advance(DefaultRelistInterval)
	if !has(relist(t, c, tool), "added") {
		t.Fatal("the re-list did not find the added tool")
	}
	if n := srv.Listings() - before; n != 1 {
		t.Fatalf("%d listings, want 1", n)
	}
	if !listed(t, c, tool)["added"] {
		t.Fatal("the re-read list was not cached")
	}
}

// TestRelistRateLimited: a caller repeating a name no list holds costs
// the server one tools/list per RelistInterval, however often it calls.
func TestRelistRateLimited(t *testing.T) {
	t.Parallel()
	srv, c, tool, clock := relistSetup(t, mcptest.Options{})
	before := srv.Listings()
	for window := 1; window <= 3; window++ {
		clock.advance(DefaultRelistInterval)
		for range 20 {
			if has(relist(t, c, tool), "never") {
				t.Fatal("found a tool that does not exist")
			}
			clock.advance(DefaultRelistInterval / 20 / 2)
		}
		if n := srv.Listings() - before; n != window {
			t.Fatalf("after %d windows: %d listings, want %d", window, n, window)
		}
	}
}

// TestRelistSingleFlight: concurrent callers missing an action share one
// re-list.
func TestRelistSingleFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hold := holdLists(release)
	srv, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: hold.Wrap})
	before := srv.Listings()
	srv.AddTool("added")
	clock.advance(DefaultRelistInterval)
	hold.set(true)

	const callers = 16
	var wg sync.WaitGroup
	found := make(chan bool, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actions, err := c.RelistActions(context.Background(), tool)
			found <- err == nil && has(actions, "added")
		}()
	}
	if !eventually(t, 5*time.Second, func() bool { return hold.count() == 1 }) {
		t.Fatal("no re-list reached the server")
	}
	close(release)
	wg.Wait()
	close(found)
	for ok := range found {
		if !ok {
			t.Fatal("a caller did not get the re-read list")
		}
	}
	if n := srv.Listings() - before; n != 1 {
		t.Fatalf("%d callers made %d listings, want 1", callers, n)
	}
}

// TestRelistBoundedByCaller: a caller waits for a re-list no longer than
// its context allows, and gets the list cached; the re-list goes on for
// the callers after it, and its answer is cached.
func TestRelistBoundedByCaller(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hold := holdLists(release)
	srv, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: hold.Wrap})
	srv.AddTool("added")
	clock.advance(DefaultRelistInterval)
	hold.set(true)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	actions, err := c.RelistActions(ctx, tool)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the caller waited %v past its context", d)
	}
	if err != nil || actions == nil || has(actions, "added") {
		t.Fatalf("a caller whose context ended got %v, a list %v, the new tool %v; want the cached list", err, actions != nil, has(actions, "added"))
	}
	close(release)
	if !eventually(t, 5*time.Second, func() bool { return listed(t, c, tool)["added"] }) {
		t.Fatal("the re-list the caller left was not cached")
	}
}

// TestRelistFailed: a re-list the server fails leaves the cached list, and
// counts against the limit: a server that is down is not asked once per
// call.
func TestRelistFailed(t *testing.T) {
	t.Parallel()
	fail := failLists()
	srv, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: fail.Wrap})
	srv.AddTool("added")
	clock.advance(DefaultRelistInterval)
	fail.set(true)
	for range 5 {
		actions := relist(t, c, tool)
		if has(actions, "added") || !has(actions, "increment") {
			t.Fatal("a failed re-list did not leave the cached list")
		}
	}
	if n := fail.count(); n == 0 || n > 2 { // the one retry on a fresh session at most
		t.Fatalf("%d failed tools/list requests, want the one re-list's", n)
	}
	fail.set(false)
	clock.advance(DefaultRelistInterval)
	if !has(relist(t, c, tool), "added") {
		t.Fatal("the re-list after the server recovered did not find the tool")
	}
}

// TestRelistRefusedToken: a re-list the server refuses our OAuth token
// for says so (KindUpstreamAuth), with the list cached, so that the caller
// can refresh the token; the refreshed tool (a new token is a new Version)
// is re-listed at once, though the refused re-list began within
// RelistInterval, while the refused token's own re-lists stay limited.
func TestRelistRefusedToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	live := map[string]bool{"at-1": true}
	authorize := func(token string) bool { mu.Lock(); defer mu.Unlock(); return live[token] }
	srv, c, _ := counterSetup(t, mcptest.Options{Stateless: true, PageSize: 100, Authorize: authorize}, nil)
	clock := &fakeClock{now: time.Now()}
	c.discovery.now = clock.Now
	tool := toolFor(srv, 1, nil)
	tool.AccessToken = "at-1"
	if listed(t, c, tool)["added"] {
		t.Fatal("the server lists \"added\" already")
	}
	srv.AddTool("added")
	clock.advance(DefaultRelistInterval)
	mu.Lock()
	live = map[string]bool{"at-2": true} // at-1 revoked before its expiry
	mu.Unlock()

	before := srv.Listings()
	actions, err := c.RelistActions(ctxFor(t, 10*time.Second), tool)
	wantKind(t, err, connectors.KindUpstreamAuth)
	if !has(actions, "increment") || has(actions, "added") {
		t.Fatalf("a refused re-list did not give the cached list: %v, %d actions", err, len(actions))
	}
	// The refused token again: limited, as any re-list.
	if actions, err := c.RelistActions(ctxFor(t, 10*time.Second), tool); err != nil || has(actions, "added") {
		t.Fatalf("the refused token's re-list again: %v, added %v; want the cached list, not asked", err, has(actions, "added"))
	}
	refreshed := *tool
	refreshed.AccessToken, refreshed.Version = "at-2", tool.Version+1
	actions, err = c.RelistActions(ctxFor(t, 10*time.Second), &refreshed)
	if err != nil || !has(actions, "added") {
		t.Fatalf("the refreshed tool's re-list: %v, added %v; want the re-read list", err, has(actions, "added"))
	}
	if n := srv.Listings() - before; n != 1 { // the refused one was refused before it listed
		t.Fatalf("%d listings, want the refreshed tool's one", n)
	}
}

// listGate counts the tools/list requests that come while it is set and
// does act with each: holds it (holdLists) or answers it (failLists).
// act reports whether it answered the request.
type listGate struct {
	act    func(w http.ResponseWriter) (answered bool)
	mu     sync.Mutex
	active bool
	n      int
}

// holdLists holds tools/list requests, while set, until release is closed.
func holdLists(release <-chan struct{}) *listGate {
	return &listGate{act: func(http.ResponseWriter) bool { <-release; return false }}
}

// failLists answers tools/list 503 while set.
func failLists() *listGate {
	return &listGate{act: func(w http.ResponseWriter) bool {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return true
	}}
}

func (g *listGate) set(on bool) { g.mu.Lock(); g.active = on; g.mu.Unlock() }

func (g *listGate) count() int { g.mu.Lock(); defer g.mu.Unlock(); return g.n }

func (g *listGate) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		gated := g.active && isToolsList(r)
		if gated {
			g.n++
		}
		g.mu.Unlock()
		if gated && g.act(w) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isToolsList reports whether r is a tools/list request, leaving its body
// to be read again.
func isToolsList(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == "tools/list"
}

// TestRelistIntervalOption: Options.RelistInterval replaces the 5 s, as
// "fresh" and as the rate limit alike; QUIVER_MCP_RELIST_INTERVAL's
// default is this package's.
func TestRelistIntervalOption(t *testing.T) {
	t.Parallel()
	if config.DefaultRelistInterval != DefaultRelistInterval {
		t.Errorf("QUIVER_MCP_RELIST_INTERVAL defaults to %s, the connector to %s", config.DefaultRelistInterval, DefaultRelistInterval)
	}
	const every = 200 * time.Millisecond
	srv, c, tool := counterSetup(t, mcptest.Options{Stateless: true, PageSize: 100}, &Options{AllowPrivate: true, RelistInterval: every})
	clock := &fakeClock{now: time.Now()}
	c.discovery.now = clock.Now
	listed(t, c, tool)
	before := srv.Listings()
	srv.AddTool("added")
	clock.advance(every - time.Millisecond)
	if has(relist(t, c, tool), "added") || srv.Listings() != before {
		t.Fatalf("a list %s old was re-read (%d listings, want %d)", every-time.Millisecond, srv.Listings(), before)
	}
	clock.advance(time.Millisecond)
	if !has(relist(t, c, tool), "added") || srv.Listings() != before+1 {
		t.Fatalf("a list %s old was not re-read once (%d listings, want %d)", every, srv.Listings(), before+1)
	}
	clock.advance(every - time.Millisecond)
	relist(t, c, tool)
	if srv.Listings() != before+1 {
		t.Fatalf("re-read again within %s", every)
	}
}
