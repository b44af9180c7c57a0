package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/accounts"
)

// The agent's list as a read-only API key sees it.
//
// A read-only key may call only actions annotated read-only: the engine
// refuses any other with forbidden (calls.ReadOnlyAction decides, there and
// in build). So such a key's tools/list leaves the others out, and an agent
// handed one is not shown tools it can never call. Only the list changes:
// a tools/call of a left-out name still reaches its handler (or the fast
// path) and the engine, which answers forbidden, not unknown tool, and a
// full key's list is the server's, as ever.

// hideFromReadOnly is a receiving middleware of an agent's server: a
// read-only key's tools/list leaves out the tools named in hidden. The SDK
// builds each page's Tools afresh, so the page is filtered in place.
func hideFromReadOnly(hidden map[string]bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok || len(hidden) == 0 || !accounts.PrincipalFrom(ctx).ReadOnly {
				return res, err
			}
			kept := lr.Tools[:0]
			for _, t := range lr.Tools {
				if !hidden[t.Name] {
					kept = append(kept, t)
				}
			}
			lr.Tools = kept
			return lr, nil
		}
	}
}
