package mcpserver

// The agent's list as a read-only API key sees it.
//
// A read-only key may call only actions annotated read-only: the engine
// refuses any other with forbidden (calls.ReadOnlyAction decides, there and
// here). So such a key's tools/list shows only those, and an agent handed
// one is not shown tools it can never call. A full key's list is srv's, as
// ever.
//
//	build ──▶ srv: every action (full keys)
//	   └────▶ readOnlyView: the read-only actions' tools and handlers,
//	          the others' invokers (hidden)
//	             │ the first request of a read-only key the SDK serves
//	             ▼
//	          its own *mcp.Server, made once per build, and kept with
//	          srv by a build that keeps srv (sameParts, equalParts)
//
// A tools/call of a hidden name stays the engine's to refuse, not an
// unknown tool: the fast path takes every name srv lists, whatever the key,
// and the engine answers forbidden as before; what the fast path hands on
// meets the read-only server, which runs a hidden name's invoker as srv's
// handler would (callHidden). The SDK checks the Mcp-Param-* headers only
// of a tool its server lists, so a hidden tool whose arguments bind some
// (x-mcp-header) is refused forbidden whatever those headers say. A name
// neither server lists goes to key replays and re-lists (replayUnlisted) as
// on srv, and a re-list that adds an action builds a new toolset, so a new
// view, for either key.
//
// With no action hidden there is no view: a read-only key is served srv.

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// viewTool is one tool the read-only server lists.
type viewTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

// readOnlyView is an agent's server as a read-only API key sees it, made
// the first time one needs it.
type readOnlyView struct {
	once    sync.Once
	srv     *mcp.Server
	makeSrv func() *mcp.Server // dropped once srv is made
}

// server returns the view's server, making it on first use.
func (v *readOnlyView) server() *mcp.Server {
	v.once.Do(func() {
		v.srv = v.makeSrv()
		v.makeSrv = nil
	})
	return v.srv
}

// server is the agent's server for a key: srv, or for a read-only key the
// view, when some action is hidden from it.
func (ts *toolset) server(readOnly bool) *mcp.Server {
	if readOnly && ts.ro != nil {
		return ts.ro.server()
	}
	return ts.srv
}

// newReadOnlyView returns the view of the agent's build that lists tools
// and hides the actions in hidden, whose invokers listed (srv's tools, for
// the fast path) holds too; nil when nothing is hidden.
func (s *Server) newReadOnlyView(account, agent int64, impl *mcp.Implementation, listed map[string]fastTool, tools []viewTool, hidden map[string]fastTool) *readOnlyView {
	if len(hidden) == 0 {
		return nil
	}
	return &readOnlyView{makeSrv: func() *mcp.Server {
		srv := mcp.NewServer(impl, s.serverOptions())
		// Every name srv lists passes replayUnlisted as on srv; the hidden
		// ones are then callHidden's.
		srv.AddReceivingMiddleware(s.replayUnlisted(account, agent, listed), s.callHidden(hidden))
		for _, t := range tools {
			srv.AddTool(t.tool, t.handler)
		}
		return srv
	}}
}

// callHidden is a receiving middleware of a read-only view's server: a
// tools/call of a name hidden from it runs as srv's handler runs it, so
// the engine answers (forbidden, for a read-only key).
func (s *Server) callHidden(hidden map[string]fastTool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			cr, ok := req.(*mcp.CallToolRequest)
			if method != methodToolsCall || !ok || cr.Params == nil {
				return next(ctx, method, req)
			}
			ft, ok := hidden[cr.Params.Name]
			if !ok {
				return next(ctx, method, req)
			}
			resp, err := ft.invoke(ctx, cr.Params.Arguments)
			return complete(cr, s.answer(ctx, resp, err, ft.typed)), nil
		}
	}
}
