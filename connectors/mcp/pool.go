package mcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/logging"
)

// slotKey names the session of one configuration of one tool.
type slotKey struct {
	id, version int64
}

// slot holds the pooled session of one (tool ID, Version). ready is closed
// once the first user's connect finished, with sess or err set.
type slot struct {
	key   slotKey
	ready chan struct{}
	sess  *mcp.ClientSession
	fast  atomic.Pointer[fastSession] // nil: calls go through sess
	err   error

	// Guarded by pool.mu.
	inflight int
	lastUsed time.Time
	retired  bool // takes no new users; closed when inflight reaches 0
	// retiredAs is the reason label of a slot retired while connecting,
	// counted once its session opens: one that never does was never live.
	retiredAs string
	closed    bool
	refused   bool // the server refused our credentials on the session's own requests
}

// pool keeps live sessions per (tool ID, Version); see the package doc.
type pool struct {
	c *Connector

	mu     sync.Mutex
	slots  map[slotKey]*slot
	latest map[int64]int64 // the newest Version seen per tool ID
	done   bool
	wg     sync.WaitGroup // closing sessions
	stop   chan struct{}
}

func newPool(c *Connector) *pool {
	p := &pool{c: c, slots: map[slotKey]*slot{}, latest: map[int64]int64{}, stop: make(chan struct{})}
	p.wg.Add(1)
	go p.reap()
	return p
}

// acquire returns the tool's live session, connecting if there is none. The
// caller must release the slot. Its error is a *connectors.Error: nothing of
// the caller's request was sent.
func (p *pool) acquire(ctx context.Context, t *connectors.Tool, tgt *target) (*slot, error) {
	key := slotKey{t.ID, t.Version}
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return nil, connectors.Errorf(connectors.KindUnreachable, nil, "the MCP connector is closed")
	}
	if t.Version > p.latest[t.ID] {
		p.latest[t.ID] = t.Version
		for k, s := range p.slots {
			if k.id == t.ID && k.version < t.Version {
				p.retireLocked(ctx, s, "reconfigured")
			}
		}
	}
	s := p.slots[key]
	if s == nil {
		s = &slot{key: key, ready: make(chan struct{})}
		p.slots[key] = s
		go p.connect(s, tgt, logging.RequestID(ctx))
	}
	s.inflight++
	// Each user counts in wg until it releases, so that close waits for
	// it, and a retired session it leaves is closed (closeLocked's Add)
	// before close's Wait returns, never after.
	p.wg.Add(1)
	s.lastUsed = time.Now()
	if t.Version < p.latest[t.ID] {
		// A call made with an older configuration still runs with it, on a
		// session that closes after it.
		p.retireLocked(ctx, s, "reconfigured")
	}
	p.mu.Unlock()

	select {
	case <-s.ready:
	case <-ctx.Done():
		p.release(s)
		return nil, connectors.Errorf(connectors.KindUnreachable, ctx.Err(),
			"the MCP server at %s did not complete the session handshake in time", tgt.host)
	}
	if s.err != nil {
		p.release(s)
		return nil, s.err
	}
	return s, nil
}

// connect opens s's session on a context of its own, so that one caller
// giving up does not fail the others waiting. Its lines carry rid, the ID
// of the request that asked for the session, and come before that request
// learns the outcome.
func (p *pool) connect(s *slot, tgt *target, rid string) {
	lctx := logging.WithRequestID(context.Background(), rid)
	ctx, cancel := context.WithTimeout(context.Background(), p.c.opts.ConnectTimeout)
	defer cancel()
	key := s.key
	a := &attempt{}
	toolsChanged := func() { p.c.discovery.invalidate(key) }
	replaced := func() { p.retire(context.Background(), s, "replaced by the server") }
	refused := func() {
		p.mu.Lock()
		s.refused = true
		p.mu.Unlock()
	}
	sess, err := p.c.dial(withAttempt(ctx, a), tgt, toolsChanged, replaced, refused)
	p.mu.Lock()
	if err != nil {
		s.err = handshakeFailure(classify(a.snapshot(), err, tgt), tgt)
		if p.slots[key] == s {
			delete(p.slots, key)
		}
		s.closed = true
		p.mu.Unlock()
		p.c.opts.Events.Failed()
		p.c.opts.Logger.DebugContext(lctx, "mcp session failed to open", "tool_id", key.id, "version", key.version,
			"host", tgt.host, "kind", connectors.KindOf(s.err))
		close(s.ready)
		return
	}
	s.sess = sess
	late := s.retiredAs
	if !p.c.opts.SDKCalls {
		// The fast path's requests go over connections of its own, on the
		// caller's goroutine (h1.go), through the same round tripper.
		client := p.c.client(p.c.h1, tgt)
		s.fast.Store(newFastSession(sess, client, tgt.endpoint, p.c.opts.MaxResponseBytes, toolsChanged))
	}
	p.mu.Unlock()
	p.c.opts.Events.Opened()
	if late != "" {
		p.c.opts.Events.Retired(late)
	}
	p.c.opts.Logger.DebugContext(lctx, "mcp session opened", "tool_id", key.id, "version", key.version,
		"host", tgt.host, "stateful", sess.ID() != "")
	close(s.ready)
	// A session the server or the network ended is replaced on next use.
	// One the SDK ended after the server refused our credentials is only
	// retired: nothing says the server's tools changed, and the caller
	// that met the refusal reads the cached list beside it (RelistActions).
	go func() {
		sess.Wait()
		p.mu.Lock()
		ours, refused := s.retired, s.refused // ours: we closed it
		p.mu.Unlock()
		switch {
		case ours:
		case refused:
			p.retire(context.Background(), s, "credentials refused")
		default:
			p.lost(context.Background(), s, "ended")
		}
	}()
}

