package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/problem"
)

// maxNameLen is the longest tool name MCP allows.
const maxNameLen = 128

// maxToolNameLen bounds the {tool_name} part, leaving room for the action.
const maxToolNameLen = 64

// agentKey names one agent of one account.
type agentKey struct{ account, agent int64 }

// toolset is one build of an agent's MCP server. done closes when srv and
// err are set; a build is shared by every request that arrives meanwhile.
type toolset struct {
	done chan struct{}
	srv  *mcp.Server
	// impl is srv's Implementation, which the SDK puts in each result's
	// _meta under the 2026-07-28 protocol; tools holds the handler of each
	// tool srv lists, for the tools/call fast path (fast.go).
	impl     *mcp.Implementation
	implJSON []byte // impl as JSON, for results under 2026-07-28
	tools    map[string]fastTool
	err      error
	expires  time.Time
	// actions holds what each tool listed, reused for a tool whose
	// discovery fails in the next build, so a blip does not hide it.
	actions map[int64][]connectors.Action
	// failed holds when a tool's discovery last failed, for the tools
	// whose latest attempt did: the next builds do not wait on it again
	// before retryDiscovery has passed.
	failed map[int64]time.Time
	// parts and title are what srv was built from: a build that finds the
	// same keeps srv rather than making it anew.
	parts []agentTool
	title string
	// attached is every tool attached to the agent, configured or not.
	attached []int64
	// leftOut holds, by {tool_name} part, the tools srv leaves out because
	// they need configuration, or because their actions could not be
	// listed and none were listed before: a call of one of their names is
	// answered as a REST call of the tool is (relisted: tool_not_configured,
	// tool_unreachable), not as an unknown tool.
	leftOut map[string]agentTool
	// paused is the refusal of every tools/call while the agent is paused,
	// nil otherwise (paused.go). It is read with the agent on every build,
	// whether or not srv is kept.
	paused *problem.Error
}

// toolsets caches one toolset per agent for ListTTL. Reading an agent costs
// one query; each tool's actions come from toolconfig's and the connector's
// own caches, so a build is cheap and happens at most once per agent per TTL.
type toolsets struct {
	s  *Server
	mu sync.Mutex
	m  map[agentKey]*toolset
}

func newToolsets(s *Server) *toolsets { return &toolsets{s: s, m: map[agentKey]*toolset{}} }

// get returns the agent's toolset, building it if the cached one expired.
func (ts *toolsets) get(ctx context.Context, account, agent int64) (*toolset, error) {
	key := agentKey{account, agent}
	now := time.Now()
	ts.mu.Lock()
	cur := ts.m[key]
	if cur != nil {
		select {
		case <-cur.done:
			if cur.err == nil && now.Before(cur.expires) {
				ts.mu.Unlock()
				return cur, nil
			}
		default:
			ts.mu.Unlock()
			return cur.wait(ctx)
		}
	}
	next := &toolset{done: make(chan struct{})}
	ts.m[key] = next
	if len(ts.m) > 4096 {
		ts.sweepLocked(now)
	}
	ts.mu.Unlock()

	// The build is shared, so it must not end with the first caller.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ts.s.opts.BuildTimeout)
	defer cancel() // a build that panics stops its timer too
	next.err = ts.buildOnce(bctx, next, key, cur)
	next.expires = time.Now().Add(ts.s.opts.ListTTL)
	close(next.done)
	if next.err != nil {
		// Errors are not cached: an agent created a moment ago must be
		// found on the next request.
		ts.forget(key, next)
		return nil, next.err
	}
	return next, nil
}

// buildOnce is s.build, which ends next whatever happens: a build that
// panics is dropped and its waiters get an error before the panic goes
// on, instead of waiting on it until their requests time out.
func (ts *toolsets) buildOnce(ctx context.Context, next *toolset, key agentKey, cur *toolset) error {
	finished := false
	defer func() {
		if finished {
			return
		}
		next.err = errors.New("mcp: building the agent's tool list failed")
		close(next.done)
		ts.forget(key, next)
	}()
	err := ts.s.build(ctx, next, key.account, key.agent, cur)
	finished = true
	return err
}

