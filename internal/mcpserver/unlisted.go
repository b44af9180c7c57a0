package mcpserver

// Replaying a key whose tool has left the agent's list.
//
// A retried tools/call must replay its first outcome as a REST retry does,
// "even if the tool was since deleted or reconfigured" (API.md): but once
// a tool is reset, detached or deleted its names leave the agent's list,
// and the SDK would answer the retry with JSON-RPC's "unknown tool". So a
// tools/call naming a tool the agent does not list is first looked at here,
// in the receiving middleware of the agent's *mcp.Server. The fast path
// (fast.go) takes listed names only and hands every other to the SDK, so
// both paths meet this one piece of code and answer alike.
//
//	tools/call, name not listed
//	   │ a key argument (idempotency_key, quiver_idempotency_key[_N])
//	   │ holds a key of this account (Calls.Key, scoped to the account)
//	   │ whose action the name ends in (__{action}, as actionNames makes it)
//	   ▼ yes                                          │ no (or no key argument)
//	invoke(key's tool, key's action, that argument)   ▼
//	   = the REST call the key was first used with    a re-list (relist.go),
//	   │                                              else the SDK: unknown tool
//	   ▼
//	calls.Engine.Call: the stored answer if the arguments are the same,
//	idempotency_key_reused if not, request_in_progress or
//	tool_outcome_unknown as over REST; a read-only API key gets what REST
//	gives it (forbidden for a key whose action was not read-only).
//
// Nothing new is run from here that REST would not run: the call carries the
// key, and the engine reserves a key it has no row for only after finding the
// tool and action configured. A key of another account is not found, so the
// call goes on as one with no key used: to a re-list (relist.go), which
// answers a tool still attached but not configured as REST does, else an
// unknown tool. So does a key whose row expired, which is new again.

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/problem"
)

// maxKeyCandidates bounds the key lookups one unlisted call costs.
const maxKeyCandidates = 3

// replayUnlisted is the receiving middleware of an agent's server: a
// tools/call of a name not in listed goes to s.unlisted, then to
// s.relisted (relist.go), and on to the SDK (unknown tool) if neither
// answers it.
func (s *Server) replayUnlisted(account, agent int64, listed map[string]fastTool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != methodToolsCall {
				return next(ctx, method, req)
			}
			cr, ok := req.(*mcp.CallToolRequest)
			if !ok || cr.Params == nil {
				return next(ctx, method, req)
			}
			if _, ok := listed[cr.Params.Name]; ok {
				return next(ctx, method, req)
			}
			if res := s.unlisted(ctx, account, cr.Params.Name, cr.Params.Arguments); res != nil {
				return complete(cr, res), nil
			}
			if res := s.relisted(ctx, account, agent, cr); res != nil {
				return complete(cr, res), nil
			}
			return next(ctx, method, req)
		}
	}
}

// complete marks res complete where the SDK's callTool would
// (handleMultiRoundTripResult: for a client of protocol 2026-07-28 or
// later, or one that never said), which a result answered before callTool
// misses. The mark is unexported and set only by decoding, so a marked
// result is decoded from the mark alone and given res's fields (those
// answer sets).
func complete(req *mcp.CallToolRequest, res *mcp.CallToolResult) *mcp.CallToolResult {
	version := protocolStateless
	if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			version = ip.ProtocolVersion
		}
	}
	if version < protocolStateless {
		return res
	}
	var out mcp.CallToolResult
	if json.Unmarshal([]byte(`{"resultType":"complete"}`), &out) != nil {
		return res
	}
	out.Meta, out.Content, out.StructuredContent, out.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	return &out
}

// unlisted answers a tools/call of a name the agent does not list when one
// of its key arguments holds a key the account used for the action the name
// ends in: it runs the call the key was first used with, minus the key
// argument, as invoke runs a listed tool's. nil means there is no such key,
// and the name is unknown.
func (s *Server) unlisted(ctx context.Context, account int64, name string, args json.RawMessage) *mcp.CallToolResult {
	if !strings.Contains(name, "__") {
		return nil
	}
	for _, arg := range keyCandidates(args) {
		_, key, found, err := takeKey(args, arg)
		if err != nil || !found {
			continue
		}
		ks, err := s.opts.Calls.Key(ctx, account, key)
		if p, ok := problem.As(err); ok && p.Code == problem.NotFound {
			continue
		}
		if err != nil {
			// Whether the key is there cannot be told now: say so, rather
			// than that the name is unknown.
			return s.toolError(ctx, err)
		}
		if !namesAction(name, ks.Action) {
			continue
		}
		resp, err := s.invoke(account, ks.Tool, ks.Action, arg)(ctx, args)
		return s.answer(ctx, resp, err, false)
	}
	return nil
}

// keyCandidates returns the members of an arguments object that could have
// carried Quiver's key (keyName), the likeliest first: an action's schema
// gains quiver_idempotency_key only when it has idempotency_key itself, and
// quiver_idempotency_key_N only when it has the names before it, so the
// name furthest along keyName's sequence is Quiver's unless the action has
// that name itself. At most maxKeyCandidates are returned.
func keyCandidates(args json.RawMessage) []string {
	ms, ok := objectMembers(args)
	if !ok {
		return nil
	}
	rank := map[string]int{}
	var names []string
	for _, m := range ms {
		if _, seen := rank[m.key]; seen {
			continue
		}
		if r, ok := keyRank(m.key); ok {
			rank[m.key] = r
			names = append(names, m.key)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(rank[b], rank[a]) })
	if len(names) > maxKeyCandidates {
		names = names[:maxKeyCandidates]
	}
	return names
}

// keyRank is a name's place in keyName's sequence: idempotency_key 0,
// quiver_idempotency_key 1, quiver_idempotency_key_N N; ok is false for
// any other name.
func keyRank(name string) (rank int, ok bool) {
	switch name {
	case keyArg:
		return 0, true
	case altKeyArg:
		return 1, true
	}
	n, found := strings.CutPrefix(name, altKeyArg+"_")
	if !found || n == "" || n[0] == '0' || len(n) > 9 {
		return 0, false
	}
	r, err := strconv.Atoi(n)
	if err != nil || r < 2 || strconv.Itoa(r) != n {
		return 0, false
	}
	return r, true
}
