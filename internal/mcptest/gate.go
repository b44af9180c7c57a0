package mcptest

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Changes to the tool list that the SDK would not make on its own: a tool
// dropped without a tools/list_changed notice (the SDK's RemoveTools always
// sends one, on the standalone stream), and a notice sent on a tools/call's
// own stream (the SDK sends list changes only on the standalone stream).
// Both live in a receiving middleware of every SDK server the Server
// installs, so they survive ForgetSessions and Restart.

// DropTool makes the server stop offering tool without telling any client:
// no notifications/tools/list_changed goes out, tools/list leaves it out,
// and tools/call of it answers the JSON-RPC error the SDK answers for an
// unknown tool (invalid params) without running anything. A server
// redeployed without the tool behind a load balancer behaves so.
func (s *Server) DropTool(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped[name] = true
}

// RestoreTool undoes DropTool, as quietly.
func (s *Server) RestoreTool(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dropped, name)
}

// AnnounceOnNextCall makes the next tools/call the server answers carry
// notifications/tools/list_changed on that call's own stream, before its
// result. It needs an event-stream answer (Options.JSONResponse false).
func (s *Server) AnnounceOnNextCall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.announce++
}

// Listings returns how many tool lists the server was asked for: tools/list
// requests without a cursor, the first page of each listing.
func (s *Server) Listings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listings
}

// installGate adds the middleware behind DropTool and AnnounceOnNextCall to
// srv.
func (s *Server) installGate(srv *mcp.Server) {
	// The server's own sending handler, to notify on a request's stream: a
	// message sent with the request's context travels on its stream.
	var send mcp.MethodHandler
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		send = next
		return next
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call":
				call, ok := req.(*mcp.CallToolRequest)
				if !ok || call.Params == nil {
					break
				}
				s.mu.Lock()
				dropped, announce := s.dropped[call.Params.Name], s.announce > 0
				if announce {
					s.announce--
				}
				s.mu.Unlock()
				if announce {
					notice := &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: call.Session, Params: &mcp.ToolListChangedParams{}}
					if _, err := send(ctx, "notifications/tools/list_changed", notice); err != nil {
						return nil, err
					}
				}
				if dropped {
					return nil, invalidParams("unknown tool %q", call.Params.Name)
				}
			case "tools/list":
				if lr, ok := req.(*mcp.ListToolsRequest); ok && (lr.Params == nil || lr.Params.Cursor == "") {
					s.mu.Lock()
					s.listings++
					s.mu.Unlock()
				}
				res, err := next(ctx, method, req)
				if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					return s.withoutDropped(list), nil
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	})
}

// withoutDropped returns list without the tools DropTool hid, leaving list
// (which may share its tools with the SDK) as it was.
func (s *Server) withoutDropped(list *mcp.ListToolsResult) *mcp.ListToolsResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dropped) == 0 {
		return list
	}
	out := *list
	out.Tools = make([]*mcp.Tool, 0, len(list.Tools))
	for _, t := range list.Tools {
		if !s.dropped[t.Name] {
			out.Tools = append(out.Tools, t)
		}
	}
	return &out
}
