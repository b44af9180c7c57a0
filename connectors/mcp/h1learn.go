package mcp

import (
	"sync"
	"sync/atomic"
	"time"
)

// idleBounds is what an h1Transport has seen of how long each origin's
// server keeps an idle connection, for servers that do not say.
//
// A server that sends no Keep-Alive timeout is trusted for reuseUnsaid,
// under the 5 s that Node and uvicorn keep one by default. One that keeps
// it for less (Node with a shorter keepAliveTimeout, on an event stream's
// answer, which carries no Keep-Alive header) closes a pooled connection
// while it is still reusable: one found closed is merely dialled again,
// but one the server closes just as a request is written into it loses the
// request unrun, and a tools/call so lost has an unknown outcome. So the
// idle time after which an origin's server had closed a connection (found
// closed before use, or an exchange on a reused one failing) bounds how
// long its connections are reused, less the margin a Keep-Alive timeout
// gets (lessMargin): the request lost that way is at most the first, not
// one in every few at that spacing.
//
// A bound is the shortest idle time seen, and is forgotten boundFor after
// it was last seen, so a server restart (which closes connections however
// long they idled) costs a while of new connections, not pooling for good.
type idleBounds struct {
	some atomic.Bool // m may hold a bound: without one, limit takes no lock
	mu   sync.Mutex
	m    map[string]idleBound // by scheme://host:port
}

type idleBound struct {
	idle time.Duration // the shortest idle time after which the server had closed one
	seen time.Time     // when a close last taught it
}

// boundFor is how long a learnt bound holds after it was last seen.
const boundFor = time.Minute

// saw notes that key's server had closed a connection idle for idle.
func (b *idleBounds) saw(key string, idle time.Duration, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]idleBound{}
	}
	old, ok := b.m[key]
	if ok && now.Sub(old.seen) <= boundFor && old.idle < idle {
		idle = old.idle
	}
	b.m[key] = idleBound{idle: idle, seen: now}
	b.some.Store(true)
}

// limit is how long a connection to key may idle and still be reused, by
// what was seen; ok is false when nothing was, or not lately.
func (b *idleBounds) limit(key string, now time.Time) (time.Duration, bool) {
	if !b.some.Load() {
		return 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bd, ok := b.m[key]
	if !ok {
		return 0, false
	}
	if now.Sub(bd.seen) > boundFor {
		delete(b.m, key)
		b.some.Store(len(b.m) > 0)
		return 0, false
	}
	return lessMargin(bd.idle), true
}

// lessMargin is how long a connection may idle when its server keeps one
// for full: less half of it, up to a second, for the request's way to the
// server and the server's own timer.
func lessMargin(full time.Duration) time.Duration {
	return full - min(full/2, time.Second)
}
