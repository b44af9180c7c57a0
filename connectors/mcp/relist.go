package mcp

// Re-reading a tool list for a call that names an action it lacks.
//
// A stateless server has no standalone stream to send
// notifications/tools/list_changed on, so nothing tells Quiver that its
// operator added a tool or took one away: a call naming the new tool would
// be not_found until DiscoveryTTL ran out. So a call that names an action
// missing from the cached list asks for the list again first
// (RelistActions), within limits:
//
//	action missing from the list Actions gave
//	   │ a re-list of the tool running ─────────────▶ wait for it (single flight)
//	   │ a re-list of the tool began less than
//	   │ RelistInterval ago, or the list was read
//	   │ less than RelistInterval ago ──────────────▶ the list as cached: not_found
//	   ▼ else: lead one
//	list(), detached from the leader's cancellation and bounded by
//	ConnectTimeout and DiscoveryTimeout; every caller waits for it no
//	longer than its own context allows
//	   │ listed: cached, and the list to look in again
//	   │ failed: logged, and the error to every caller with the list cached
//	   │ (if any); the caller answers from it (not_found), except that
//	   ▼ a refusal of our OAuth token (KindUpstreamAuth) is retried once:
//	the engine (calls.Engine.Relist) refreshes the token, shared with
//	concurrent callers, and re-lists the refreshed tool. Its new token is a
//	new Version (connectors.Tool), so a key of its own: no re-list of that
//	key began, and none was refused, so the retry is not held back by the
//	refused one's RelistInterval, and concurrent callers' retries share one
//	re-list as above. A dead grant is the call's tool_not_configured.
//
// RelistInterval (Options; QUIVER_MCP_RELIST_INTERVAL) is both "fresh"
// and the rate limit, 5 s unless set (tests shorten it). A caller
// repeating a name that exists nowhere costs the server at most one
// tools/list per tool per 5 s, twelve a minute against the one a minute
// DiscoveryTTL costs: a listing can run to many pages, so it is not made
// much more often than that. A tool just added is refused for at most those
// 5 s, and only when its list was read within them; a longer interval would
// make that wait longer for little saved. A re-list that failed counts
// against the limit too: a server that is down is not asked once per call.
//
// The miss path comes here, and so does a list past its TTL, read again in
// the background while it is still served (discovery_stale.go). A call
// whose action is in the list reads the cache as it did (CachedActions),
// with no lock or allocation more.

import (
	"context"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// DefaultRelistInterval is Options.RelistInterval's default: how old a
// tool list must be before a call naming an action missing from it
// re-reads it, and how often at most a tool's list is re-read so.
const DefaultRelistInterval = 5 * time.Second

var _ connectors.ActionsRelister = (*Connector)(nil)

// relisting is one re-list of a key: its callers wait on done, then read
// actions and err. started is when it began, for the rate limit.
type relisting struct {
	started  time.Time
	done     chan struct{}
	finished bool // under discovery.mu
	actions  []connectors.Action
	err      error
}

// RelistActions implements connectors.ActionsRelister: a call found no
// action of its name in Actions' answer. It re-reads the tool's list when
// the cached one is not fresh and no re-list of the tool began lately,
// shares a re-list running already, and returns the list to look the
// action up in again: the re-read one, or the one cached now (which a
// re-list that just ended may have renewed), nil when there is none. err
// is the failure of the re-list the caller waited for (the list is then
// the cached one): the caller tells a refused token from the rest by it.
func (c *Connector) RelistActions(ctx context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	key := slotKey{t.ID, t.Version}
	r, lead := c.discovery.relist(key)
	if r == nil {
		return c.cached(key), nil
	}
	if lead {
		// Detached: the callers that join it must not lose it when the
		// leader's client goes away. list bounds it (ConnectTimeout,
		// DiscoveryTimeout), and the connector's Close ends it.
		if !c.discovery.track() {
			c.discovery.relisted(r, nil, connectors.Errorf(connectors.KindUnreachable, nil, "the MCP connector is closing"))
		} else {
			go c.runRelist(context.WithoutCancel(ctx), t, key, r)
		}
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return c.cached(key), nil
	}
	if r.err != nil {
		return c.cached(key), r.err
	}
	return r.actions, nil
}

// cached is key's cached list, nil when there is none.
func (c *Connector) cached(key slotKey) []connectors.Action {
	actions, _ := c.discovery.get(key)
	return actions
}

func (c *Connector) runRelist(ctx context.Context, t *connectors.Tool, key slotKey, r *relisting) {
	defer c.discovery.bg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.discovery.bgCtx, cancel)()
	actions, err := c.list(ctx, t, key)
	if err != nil && c.discovery.bgCtx.Err() == nil {
		c.opts.Logger.InfoContext(ctx, "mcp tool list could not be re-read for a call naming an action not in it",
			"tool_id", t.ID, "version", t.Version, "error", err)
	}
	c.discovery.relisted(r, actions, err)
}

// relist decides what a call missing an action in key's list does: a
// re-list running (lead false: wait for it); nil, when the list is fresh
// or a re-list began less than RelistInterval ago (the cached list
// stands); or a new re-list for the caller to start (lead true).
func (d *discovery) relist(key slotKey) (r *relisting, lead bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock()
	if r := d.relists[key]; r != nil {
		if !r.finished {
			return r, false
		}
		if now.Sub(r.started) < d.relistEvery {
			return nil, false
		}
	}
	if e, ok := d.entries[key]; ok && now.Sub(e.expires.Add(-d.ttl)) < d.relistEvery && !now.After(e.expires) {
		return nil, false
	}
	r = &relisting{started: now, done: make(chan struct{})}
	d.relists[key] = r
	return r, true
}

// relisted ends r with what list answered.
func (d *discovery) relisted(r *relisting, actions []connectors.Action, err error) {
	d.mu.Lock()
	r.actions, r.err, r.finished = actions, err, true
	d.mu.Unlock()
	close(r.done)
}

// pruneRelistsLocked drops the finished re-lists that no longer limit
// anything, and those of key's tool's older versions.
func (d *discovery) pruneRelistsLocked(key slotKey, now time.Time) {
	for k, r := range d.relists {
		if (k.id == key.id && k.version < key.version) || (r.finished && now.Sub(r.started) >= d.relistEvery) {
			delete(d.relists, k)
		}
	}
}
