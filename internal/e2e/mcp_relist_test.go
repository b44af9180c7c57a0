package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// mqRelistEvery is QUIVER_MCP_RELIST_INTERVAL in the re-list tests
// (mqRelistEnv): a second rather than the default 5 s, so they wait that
// long for a list to go stale, and long enough for the 20 calls of a rate
// limit check to fall mostly in one window.
const mqRelistEvery = time.Second

var mqRelistEnv = map[string]string{"QUIVER_MCP_RELIST_INTERVAL": mqRelistEvery.String()}

// TestMCPStatelessListChanged: a stateless MCP server has no standalone
// stream to say that its tool list changed, so a tool its operator added
// was not_found, and missing from GET .../actions/, until the cached list
// expired (60 s). A call naming an action missing from a list older than
// the re-list interval (QUIVER_MCP_RELIST_INTERVAL, here mqRelistEvery)
// now re-reads the list first: once per tool however many callers ask at
// once, and at most once per interval however often a caller names an
// action that exists nowhere; a list fresher than that is not re-read.
func TestMCPStatelessListChanged(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: mqRelistEnv})
	start := func(name string) (*mcptest.Server, int64) {
		s := mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: true, PageSize: 100})
		id := mqConnect(t, srv, name, map[string]any{"url": s.URL})
		if r := mqCall(srv, id, "read_count", nil, ""); r.Status != 200 { // the list is cached now
			t.Fatalf("%s: read_count: %d %s", name, r.Status, r.Body)
		}
		return s, id
	}
	added, addedID := start("added")
	unknown, unknownID := start("unknown")
	concurrent, concurrentID := start("concurrent")
	// A fresh list is not re-read: the call is refused from it.
	before := unknown.Listings()
	mqWant(t, mqCall(srv, unknownID, "never", nil, ""), 404, "not_found")
	if n := unknown.Listings() - before; n != 0 {
		t.Fatalf("a call naming no action of a fresh list made %d tool listings, want none", n)
	}
	// What is tested next is a list older than the interval.
	time.Sleep(mqRelistEvery + 100*time.Millisecond)

	t.Run("added tool", func(t *testing.T) {
		added.AddTool("fresh")
		added.Add(&sdk.Tool{Name: "fresh_send", Description: "Not safe to retry.", InputSchema: map[string]any{"type": "object"},
			Annotations: &sdk.ToolAnnotations{}})
		before := added.Listings()
		r := mqCall(srv, addedID, "fresh", nil, "")
		if r.Status != 200 || r.JSON()["is_error"] != false {
			t.Fatalf("a call of the tool just added: %d %s, want 200", r.Status, r.Body)
		}
		// Found in the same re-read list, with its annotations: a key is
		// required, reserved and replayed as for any action.
		mqWant(t, mqCall(srv, addedID, "fresh_send", nil, ""), 400, "idempotency_key_required")
		first := mqCall(srv, addedID, "fresh_send", nil, "relist-send")
		again := mqCall(srv, addedID, "fresh_send", nil, "relist-send")
		if first.Status != 200 || again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || string(first.Body) != string(again.Body) {
			t.Fatalf("keyed call of an added tool: %d %s, then %d %s (replayed %q)", first.Status, first.Body, again.Status, again.Body, again.Header.Get("Idempotent-Replayed"))
		}
		if n := added.Calls("fresh_send"); n != 1 {
			t.Errorf("fresh_send ran %d times, want 1", n)
		}
		if n := added.Listings() - before; n != 1 {
			t.Errorf("%d tool listings, want 1", n)
		}
		if acts := mqActions(t, srv, addedID); acts["fresh"] == nil || acts["fresh_send"] == nil {
			t.Errorf("GET .../actions/ does not list the added tools")
		}
	})

	t.Run("unknown name repeated", func(t *testing.T) {
		before, began := unknown.Listings(), time.Now()
		for range 20 {
			mqWant(t, mqCall(srv, unknownID, "never", nil, "never-key"), 404, "not_found")
		}
		mqWantListingPerWindow(t, unknown.Listings()-before, began)
		// The 404s left the key free.
		if r := mqCall(srv, unknownID, "read_count", nil, "never-key"); r.Status != 200 {
			t.Errorf("the key of the 404s: %d %s, want it free", r.Status, r.Body)
		}
	})

	t.Run("concurrent callers", func(t *testing.T) {
		concurrent.AddTool("fresh")
		before := concurrent.Listings()
		const callers = 12
		var wg sync.WaitGroup
		got := make([]*testserver.Response, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = mqCall(srv, concurrentID, "fresh", nil, fmt.Sprintf("concurrent-%d", i))
			}()
		}
		wg.Wait()
		for i, r := range got {
			if r.Status != 200 {
				t.Errorf("caller %d: %d %s", i, r.Status, r.Body)
			}
		}
		if n := concurrent.Listings() - before; n != 1 {
			t.Errorf("%d concurrent calls made %d tool listings, want 1", callers, n)
		}
	})

	// A tool the server removed is still listed for a while, and a call of
	// it is dispatched: the server refuses it (invalid params, unknown
	// tool) before running anything, a rejection that frees the key.
	t.Run("removed tool", func(t *testing.T) {
		added.DropTool("dummy_03")
		r := mqCall(srv, addedID, "dummy_03", nil, "removed-key")
		mqWant(t, r, 422, "invalid_arguments")
		if r := mqCall(srv, addedID, "read_count", nil, "removed-key"); r.Status != 200 {
			t.Errorf("the key of the refused call: %d %s, want it free", r.Status, r.Body)
		}
	})
}

// mqWantListingPerWindow checks the re-list's rate limit, in both tests of
// it: 20 calls of a name that exists nowhere, made since began, led to n
// tool listings, at least one and at most one per mqRelistEvery.
func mqWantListingPerWindow(t *testing.T, n int, began time.Time) {
	t.Helper()
	if windows := 1 + int(time.Since(began)/mqRelistEvery); n < 1 || n > windows {
		t.Errorf("20 calls of an unknown action made %d tool listings in %d windows, want 1 per window", n, windows)
	}
}
