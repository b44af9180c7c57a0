package mcptest

import (
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) addInboxTools(srv *mcp.Server) {
	s.add(srv, &mcp.Tool{Name: "list_businesses", Description: "Who the key acts as, and each business.",
		InputSchema: object(nil), Annotations: readOnly()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]any{
			"owner":      map[string]string{"name": "Ada Park"},
			"businesses": []map[string]string{{"name": "Park Studio", "slug": "park-studio", "does": "Brand design"}},
		}), nil
	})
	s.add(srv, &mcp.Tool{Name: "search", Description: "Matching conversations, clients and invoices.",
		InputSchema: object([]string{"query"}, "query", "business"), Annotations: readOnly()},
		func(args map[string]any) (*mcp.CallToolResult, error) {
			q := str(args, "query")
			if len([]rune(q)) < 2 {
				return &mcp.CallToolResult{IsError: true,
					Content: []mcp.Content{&mcp.TextContent{Text: "query must be at least 2 characters"}}}, nil
			}
			return jsonText(map[string]any{"results": []map[string]string{{
				"kind": "thread", "threadId": "t_81", "subject": "Logo revisions: " + q,
				"link": "https://sydbar.app/b/park-studio/t/t_81",
			}}}), nil
		})
	s.add(srv, &mcp.Tool{Name: "get_thread", Description: "One conversation with its recent messages.",
		InputSchema: object([]string{"business", "threadId"}, "business", "threadId"), Annotations: readOnly()},
		func(args map[string]any) (*mcp.CallToolResult, error) {
			return jsonText(map[string]any{"thread": map[string]any{
				"threadId": str(args, "threadId"), "subject": "Logo revisions",
				"messages": []map[string]string{{"from": "client@example.com", "text": "Can we try a darker blue?"}},
			}}), nil
		})
	s.add(srv, &mcp.Tool{Name: "draft_reply", Description: "Saves a reply for the owner to approve and send.",
		InputSchema: object([]string{"business", "threadId", "body"}, "business", "threadId", "body"),
		Annotations: compose()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]any{"draftId": fmt.Sprintf("dr_%d", s.seq.Add(1)), "saved": true}), nil
	})
	s.add(srv, &mcp.Tool{Name: "send_reply", Description: "Sends a reply after the undo window.",
		InputSchema: object([]string{"business", "threadId", "body"}, "business", "threadId", "body"),
		Annotations: send()}, func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]any{
			"status":  "queued",
			"sendsAt": time.Now().UTC().Add(30 * time.Second).Format(time.RFC3339),
			"sendId":  fmt.Sprintf("s_%d", s.seq.Add(1)),
		}), nil
	})
	s.add(srv, &mcp.Tool{Name: "cancel_send", Description: "Stops a queued reply before it goes.",
		InputSchema: object([]string{"business", "sendId"}, "business", "sendId"),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, func(args map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]any{"cancelled": true, "sendId": str(args, "sendId")}), nil
	})
}
