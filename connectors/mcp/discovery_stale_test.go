package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// pastTTL is how far a test moves the clock to have a list expire.
const pastTTL = DefaultDiscoveryTTL + time.Second

// waitRefresh waits for the re-list of tool's list running, or last run,
// to end.
func waitRefresh(t *testing.T, c *Connector, tool *connectors.Tool) {
	t.Helper()
	c.discovery.mu.Lock()
	r := c.discovery.relists[slotKey{tool.ID, tool.Version}]
	c.discovery.mu.Unlock()
	if r == nil {
		t.Fatal("no re-list of the tool's list began")
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the re-list of the tool's list never ended")
	}
}

// TestStaleListServedWhileReadAgain: a call just after the tool's list
// expired waited for its server's whole tools/list, however slow. Now the
// list read before is served at once, to any number of callers, while one
// listing reads it again in the background; its list is cached when it
// ends, and a list that says the same keeps the cached slice.
func TestStaleListServedWhileReadAgain(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hold := holdLists(release)
	srv, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: hold.Wrap})
	unhold := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unhold) // before the server closes, which waits for its requests
	first := listed(t, c, tool)
	before := srv.Listings()
	srv.AddTool("added") // stateless: nothing tells the connector
	clock.advance(pastTTL)
	hold.set(true) // tools/list answers only once released: a server as slow as it gets

	const callers = 16
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			actions, err := c.Actions(ctx, tool)
			if d := time.Since(start); err != nil || d > time.Second {
				t.Errorf("Actions past the TTL took %v: %v; want the list read before, at once", d, err)
			}
			if len(actions) != len(first) || has(actions, "added") {
				t.Errorf("Actions past the TTL: %d actions (the new tool %v), want the %d read before", len(actions), has(actions, "added"), len(first))
			}
		}()
	}
	wg.Wait()
	if actions, ok := c.CachedActions(tool); !ok || len(actions) != len(first) {
		t.Errorf("CachedActions past the TTL: %d actions, %v; want the list read before", len(actions), ok)
	}
	mustCall(t, c, tool, "increment", `{}`) // a call runs while its list is read
	if !eventually(t, 5*time.Second, func() bool { return hold.count() == 1 }) {
		t.Fatal("the expired list was not read again")
	}

	// A call missing an action shares the listing under way.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	actions, err := c.RelistActions(ctx, tool)
	cancel()
	if err != nil || len(actions) != len(first) {
		t.Errorf("RelistActions while the list is read: %d actions, %v; want the list read before", len(actions), err)
	}
	if n := hold.count(); n != 1 {
		t.Fatalf("%d tools/list requests, want the one background listing", n)
	}

	unhold()
	waitRefresh(t, c, tool)
	renewed, err := c.Actions(ctxFor(t, 10*time.Second), tool)
	if err != nil || !has(renewed, "added") {
		t.Fatalf("after the listing: %v, the new tool %v; want the list read again", err, has(renewed, "added"))
	}
	if n := srv.Listings() - before; n != 1 {
		t.Fatalf("%d listings, want 1", n)
	}

	// The same list read again keeps the cached one.
	clock.advance(pastTTL)
	hold.set(false)
	if _, err := c.Actions(ctxFor(t, 10*time.Second), tool); err != nil {
		t.Fatal(err)
	}
	waitRefresh(t, c, tool)
	if n := srv.Listings() - before; n != 2 {
		t.Fatalf("%d listings, want 2", n)
	}
	again, err := c.Actions(ctxFor(t, 10*time.Second), tool)
	if err != nil || srv.Listings()-before != 2 {
		t.Fatalf("after the second listing: %v, %d listings; want the list cached anew", err, srv.Listings()-before)
	}
	if &again[0] != &renewed[0] {
		t.Error("a list read again that says the same replaced the cached one")
	}
}

// answerHolder lets tools/list requests, while set, be answered by the
// server and then holds the answers until release is closed: a listing
// the server answered before its list changed, arriving after.
type answerHolder struct {
	release  chan struct{}
	mu       sync.Mutex
	active   bool
	answered int
}

func (h *answerHolder) set(on bool) { h.mu.Lock(); h.active = on; h.mu.Unlock() }

func (h *answerHolder) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.answered }