// lost retires s, which the server or the network ended, and drops the
// tool's cached actions: a notice that its tool list changed goes out on
// the session's standalone stream, so one sent meanwhile (the server
// restarted, perhaps with other tools) never came.
func (p *pool) lost(ctx context.Context, s *slot, reason string) {
	p.c.discovery.invalidate(s.key)
	p.retire(ctx, s, reason)
}

// handshakeFailure is the error of a session that failed to open. Opening
// one (connecting, initialize) runs no tool, so what classify would call an
// unknown outcome (the server took initialize and then timed out, or the
// connection dropped) is the server being unreachable: no call made on the
// session was sent.
func handshakeFailure(err *connectors.Error, tgt *target) *connectors.Error {
	if err.Kind != connectors.KindOutcomeUnknown {
		return err
	}
	return connectors.Errorf(connectors.KindUnreachable, err, "the MCP server at %s did not complete the session handshake (%s)", tgt.host, err.Message)
}

// release gives back a slot taken by acquire.
func (p *pool) release(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.inflight--
	s.lastUsed = time.Now()
	if s.retired && s.inflight == 0 {
		p.closeLocked(s)
	}
	p.wg.Done()
}

// retire stops handing s out; it closes once its calls returned. ctx is
// that of the request that retires it, if one does, for its log line.
func (p *pool) retire(ctx context.Context, s *slot, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retireLocked(ctx, s, reason)
}

func (p *pool) retireLocked(ctx context.Context, s *slot, reason string) {
	if p.slots[s.key] == s {
		delete(p.slots, s.key)
	}
	if !s.retired {
		s.retired = true
		p.c.opts.Logger.DebugContext(ctx, "mcp session retired", "tool_id", s.key.id, "version", s.key.version, "reason", reason)
		label, _ := retireReason(reason)
		switch {
		case s.sess != nil:
			p.c.opts.Events.Retired(label)
		case !s.closed:
			s.retiredAs = label // still connecting
		}
	}
	if s.inflight == 0 {
		p.closeLocked(s)
	}
}

// retireReason is the RetireReasons value of a retirement logged with
// reason; ok is false for a reason it does not know (a test holds every
// caller's to it), which is taken for "ended".
func retireReason(reason string) (label string, ok bool) {
	switch reason {
	case "idle", "reconfigured", "ended":
		return reason, true
	case "session gone":
		return "ended", true
	case "replaced by the server":
		return "replaced", true
	case "credentials refused":
		return "refused", true
	case "connector closed":
		return "closed", true
	}
	return "ended", false
}

// closeLocked closes s's session in the background. A slot still connecting
// is closed by its connect.
func (p *pool) closeLocked(s *slot) {
	if s.closed {
		return
	}
	select {
	case <-s.ready:
	default:
		// Still connecting: close it when the connect ends.
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			<-s.ready
			p.mu.Lock()
			defer p.mu.Unlock()
			p.closeLocked(s)
		}()
		return
	}
	s.closed = true
	if s.sess == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s.sess.Close()
	}()
}

// reap closes sessions idle for longer than IdleTimeout.
func (p *pool) reap() {
	defer p.wg.Done()
	every := max(p.c.opts.IdleTimeout/4, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-tick.C:
			p.mu.Lock()
			for _, s := range p.slots {
				if s.inflight == 0 && now.Sub(s.lastUsed) >= p.c.opts.IdleTimeout {
					p.retireLocked(context.Background(), s, "idle")
				}
			}
			p.mu.Unlock()
			p.c.h1.closeStale()
		}
	}
}

// close retires every slot and waits for the calls using them to end and
// their sessions to close.
func (p *pool) close() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	close(p.stop)
	for _, s := range p.slots {
		p.retireLocked(context.Background(), s, "connector closed")
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// dial opens an initialized session with the server of tgt. onToolsChanged
// runs when the server says its tool list changed, or could not have (its
// standalone stream reopened), onReplaced when it names another session
// than ours in a response, onRefused when it answers 401 or 403 (any may be
// nil).
func (c *Connector) dial(ctx context.Context, tgt *target, onToolsChanged, onReplaced, onRefused func()) (*mcp.ClientSession, error) {
	if onReplaced == nil {
		onReplaced = func() {}
	}
	httpClient := c.client(c.transport, tgt)
	rt := httpClient.Transport.(*roundTripper)
	rt.replaced, rt.reopened, rt.refused = onReplaced, onToolsChanged, onRefused
	opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if onToolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { onToolsChanged() }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "quiver", Version: "1.0.0"}, opts)
	transport := &mcp.StreamableClientTransport{
		Endpoint:     tgt.endpoint,
		HTTPClient:   httpClient,
		MaxEventSize: int(c.opts.MaxResponseBytes),
	}
	return client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
}
