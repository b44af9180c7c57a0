package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
)

// maxPages and maxTools bound a tool list, as listBytes does its size:
// against a server whose cursors never end, and one that lists more than
// any agent could choose from (or than memory should hold: the list is
// cached). A list past any of them is refused (errTooManyTools), never cut
// short: a tool left out would answer not_found to a call naming it.
const (
	maxPages = 2000
	maxTools = 10000
)

// listBytes is the most a tool list may weigh, its tools as JSON: twice the
// largest answer, so no one page can use it up.
func (c *Connector) listBytes() int64 { return 2 * c.opts.MaxResponseBytes }

// errTooManyTools is a tool list past maxPages, maxTools or listBytes; the
// error listTools returns wraps it with the limits.
var errTooManyTools = errors.New("lists more tools than Quiver takes")

// Actions lists the tool's actions: every page of the server's tools/list,
// cached per (tool ID, Version) for DiscoveryTTL or until the server says
// its tool list changed, or may have said so unheard (its session lost, its
// standalone stream reopened: pool.lost, roundTripper.reopened), or read
// again for a call naming an action missing from it (RelistActions). A list
// past DiscoveryTTL is served as it was, for up to maxStaleTTLs more, while
// it is read again in the background (discovery_stale.go). An action is
// retryable when its tool is annotated read-only or idempotent.
//
// Listing, every page and the one retry together, is bounded by
// DiscoveryTimeout once a session is open (opening one is bounded by
// ConnectTimeout): a listing that runs out of time, ours or the caller's,
// is KindUnreachable, since tools/list changes nothing on the server.
func (c *Connector) Actions(ctx context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	key := slotKey{t.ID, t.Version}
	if actions, fresh, ok := c.discovery.lookup(key); ok {
		if !fresh {
			c.revalidate(ctx, t, key)
		}
		return actions, nil
	}
	return c.list(ctx, t, key)
}

// list reads the tool's list from its server and caches it: Actions past
// the cache, and a re-list (relist.go).
func (c *Connector) list(ctx context.Context, t *connectors.Tool, key slotKey) ([]connectors.Action, error) {
	tgt, err := c.toolTarget(t)
	if err != nil {
		return nil, err
	}
	gen := c.discovery.generation(key)
	var listCtx context.Context
	for try := 0; ; try++ {
		s, err := c.pool.acquire(ctx, t, tgt)
		if err != nil {
			return nil, err
		}
		if listCtx == nil {
			var cancel context.CancelFunc
			listCtx, cancel = context.WithTimeout(ctx, c.opts.DiscoveryTimeout)
			defer cancel()
		}
		tools, st, err := c.listTools(listCtx, s.sess)
		c.pool.release(s)
		if err == nil {
			return c.discovery.put(key, gen, toActions(tools)), nil
		}
		if errors.Is(err, errTooManyTools) {
			return nil, connectors.Errorf(connectors.KindUnreachable, err, "the MCP server at %s %v", tgt.host, err)
		}
		if listCtx.Err() != nil {
			// Before sessionGone: a request the deadline, or the end of
			// the caller's context, stopped before it left says nothing
			// about the session.
			limit := ""
			if ctx.Err() == nil {
				limit = " (" + c.opts.DiscoveryTimeout.String() + ")"
			}
			return nil, connectors.Errorf(connectors.KindUnreachable, listCtx.Err(),
				"the MCP server at %s did not list its tools in time%s", tgt.host, limit)
		}
		if sessionGone(st) {
			c.pool.lost(ctx, s, "session gone")
			gen = c.discovery.generation(key) // the listing on the new session is current
			if try == 0 {
				continue
			}
		}
		return nil, c.failed(ctx, s, st, err, tgt)
	}
}

// CachedActions implements connectors.ActionsAtHand: the actions Actions
// has cached for t, if any, a list past DiscoveryTTL among them, which it
// has read again in the background as Actions does.
func (c *Connector) CachedActions(t *connectors.Tool) ([]connectors.Action, bool) {
	key := slotKey{t.ID, t.Version}
	actions, fresh, ok := c.discovery.lookup(key)
	if ok && !fresh {
		c.revalidate(context.Background(), t, key)
	}
	return actions, ok
}

// listTools reads every page of tools/list. On failure it returns what the
// failed request's attempt recorded.
func (c *Connector) listTools(ctx context.Context, sess *mcp.ClientSession) ([]*mcp.Tool, attemptState, error) {
	maxBytes := c.listBytes()
	var tools []*mcp.Tool
	var size int64
	cursor := ""
	for range maxPages {
		a := &attempt{}
		res, err := sess.ListTools(withAttempt(ctx, a), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, a.snapshot(), err
		}
		for _, tool := range res.Tools {
			b, _ := json.Marshal(tool) // the SDK decoded it: it encodes
			size += int64(len(b))
		}
		if tools = append(tools, res.Tools...); len(tools) > maxTools || size > maxBytes {
			break
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			return tools, attemptState{started: true}, nil
		}
		cursor = res.NextCursor
	}
	return nil, attemptState{started: true, status: http.StatusOK},
		fmt.Errorf("%w (%d tools, %d pages or %s of them)", errTooManyTools, maxTools, maxPages, sizeOf(maxBytes))
}