func (h *answerHolder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		held := h.active && isToolsList(r)
		h.mu.Unlock()
		if !held {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		h.mu.Lock()
		h.answered++
		h.mu.Unlock()
		<-h.release
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// TestStaleListNotServedAfterListChanged: a list past its TTL is served
// while it is read again, but not once the server said its list changed:
// the next read waits for the list read after the notice, and the
// background listing, which the server answered before its change, does
// not put the old list back.
func TestStaleListNotServedAfterListChanged(t *testing.T) {
	t.Parallel()
	holder := &answerHolder{release: make(chan struct{})}
	srv, c, tool := counterSetup(t, mcptest.Options{PageSize: 100, JSONResponse: true, Wrap: holder.Wrap}, nil)
	unhold := sync.OnceFunc(func() { close(holder.release) })
	t.Cleanup(unhold)
	clock := &fakeClock{now: time.Now()}
	c.discovery.now = clock.Now
	first := listed(t, c, tool)
	clock.advance(pastTTL)
	holder.set(true)

	start := time.Now()
	actions, err := c.Actions(ctxFor(t, 2*time.Second), tool)
	if d := time.Since(start); err != nil || d > time.Second || len(actions) != len(first) {
		t.Fatalf("Actions past the TTL took %v: %d actions, %v; want the list read before, at once", d, len(actions), err)
	}
	if !eventually(t, 5*time.Second, func() bool { return holder.count() == 1 }) {
		t.Fatal("the server never answered the background listing")
	}

	holder.set(false)
	srv.AddTool("added") // tools/list_changed on the session's stream
	if !eventually(t, 5*time.Second, func() bool { _, ok := c.CachedActions(tool); return !ok }) {
		t.Fatal("tools/list_changed left the expired list served")
	}
	unhold()
	waitRefresh(t, c, tool)
	if _, ok := c.CachedActions(tool); ok {
		t.Fatal("the listing answered before tools/list_changed put its list back")
	}
	if !listed(t, c, tool)["added"] {
		t.Fatal("the read after tools/list_changed did not list the new tool")
	}
}

// TestStaleListBoundedWhenListingFails: a server that fails its listing
// past the TTL has the list read before served, and is asked again no more
// often than RelistInterval; a list older than maxStaleTTLs past its TTL is
// not served: the read waits for the listing and answers its error, as a
// first read does.
func TestStaleListBoundedWhenListingFails(t *testing.T) {
	t.Parallel()
	fail := failLists()
	_, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: fail.Wrap})
	clock.advance(pastTTL)
	fail.set(true)

	for range 5 {
		actions, err := c.Actions(ctxFor(t, 10*time.Second), tool)
		if err != nil || !has(actions, "increment") {
			t.Fatalf("Actions past the TTL with the listing failing: %v, %d actions; want the list read before", err, len(actions))
		}
		waitRefresh(t, c, tool)
	}
	n := fail.count()
	if n == 0 || n > 2 { // the one retry on a fresh session at most
		t.Fatalf("%d failed tools/list requests, want one listing's", n)
	}
	clock.advance(DefaultRelistInterval)
	if _, err := c.Actions(ctxFor(t, 10*time.Second), tool); err != nil {
		t.Fatal(err)
	}
	waitRefresh(t, c, tool)
	if fail.count() == n {
		t.Fatalf("the listing was not tried again after %s", DefaultRelistInterval)
	}

	clock.advance(maxStaleTTLs * DefaultDiscoveryTTL)
	if _, ok := c.CachedActions(tool); ok {
		t.Error("CachedActions served a list past its bound")
	}
	_, err := c.Actions(ctxFor(t, 10*time.Second), tool)
	if err == nil {
		t.Fatal("Actions served a list past its bound; want the listing's error")
	}
	firstRead := *tool
	firstRead.ID = 2
	_, want := c.Actions(ctxFor(t, 10*time.Second), &firstRead)
	wantKind(t, err, connectors.KindOf(want))
	if err.Error() != want.Error() {
		t.Errorf("past the bound: %v; want a first read's error, %v", err, want)
	}
}

// TestStaleListListingEndsOnClose: Close ends a background listing under
// way and waits for it, so that it holds no pooled session past the pool's
// close (their race shows under -race), and starts none after.
func TestStaleListListingEndsOnClose(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hold := holdLists(release)
	_, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: hold.Wrap})
	t.Cleanup(sync.OnceFunc(func() { close(release) }))
	clock.advance(pastTTL)
	hold.set(true)
	if _, err := c.Actions(ctxFor(t, 2*time.Second), tool); err != nil {
		t.Fatal(err)
	}
	if !eventually(t, 5*time.Second, func() bool { return hold.count() == 1 }) {
		t.Fatal("the expired list was not read again")
	}
	c.Close()
	c.discovery.mu.Lock()
	r := c.discovery.relists[slotKey{tool.ID, tool.Version}]
	c.discovery.mu.Unlock()
	if r == nil || !r.finished {
		t.Fatal("Close returned with the background listing under way")
	}
	clock.advance(pastTTL)
	c.Actions(ctxFor(t, 2*time.Second), tool)
	c.discovery.mu.Lock()
	again := c.discovery.relists[slotKey{tool.ID, tool.Version}]
	c.discovery.mu.Unlock()
	if again != r {
		t.Fatal("a background listing began after Close")
	}
}

// TestRelistEndsOnClose: Close ends a re-list that a call missing an
// action began, and waits for it, as it does a stale list's, so that none
// holds a pooled session once the pool closes; and none begins after.
func TestRelistEndsOnClose(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hold := holdLists(release)
	_, c, tool, clock := relistSetup(t, mcptest.Options{Wrap: hold.Wrap})
	t.Cleanup(sync.OnceFunc(func() { close(release) }))
	clock.advance(c.discovery.relistEvery + time.Millisecond)
	hold.set(true)
	c.RelistActions(ctxFor(t, 200*time.Millisecond), tool) // gives up waiting; the re-list goes on
	if !eventually(t, 5*time.Second, func() bool { return hold.count() == 1 }) {
		t.Fatal("the list was not read again")
	}
	c.Close()
	key := slotKey{tool.ID, tool.Version}
	c.discovery.mu.Lock()
	r := c.discovery.relists[key]
	c.discovery.mu.Unlock()
	if r == nil || !r.finished {
		t.Fatal("Close returned with the re-list under way")
	}
	clock.advance(c.discovery.relistEvery + time.Millisecond)
	if _, err := c.RelistActions(ctxFor(t, 2*time.Second), tool); err == nil {
		t.Error("a re-list after Close answered no error")
	}
	if n := hold.count(); n != 1 {
		t.Errorf("%d listings reached the server, want 1: one began after Close", n)
	}
}
