package mcpserver

// Listing a tool's actions for a build without holding the build up.
//
// A build needs each attached tool's actions. Most come from the
// connector's cache at once (past its DiscoveryTTL the connector serves a
// list as it was while it reads it again, up to a bound); but when a
// tool's cached list is gone (a tools/list_changed notice, a lost session,
// that bound passed), its server is asked again, and a slow one (or one that does
// not answer, until discoveryWait) held up the build, and with it every
// request to the agent: tools/call of its other tools, tools/list, ping.
//
//	discover(tool)
//	   │ a listing of (account, tool, version) under way, or one finished
//	   │ that no build took yet; else one started, in the background,
//	   │ bounded by discoveryWait
//	   ▼
//	the tool was listed before, ──▶ wait staleWait (not at all for a
//	or its last listing failed     listing an earlier build began), then
//	   │ neither                   leave it as it was, listed or not (the
//	   │                           listing goes on; the next build takes
//	   ▼                           its result)
//	wait for the listing (discoveryWait at most)
//
// Names cannot move for it: a tool's name depends on the attached tools
// and their names, which every build reads as ever (the agent, each tool
// resolved); only the actions of a tool already listed may be one
// listing late, as they already were for a tool whose server failed. A
// tool attached or configured anew has no list yet and is waited for, so
// it shows within QUIVER_CACHE_TTL as before; one whose server failed to
// list it shows once a listing succeeds, as before, but no request waits
// for the retries (retryDiscovery). One listing per tool runs at
// a time, however many builds want it.

import (
	"context"
	"sync"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// staleWait is how long a build waits for a tool's list anew when it has
// the tool's list from its previous build: long enough for a list the
// connector has cached, too short to notice.
const staleWait = 50 * time.Millisecond

// listKey names one version of one tool of one account.
type listKey struct{ account, tool, version int64 }

// pendingList is one listing of a tool's actions; done closes when
// actions, err and at are set.
type pendingList struct {
	done    chan struct{}
	actions []connectors.Action
	err     error
	at      time.Time // when it ended
}

// listings holds the listings under way, and those ended that no build
// has taken yet.
type listings struct {
	mu sync.Mutex
	m  map[listKey]*pendingList
}

// start returns the listing of key, starting one if none is under way or
// waiting to be taken (began reports which). It outlives ctx, within
// discoveryWait.
func (l *listings) start(ctx context.Context, key listKey, list func(context.Context) ([]connectors.Action, error)) (p *pendingList, began bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.m[key]; p != nil {
		return p, false
	}
	if l.m == nil {
		l.m = map[listKey]*pendingList{}
	}
	for k := range l.m { // the tool's other versions are of no use now
		if k.account == key.account && k.tool == key.tool {
			delete(l.m, k)
		}
	}
	p = &pendingList{done: make(chan struct{})}
	l.m[key] = p
	go func() {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discoveryWait)
		p.actions, p.err = list(lctx)
		cancel()
		p.at = time.Now()
		close(p.done)
	}()
	return p, true
}

// ended waits for the listing to end, and reports whether it did: for a
// tool listed before or whose last listing failed (known), for staleWait
// if this build began the listing, else not at all; for any other, as
// long as ctx allows.
func (p *pendingList) ended(ctx context.Context, known, began bool) bool {
	select {
	case <-p.done:
		return true
	default:
	}
	if known && !began {
		return false
	}
	var stale <-chan time.Time
	if known {
		timer := time.NewTimer(staleWait)
		defer timer.Stop()
		stale = timer.C
	}
	select {
	case <-p.done:
		return true
	case <-stale:
		return false
	case <-ctx.Done():
		return false
	}
}

// take removes an ended listing, so the next build lists anew.
func (l *listings) take(key listKey, p *pendingList) {
	l.mu.Lock()
	if l.m[key] == p {
		delete(l.m, key)
	}
	l.mu.Unlock()
}

// forget drops the tool's ended listings, which are older than what a
// build must see next (a re-list, a new configuration); one under way is
// left to end.
func (l *listings) forget(account, tool int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, p := range l.m {
		if k.account != account || k.tool != tool {
			continue
		}
		select {
		case <-p.done:
			delete(l.m, k)
		default:
		}
	}
}