// sizeOf writes n bytes in MiB, or in KiB under one MiB.
func sizeOf(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// toActions maps MCP tools to actions. A tool that could not be called is
// left out: one without a name (a call must name its action), and one whose
// name holds U+0000, whose calls could not be recorded (Postgres text cannot
// hold the character; a call log batch holding its name would fail whole).
func toActions(tools []*mcp.Tool) []connectors.Action {
	actions := make([]connectors.Action, 0, len(tools))
	seen := make(map[string]int, len(tools))
	for _, tool := range tools {
		if tool.Name == "" || strings.IndexByte(tool.Name, 0) >= 0 {
			continue
		}
		if i, ok := seen[tool.Name]; ok {
			// A name listed twice (MCP wants them unique): a call by it
			// runs whichever the server picks, so the one action listed
			// is only as safe as the least safe of them.
			leastSafe(&actions[i], tool)
			continue
		}
		seen[tool.Name] = len(actions)
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		a := connectors.Action{Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: schema,
			OutputSchema: outputSchema(tool.OutputSchema)}
		if ann := tool.Annotations; ann != nil {
			a.Annotations = &catalog.Annotations{
				Title:           ann.Title,
				ReadOnlyHint:    ptr(ann.ReadOnlyHint),
				IdempotentHint:  ptr(ann.IdempotentHint),
				DestructiveHint: ann.DestructiveHint,
				OpenWorldHint:   ann.OpenWorldHint,
			}
			a.Retryable = ann.ReadOnlyHint || ann.IdempotentHint
		}
		if a.Description == "" && tool.Title != "" {
			a.Description = tool.Title
		}
		actions = append(actions, a)
	}
	return actions
}

// outputSchema is a tool's outputSchema as JSON when it is a JSON object
// (as MCP's Tool has it); anything else, or none, is nil: no schema.
func outputSchema(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return nil
	}
	return b
}

// leastSafe makes a what both it and another tool of its name allow: it is
// retryable, or read-only, only if both are.
func leastSafe(a *connectors.Action, other *mcp.Tool) {
	ann := other.Annotations
	if ann == nil || !(ann.ReadOnlyHint || ann.IdempotentHint) {
		a.Retryable = false
	}
	if a.Annotations != nil && a.Annotations.ReadOnlyHint != nil && *a.Annotations.ReadOnlyHint && (ann == nil || !ann.ReadOnlyHint) {
		a.Annotations.ReadOnlyHint = ptr(false)
	}
	if !bytes.Equal(a.OutputSchema, outputSchema(other.OutputSchema)) {
		a.OutputSchema = nil // no one schema holds for every answer
	}
}

func ptr[T any](v T) *T { return &v }

// discovery caches actions per (tool ID, Version). A generation per key,
// bumped on invalidation, keeps a listing that raced with a tools/list_changed
// notice from being cached. It also keeps the re-lists of each key
// (relist.go).
type discovery struct {
	ttl time.Duration
	// relistEvery is Options.RelistInterval (relist.go).
	relistEvery time.Duration
	now         func() time.Time // nil: time.Now; tests move it

	mu      sync.Mutex
	entries map[slotKey]cached
	gens    map[slotKey]uint64
	relists map[slotKey]*relisting

	// The background listings of stale lists (discovery_stale.go), which
	// stop ends: bgCtx is their parent, stopped (under mu) refuses new ones.
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
	stopped  bool
}

// cached is one list, read ttl before it expires.
type cached struct {
	actions []connectors.Action
	expires time.Time
}

func newDiscovery(ttl, relistEvery time.Duration) *discovery {
	d := &discovery{ttl: ttl, relistEvery: relistEvery, entries: map[slotKey]cached{}, gens: map[slotKey]uint64{},
		relists: map[slotKey]*relisting{}}
	d.bgCtx, d.bgCancel = context.WithCancel(context.Background())
	return d
}

func (d *discovery) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// lookup returns key's list when it may be served (ok): fresh, or past
// its expiry by no more than staleFor (fresh false: the caller has it read
// again, revalidate).
func (d *discovery) lookup(key slotKey) (actions []connectors.Action, fresh, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[key]
	if !ok {
		return nil, false, false
	}
	now := d.clock()
	if !now.After(e.expires) {
		return e.actions, true, true
	}
	if now.After(e.expires.Add(d.staleFor())) {
		return nil, false, false
	}
	return e.actions, false, true
}

// get is lookup without telling fresh from stale.
func (d *discovery) get(key slotKey) ([]connectors.Action, bool) {
	actions, _, ok := d.lookup(key)
	return actions, ok
}

func (d *discovery) generation(key slotKey) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gens[key]
}

// put caches actions unless key was invalidated since gen was read, and
// returns the list to answer with: the one cached already when actions say
// the same (sameActions), so that what compares lists by their slice (the
// agent endpoint's builds) sees no change, else actions. It drops entries
// of the tool's older versions and those too old to serve.
func (d *discovery) put(key slotKey, gen uint64, actions []connectors.Action) []connectors.Action {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gens[key] != gen {
		return actions
	}
	now := d.clock()
	if e, ok := d.entries[key]; ok && sameActions(e.actions, actions) {
		actions = e.actions
	}
	for k, e := range d.entries {
		if k.id == key.id && k.version < key.version {
			delete(d.entries, k)
			delete(d.gens, k)
		} else if now.After(e.expires.Add(d.staleFor())) {
			delete(d.entries, k)
		}
	}
	d.pruneRelistsLocked(key, now)
	d.entries[key] = cached{actions: actions, expires: now.Add(d.ttl)}
	return actions
}

func (d *discovery) invalidate(key slotKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.entries, key)
	d.gens[key]++
}
