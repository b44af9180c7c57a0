package mcp

// Serving a tool list past DiscoveryTTL while it is read again.
//
// A list that ran out (DiscoveryTTL, 60 s by default) was read again by the
// next Actions, every page of it, before that caller went on: with a slow
// server every call made just after the expiry waited for its tools/list,
// once a minute. Now a list read before is served as it was while one
// listing in the background reads it again:
//
//	Actions, CachedActions
//	   │ no list (first use, a new Version, or invalidated: tools/list_changed,
//	   │ pool.lost, roundTripper.reopened) ──────────▶ list(): wait, as ever
//	   │ fresh (younger than DiscoveryTTL) ──────────▶ the list
//	   │ older than maxStaleTTLs+1 TTLs ─────────────▶ list(): wait, as ever
//	   ▼ else: stale
//	the list as it was, and discovery.relist: a re-list of the key running
//	(a call's RelistActions, or one begun here) or begun less than
//	RelistInterval ago (its failure is the rate limit) ──▶ nothing more
//	   ▼ else: lead one, in the background
//	list(), detached from the caller's context, bounded by ConnectTimeout +
//	DiscoveryTimeout. Its list is cached unless the key was invalidated since
//	it began (the generation put checks): a notice that came meanwhile
//	leaves no list, and the next read waits for one read after it. A list
//	that says the same keeps the cached slice (put). A failure is logged,
//	and the list stays until it is too old to serve.
//
// The background listing is a relisting (relist.go), so it is the one
// listing of the key a call missing an action waits for (RelistActions),
// and a server that fails it is asked no more often than RelistInterval.
//
// Invalidation drops the entry itself, stale or not: nothing here serves a
// list the server said changed, or might have (a lost session, a reopened
// stream).

import (
	"context"
	"slices"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// maxStaleTTLs is how many TTLs past its expiry a list is still served
// while it is read again: two, so a list is served for three TTLs at most
// (three minutes by default). A background listing takes no longer than
// ConnectTimeout + DiscoveryTimeout (30 s by default), so a live server,
// however slow, renews its list well within the window and no read waits
// for it; one whose listing fails (restarting, briefly down) is asked again
// every RelistInterval (5 s by default, a minute at most: twice within the
// window even then). A server that stays down has its tools/call fail at
// once anyway; its list shows in GET .../actions/ and the agents'
// tools/list for two more TTLs, then every read waits for the listing and
// answers its error, as before. The window scales with DiscoveryTTL, so a
// short TTL keeps lists as fresh as it asks for.
const maxStaleTTLs = 2

// staleFor is how long past its expiry a list is still served.
func (d *discovery) staleFor() time.Duration { return maxStaleTTLs * d.ttl }

// revalidate has key's stale list read again in the background, unless a
// re-list of key is running or began less than RelistInterval ago.
func (c *Connector) revalidate(ctx context.Context, t *connectors.Tool, key slotKey) {
	d := c.discovery
	if !d.track() {
		return
	}
	r, lead := d.relist(key)
	if !lead {
		d.bg.Done()
		return
	}
	// Detached: the caller's request may end long before the listing.
	go c.refresh(context.WithoutCancel(ctx), t, key, r)
}

// refresh is one background listing of key, bounded as a session's opening
// and listing are, and ended by the connector's Close.
func (c *Connector) refresh(ctx context.Context, t *connectors.Tool, key slotKey, r *relisting) {
	defer c.discovery.bg.Done()
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout+c.opts.DiscoveryTimeout)
	defer cancel()
	defer context.AfterFunc(c.discovery.bgCtx, cancel)()
	actions, err := c.list(ctx, t, key)
	if err != nil && c.discovery.bgCtx.Err() == nil {
		c.opts.Logger.InfoContext(ctx, "mcp tool list past its TTL could not be read again; the list read before is served meanwhile",
			"tool_id", t.ID, "version", t.Version, "error", err)
	}
	c.discovery.relisted(r, actions, err)
}

// track counts one more background listing, which calls bg.Done when it
// ends; false once stop began, when none may start.
func (d *discovery) track() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return false
	}
	d.bg.Add(1)
	return true
}

// stop ends the background listings and waits for them, so that none
// holds a pooled session once the pool closes.
func (d *discovery) stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.bgCancel()
	d.bg.Wait()
}

// sameActions reports whether two lists say the same in everything an
// action holds.
func sameActions(a, b []connectors.Action) bool {
	return slices.EqualFunc(a, b, connectors.Action.Equal)
}
