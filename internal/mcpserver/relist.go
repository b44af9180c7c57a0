package mcpserver

// Re-reading a tool's list for a tools/call of an action the agent does
// not list.
//
// A stateless MCP server cannot tell Quiver that its tool list changed, so
// an agent's list is built from the connector's cached one, and a tool the
// server just added would be "unknown tool" here until that cache ran out.
// A REST call naming an action missing from a stale list asks the connector
// to read the list again (connectors.ActionsRelister, connectors/mcp's
// relist.go: single flight, at most once per tool per its RelistInterval); a
// tools/call here does the same, from the receiving middleware that sees
// every unlisted name (replayUnlisted), after a key replay has had its
// turn:
//
//	tools/call {tool}__{action}, name not listed, no key replay
//	   │ {tool} is one of the agent's listed tools,
//	   │ whose connector can re-list (else: unknown tool, as before)
//	   ▼
//	Actions.Relist (bounded by discoveryWait): the connector decides
//	whether it asks the server or gives the list it has; a server that
//	refused our OAuth token gets the shared refresh and one more re-list
//	   │ the refresh failed (a dead grant), or ─────▶ its error, as a
//	   │ our credentials refused all the same         listed call's
//	   │ the list is not the one the agent's list was built from,
//	   │ and it names the action (actionNames, as a build would)
//	   ▼ else: unknown tool, as before
//	the agent's list built anew (once, however many callers: refresh)
//	   │ the name is listed now, with no x-mcp-header binding
//	   ▼ else: unknown tool (the next call meets the new list)
//	the listed tool's invoker, as its handler runs it
//
// The call then runs as any listed tool's: a non-retryable action needs
// its key argument (keyName, in the schema the new list shows), which is
// reserved and replayed as ever. A tool whose arguments bind headers
// (x-mcp-header) is not run from here: the SDK checked this request's
// headers against the list it had, which lacked the tool, so the call is
// refused as before and the next one, against the new list, is checked.
//
// A {tool} the agent's list left out because it needs configuration, or
// because its actions could not be listed (its server down when this
// replica built the list, and never listed here before: toolset.leftOut),
// is listed for the call instead, as a REST call of it lists it
// (leftOutCall): the agent, which may have the name from an earlier list
// or another replica's, gets REST's answer (tool_not_configured with the
// step to take, tool_unreachable) rather than "unknown tool", and once the
// tool is configured or its server back the call runs.
//
// Nothing tells the client that the list changed: the endpoint is
// stateless and has no stream to send notifications/tools/list_changed on.
// Its next tools/list shows the new tools.
//
// A listed name never comes here (the fast path and the SDK take it), so
// its cost is unchanged.

import (
	"context"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
)

// relisted answers a tools/call of a name the agent's list lacks when the
// tool it names lists the action once its list is read again; nil means
// the name stays unknown.
func (s *Server) relisted(ctx context.Context, account, agent int64, req *mcp.CallToolRequest) *mcp.CallToolResult {
	name := req.Params.Name
	prefix, _, ok := strings.Cut(name, "__")
	if !ok {
		return nil
	}
	cur, err := s.sets.get(ctx, account, agent)
	if err != nil {
		return nil
	}
	if ft, ok := cur.tools[name]; ok {
		// Listed since this request's list was taken.
		return s.runRelisted(ctx, cur, ft, req)
	}
	var part *agentTool
	for i := range cur.parts {
		if cur.parts[i].name == prefix {
			part = &cur.parts[i]
			break
		}
	}
	if part == nil {
		if t, ok := cur.leftOut[prefix]; ok {
			return s.leftOutCall(ctx, account, agent, t, req)
		}
		return nil
	}
	rt, err := s.opts.Tools.Resolve(ctx, account, part.id)
	if err != nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, discoveryWait)
	_, actions, err := s.opts.Actions.Relist(rctx, rt)
	cancel()
	if err != nil {
		// The token refresh the server's refusal asked for failed (a dead
		// grant: tool_not_configured), or the server refused our
		// credentials all the same (upstream_auth_failed): the answer a
		// listed call gets.
		return s.toolError(ctx, calls.ListingProblem(err))
	}
	if actions == nil || sameList(actions, part.actions) || !listsName(part.name, actions, name) {
		return nil
	}
	s.lists.forget(account, part.id) // a listing ended before this one is older
	next, err := s.sets.refresh(ctx, account, agent, cur)
	if err != nil {
		return nil
	}
	ft, ok := next.tools[name]
	if !ok {
		return nil
	}
	return s.runRelisted(ctx, next, ft, req)
}

// leftOutCall answers a tools/call of a name whose {tool_name} part is a
// tool the agent's list left out because its actions could not be listed
// (its server down when the list was built, on this replica): it lists
// them now, bounded by discoveryWait, as a REST call of the tool does. A
// failure is what that REST call answers (tool_unreachable, say), as a
// tool error; a list naming the action runs it as it runs listed. The
// agent's list shows the tool again once the build tries it anew
// (retryDiscovery).
func (s *Server) leftOutCall(ctx context.Context, account, agent int64, t agentTool, req *mcp.CallToolRequest) *mcp.CallToolResult {
	lctx, cancel := context.WithTimeout(ctx, discoveryWait)
	_, actions, err := s.opts.Actions.Actions(lctx, account, t.id)
	cancel()
	if err != nil {
		// Answered as for an action listed with an output schema, with no
		// structured content: the action may have one in the list the
		// agent has from elsewhere, and a client checks it even on an
		// error (typedResult).
		return s.answer(ctx, nil, calls.ListingProblem(err), true)
	}
	for i, n := range actionNames(t.name, actions) {
		if n != req.Params.Name {
			continue
		}
		_, ft, err := s.listedTool(account, t, n, &actions[i])
		if err != nil {
			return nil
		}
		now, err := s.sets.get(ctx, account, agent) // as it is after the wait
		if err != nil {
			return nil
		}
		return s.runRelisted(ctx, now, ft, req)
	}
	return nil
}

// runRelisted runs a tool found listed by relisted as its SDK handler
// would, unless the SDK had headers of it to check, or refuses it when
// ts, the agent's toolset as it is after the re-list's wait, says the
// agent was paused meanwhile (paused.go).
func (s *Server) runRelisted(ctx context.Context, ts *toolset, ft fastTool, req *mcp.CallToolRequest) *mcp.CallToolResult {
	if ts.paused != nil {
		return s.answer(ctx, nil, ts.paused, ft.typed)
	}
	if ft.headerBound {
		return nil
	}
	resp, err := ft.invoke(ctx, req.Params.Arguments)
	return s.answer(ctx, resp, err, ft.typed)
}

// sameList reports whether two action lists are the same list (not equal
// ones), as sameParts compares them: a re-list that gave the list the
// agent's list was built from found nothing new for it.
func sameList(a, b []connectors.Action) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// listsName reports whether the tool named tool, listing actions, would
// list name.
func listsName(tool string, actions []connectors.Action, name string) bool {
	for _, n := range actionNames(tool, actions) {
		if n == name {
			return true
		}
	}
	return false
}

// refresh builds the agent's toolset anew, from stale (a built one, which
// get gave), if stale is still the one cached, and returns the one cached
// then: a build that another request began meanwhile is shared, not
// repeated. expires is read and, once done is closed, written under ts.mu.
func (ts *toolsets) refresh(ctx context.Context, account, agent int64, stale *toolset) (*toolset, error) {
	ts.mu.Lock()
	if ts.m[agentKey{account, agent}] == stale {
		stale.expires = time.Time{}
	}
	ts.mu.Unlock()
	return ts.get(ctx, account, agent)
}
