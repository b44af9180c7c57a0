package mcpserver

// What an agent's server offers, and nothing more.
//
// An agent's server declares one capability, tools (toolset.go's build).
// The SDK's server answers the methods of every other capability all the
// same: resources/list and prompts/list with empty lists, resources/read
// and prompts/get with -32602 "not found", logging/setLevel with {}, and
// subscriptions/listen, a method of protocol 2026-07-28, under every
// earlier version too (as an event stream). MCP has a server answer only
// what it declared, and a client tell a missing capability by -32601.
//
//	method of an undeclared capability ─▶ -32601 method not found
//	(resources/*, prompts/*,               screen (gate.go) under the versions
//	completion/complete,                   before 2026-07-28, alone or in a
//	logging/setLevel)                      batch; under 2026-07-28, which screen
//	                                       leaves to the SDK, refuseUnoffered
//	                                       (HTTP 404, as the SDK sends -32601)
//	a 2026-07-28 method under an         ─▶ -32601, by screen
//	earlier version (subscriptions/listen,
//	server/discover)

import (
	"context"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// offered reports whether the agent's server offers a method of sdkMethods
// of this kind under protocol version ("" for none given).
func offered(kind methodKind, version string) bool {
	switch {
	case kind&undeclared != 0:
		return false
	case kind&since20260728 != 0:
		return version == protocolStateless
	}
	return true
}

// notOffered is the answer to a request of a method the server does not
// offer.
func notOffered(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: "Method not found: " + strconv.Quote(method) + " (this server offers tools only)"}
}

// refuseUnoffered is the outermost receiving middleware of an agent's
// server: a method of a capability it does not declare is -32601 before
// the SDK's handler answers it.
func refuseUnoffered(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if kind, ok := sdkMethods[method]; ok && kind&undeclared != 0 {
			return nil, notOffered(method)
		}
		return next(ctx, method, req)
	}
}
