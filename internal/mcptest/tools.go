package mcptest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler is a tool body: it gets the decoded arguments and returns the
// result, or a protocol error.
type handler func(args map[string]any) (*mcp.CallToolResult, error)

// add registers a tool that counts every execution under its name.
func (s *Server) add(srv *mcp.Server, t *mcp.Tool, h handler) {
	name := t.Name
	srv.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 {
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments must be an object"}
			}
		}
		res, err := h(args)
		if err == nil {
			s.count(name)
		}
		return res, err
	})
}

// jsonText answers v as JSON text inside one text block, the way the seeded
// servers do.
func jsonText(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// invalidParams is the protocol error of a call whose arguments are wrong.
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// object is a JSON schema of an object with string properties.
func object(required []string, props ...string) map[string]any {
	p := map[string]any{}
	for _, name := range props {
		p[name] = map[string]any{"type": "string"}
	}
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": p, "required": required}
}

func ptr[T any](v T) *T { return &v }

// readOnly annotates a read: safe to retry.
func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: ptr(false)}
}

// compose annotates a write whose destructiveHint is absent (destructive by
// default).
func compose() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{} }

// send annotates a destructive write that reaches the outside world.
func send() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}
}

func str(args map[string]any, name string) string {
	v, _ := args[name].(string)
	return v
}

// addDummy adds a read-only tool that answers {"tool": name}.
func addDummy(srv *mcp.Server, name string) {
	srv.AddTool(&mcp.Tool{Name: name, Description: "A placeholder tool.", InputSchema: object(nil),
		Annotations: readOnly()}, func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return jsonText(map[string]string{"tool": name}), nil
	})
}
