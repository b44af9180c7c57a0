package mcpserver

// A paused agent's kill switch.
//
// While an agent's status is paused, every tools/call on its endpoint is
// refused before anything reaches the engine: no Idempotency key is
// reserved or consumed, nothing is dispatched or logged as a call. The
// refusal is a tool error (isError true) whose text is the API's envelope
// with code forbidden, as every other refusal over MCP. Everything else
// (initialize, tools/list, ping) is answered as ever: a client still
// connects and sees the agent's tools.
//
//	tools/call ─▶ fast path (fast.go): listed name ─▶ ts.paused? ─▶ forbidden
//	     │                                                 │ no
//	     │ anything else                                   ▼ the engine
//	     ▼
//	SDK ─▶ refusePaused (outermost for tools/call) ─▶ ts.paused? ─▶ forbidden
//	                                                      │ no
//	                                                      ▼ replayUnlisted, relist, the tool's handler
//
// Every name is refused, listed or not, so neither an unlisted replay
// (unlisted.go, which reaches the engine) nor a re-list (relist.go, which
// reaches the tool's server) runs for a paused agent; a call that was
// waiting on a re-list when the agent was paused is refused by the
// toolset it would run from (runRelisted). A request the SDK
// refuses before its method handler (bad params) keeps its protocol error.
//
// The status is read with the agent, each time its toolset is built
// (toolset.go): a PATCH through this replica drops the toolset at once
// (ForgetAgent), one through another shows within ListTTL. It is kept in
// the toolset, not in the *mcp.Server a build may reuse, so a status-only
// change never makes the server anew; the middleware finds the request's
// toolset in its context (serve).

import (
	"context"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/agents"
	"github.com/quiverhq/quiver/internal/problem"
)

// pausedProblem is the refusal of a tools/call of ag, or nil when ag is
// not paused.
func pausedProblem(ag *agents.Agent) *problem.Error {
	if ag.Status != agents.Paused {
		return nil
	}
	id := strconv.FormatInt(ag.ID, 10)
	return problem.New(problem.Forbidden,
		"Agent %s (%q) is paused: its tools cannot be called. To resume, set its status to active or draft (PATCH /api/v1/agents/%s/).",
		id, ag.Name, id)
}

// refusePaused is the outermost receiving middleware of an agent's server
// that sees tools/call (refuseUnoffered, before it, lets it by): a tools/call to a paused agent is answered with the refusal, as the fast
// path answers it.
func (s *Server) refusePaused(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodToolsCall {
			return next(ctx, method, req)
		}
		ts, _ := ctx.Value(serverKey{}).(*toolset)
		cr, ok := req.(*mcp.CallToolRequest)
		if ts == nil || ts.paused == nil || !ok {
			return next(ctx, method, req)
		}
		var typed bool
		if cr.Params != nil {
			typed = ts.tools[cr.Params.Name].typed
		}
		return complete(cr, s.answer(ctx, nil, ts.paused, typed)), nil
	}
}