// forget drops the failed build next from the cache, unless a newer one
// took its place.
func (ts *toolsets) forget(key agentKey, next *toolset) {
	ts.mu.Lock()
	if ts.m[key] == next {
		delete(ts.m, key)
	}
	ts.mu.Unlock()
}

func (t *toolset) wait(ctx context.Context) (*toolset, error) {
	select {
	case <-t.done:
		if t.err != nil {
			return nil, t.err
		}
		return t, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// forgetAgent drops the agent's toolset, built or being built: the next
// request builds it anew. A build under way still answers the requests
// that wait for it, which came before the change.
func (ts *toolsets) forgetAgent(account, agent int64) {
	ts.mu.Lock()
	delete(ts.m, agentKey{account, agent})
	ts.mu.Unlock()
}

// forgetTool drops the toolsets of the account's agents that have the
// tool attached, and those still being built (whose tools are not known
// yet).
func (ts *toolsets) forgetTool(account, tool int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, t := range ts.m {
		if k.account != account {
			continue
		}
		select {
		case <-t.done:
			if !slices.Contains(t.attached, tool) {
				continue
			}
		default:
		}
		delete(ts.m, k)
	}
}

// sweepLocked drops expired toolsets; ts.mu is held.
func (ts *toolsets) sweepLocked(now time.Time) {
	for k, t := range ts.m {
		select {
		case <-t.done:
			if now.After(t.expires) {
				delete(ts.m, k)
			}
		default:
		}
	}
}

// build reads the agent and its tools and makes its MCP server into ts. A
// tool that is not configured is left out; one whose actions cannot be
// listed now is listed as it was last time, or left out.
func (s *Server) build(ctx context.Context, ts *toolset, account, agentID int64, prev *toolset) error {
	ag, err := s.opts.Agents.Get(ctx, account, agentID)
	if err != nil {
		return err
	}
	ts.paused = pausedProblem(ag)
	var last map[int64][]connectors.Action
	var failed map[int64]time.Time
	if prev != nil {
		last, failed = prev.actions, prev.failed
	}
	tools := make([]agentTool, len(ag.Tools))
	var wg sync.WaitGroup
	for i, id := range ag.Tools {
		wg.Go(func() { tools[i] = s.discover(ctx, account, id, last[id], failed[id]) })
	}
	wg.Wait()
	for _, t := range tools {
		if !t.failedAt.IsZero() {
			if ts.failed == nil {
				ts.failed = map[int64]time.Time{}
			}
			ts.failed[t.id] = t.failedAt
		}
	}
	// Names first, among every tool that has one, listed or not: a tool
	// not configured now, or whose server cannot list its actions, keeps
	// its name, which otherwise a tool of the same name would take over,
	// and with it the calls an agent makes by the name it listed before.
	tools = slices.DeleteFunc(tools, func(t agentTool) bool { return t.actions == nil && t.base == "" })
	disambiguate(tools)
	for _, t := range tools {
		if t.actions == nil && (!t.failedAt.IsZero() || t.unconfigured) {
			if ts.leftOut == nil {
				ts.leftOut = map[string]agentTool{}
			}
			ts.leftOut[t.name] = t
		}
	}
	tools = slices.DeleteFunc(tools, func(t agentTool) bool { return t.actions == nil })
	if prev != nil && prev.srv != nil && prev.title == ag.Name && sameParts(prev.parts, tools) {
		// Nothing changed (the connectors handed out the very lists they
		// gave last time): keep the server, its schemas and handlers.
		ts.srv, ts.impl, ts.implJSON, ts.tools, ts.actions, ts.parts, ts.title = prev.srv, prev.impl, prev.implJSON, prev.tools, prev.actions, prev.parts, prev.title
		ts.attached = ag.Tools
		return nil
	}
	if prev != nil && prev.srv != nil && prev.title == ag.Name && equalParts(prev.parts, tools) {
		// The lists were read anew and say the same (a connector's cache
		// ran out): keep the server, which for big schemas takes seconds
		// to make, but take the new lists, so the next build finds them
		// the same (sameParts) and a re-list compares with them.
		ts.srv, ts.impl, ts.implJSON, ts.tools, ts.title = prev.srv, prev.impl, prev.implJSON, prev.tools, prev.title
		ts.actions = make(map[int64][]connectors.Action, len(tools))
		for _, t := range tools {
			ts.actions[t.id] = t.actions
		}
		ts.parts, ts.attached = tools, ag.Tools
		return nil
	}

	impl := &mcp.Implementation{Name: "quiver-agent-" + strconv.FormatInt(agentID, 10), Title: ag.Name, Version: s.opts.Version}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		Logger: s.sdkLog, SetCacheable: private})
	fast := map[string]fastTool{}
	hidden := map[string]bool{} // from a read-only key's list (readonly.go)
	// A retried call of a tool that has left the list still replays
	// (unlisted.go); fast and hidden are filled before srv serves anything.
	// A paused agent's calls are refused before either (paused.go), and a
	// method of a capability srv does not declare before all (capabilities.go).
	srv.AddReceivingMiddleware(refuseUnoffered, s.refusePaused, s.replayUnlisted(account, agentID, fast), hideFromReadOnly(hidden))
	actions := make(map[int64][]connectors.Action, len(tools))
	for _, t := range tools {
		actions[t.id] = t.actions
		names := actionNames(t.name, t.actions)
		for i := range t.actions {
			a := &t.actions[i]
			name := names[i]
			if name == "" {
				// The same action name twice in one tool's list: the engine
				// runs the first, so only the first can be listed.
				s.log.WarnContext(ctx, "mcp: a tool lists one action name twice; the second is left out",
					"agent", agentID, "tool", t.id, "action", a.Name)
				continue
			}
			tool, ft, err := s.listedTool(account, t, name, a)
			if err != nil {
				s.log.WarnContext(ctx, "mcp: action left out", "agent", agentID, "tool", t.id, "action", a.Name, "error", err)
				continue
			}
			if err := addTool(srv, tool, s.handle(ft.invoke, ft.typed)); err != nil {
				s.log.WarnContext(ctx, "mcp: action left out", "agent", agentID, "tool", t.id, "action", a.Name, "error", err)
				continue
			}
			fast[name] = ft
			if !calls.ReadOnlyAction(a) {
				hidden[name] = true
			}
		}
	}
	implJSON, err := json.Marshal(impl)
	if err != nil {
		return err
	}
	ts.srv, ts.impl, ts.implJSON, ts.tools, ts.actions, ts.parts, ts.title = srv, impl, implJSON, fast, actions, tools, ag.Name
	ts.attached = ag.Tools
	return nil
}

// sameParts reports whether two builds saw the same tools, names and
// action lists (the same lists, not equal ones: a connector hands out a new
// list whenever it discovered anew).
func sameParts(a, b []agentTool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.id != y.id || x.name != y.name || len(x.actions) != len(y.actions) ||
			(len(x.actions) > 0 && &x.actions[0] != &y.actions[0]) {
			return false
		}
	}
	return true
}

// equalParts reports whether two builds saw the same tools, names and
// equal action lists: each action the same in everything a build makes
// of it.
func equalParts(a, b []agentTool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.id != y.id || x.name != y.name || x.base != y.base || !slices.EqualFunc(x.actions, y.actions, connectors.Action.Equal) {
			return false
		}
	}
	return true
}

// private marks every cacheable result (tools/list's among them) as the
// caller's own and stale at once: an agent's list belongs to one account
// and follows its attaches, so no shared cache may keep it.
func private(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	c.CacheScope = "private"
	c.TTLMs = 0
}
