package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DummyTools is how many placeholder tools Counter lists besides its own,
// so that tools/list takes several pages.
const DummyTools = 12

// CounterTools is how many tools Counter lists in all.
const CounterTools = 10 + DummyTools

func (s *Server) addCounterTools(srv *mcp.Server) {
	s.add(srv, &mcp.Tool{Name: "increment", Description: "Counts one execution; not safe to retry.",
		InputSchema: object(nil), Annotations: compose()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]int{"count": s.Calls("increment") + 1}), nil
	})
	s.add(srv, &mcp.Tool{Name: "read_count", Title: "Read the count", Description: "Reads how often increment ran.",
		InputSchema: object(nil), Annotations: readOnly()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]int{"count": s.Calls("increment")}), nil
	})
	// slow is registered directly: it needs the request's context.
	srv.AddTool(&mcp.Tool{Name: "slow", Description: "Takes a while, then counts.", InputSchema: object(nil),
		Annotations: compose()}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(s.opts.SlowDelay):
		case <-ctx.Done():
			s.count("slow:cancelled")
			return nil, ctx.Err()
		}
		return jsonText(map[string]int{"count": s.count("slow")}), nil
	})
	// The middleware counts drop_after_act and drops the connection before
	// this handler could answer.
	s.add(srv, &mcp.Tool{Name: "drop_after_act", Description: "Acts, then the connection drops.",
		InputSchema: object(nil), Annotations: compose()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]bool{"unreachable": true}), nil
	})
	s.add(srv, &mcp.Tool{Name: "fail", Description: "Runs and reports an error.",
		InputSchema: object(nil), Annotations: readOnly()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool failed on purpose"}}}, nil
	})
	s.add(srv, &mcp.Tool{Name: "plain", Description: "Answers plain text in two blocks.",
		InputSchema: object(nil), Annotations: readOnly()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}, &mcp.TextContent{Text: "world"}}}, nil
	})
	s.add(srv, &mcp.Tool{Name: "structured", Description: "Answers structured content beside prose.",
		InputSchema: object(nil), Annotations: readOnly()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "The temperature is 21 degrees."}},
			StructuredContent: map[string]any{"celsius": 21},
		}, nil
	})
	s.add(srv, &mcp.Tool{Name: "big", Description: "Answers a text of the requested size.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"bytes": map[string]any{"type": "integer"}}},
		Annotations: readOnly()}, func(args map[string]any) (*mcp.CallToolResult, error) {
		n, _ := args["bytes"].(float64)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", int(n))}}}, nil
	})
	// chatty talks to the client on the call's own stream before it
	// answers: a progress notification, then a ping it waits for.
	srv.AddTool(&mcp.Tool{Name: "chatty", Description: "Pings the client mid-call, then answers.", InputSchema: object(nil),
		Annotations: readOnly()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "chatty", Message: "working", Progress: 1})
		if err := req.Session.Ping(ctx, nil); err != nil {
			return nil, fmt.Errorf("the client did not answer a ping: %w", err)
		}
		return jsonText(map[string]int{"pings": s.count("chatty")}), nil
	})
	s.add(srv, &mcp.Tool{Name: "echo", Description: "Answers its arguments.",
		InputSchema: map[string]any{"type": "object"}, Annotations: readOnly()},
		func(args map[string]any) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	for i := range DummyTools {
		addDummy(srv, fmt.Sprintf("dummy_%02d", i))
	}
}
