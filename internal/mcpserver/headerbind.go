package mcpserver

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Header bindings the SDK refuses.
//
// A property of an input schema may be bound to an HTTP header
// (x-mcp-header, SEP-2243), which the SDK's AddTool checks and panics on
// when it refuses a binding (one on an object, a name that is not a token,
// the same name twice). The SDK's client drops such a tool from its list,
// but it reads the bindings only when every property is an object: a tool
// with one property given as the schema true, say, keeps its bad binding
// and reaches the build, where mcpShape makes true {} and AddTool then
// reads the binding. A panic there failed the request that built the
// agent's list and left the build unfinished, so every later request to
// the agent's endpoint waited for it until it timed out.
//
// So a listed tool whose bindings the SDK refuses is listed without any:
// they bind headers of Quiver's endpoint, which nothing of Quiver reads
// (the tool's server gets its own headers from the connector's client), and
// the tool is called like any other. addTool backs this up: a tool the SDK
// still refuses is left out of the list, with a warning, rather than
// breaking the agent's every request.

// soundBindings makes t's input schema one whose header bindings the SDK
// takes: as it is if so, else without x-mcp-header anywhere the SDK looks
// (properties, and their properties, at any depth).
func soundBindings(t *mcp.Tool) {
	if !headerBound(t) || addTool(mcp.NewServer(&mcp.Implementation{Name: "check"}, nil), t, nil) == nil {
		return
	}
	if schema, ok := t.InputSchema.(map[string]any); ok {
		dropBindings(schema)
	}
}

// dropBindings removes x-mcp-header from every property of schema, at
// every depth of properties.
func dropBindings(schema map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for _, p := range props {
		if p, ok := p.(map[string]any); ok {
			delete(p, "x-mcp-header")
			dropBindings(p)
		}
	}
}

// addTool is srv.AddTool, with the SDK's panic over a tool it refuses
// turned into an error; the SDK adds nothing before it panics.
func addTool(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the SDK refuses the tool: %v", v)
		}
	}()
	srv.AddTool(t, h)
	return nil
}
