package mcptest

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tiered returns a tool of the mail gateway with its permission tier in
// _meta, as the gateway's catalog lists it.
func tiered(name, tier, desc string, ann *mcp.ToolAnnotations, schema map[string]any) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: desc, InputSchema: schema, Annotations: ann,
		Meta: mcp.Meta{"tier": tier}}
}

// approvalRequired is the gateway's answer to a tool that always needs the
// owner's approval on their phone.
func (s *Server) approvalRequired(what string) *mcp.CallToolResult {
	return jsonText(map[string]any{
		"error":       "approval_required",
		"message":     what + " always needs the owner's approval on their phone.",
		"approval_id": fmt.Sprintf("ap_%d", s.seq.Add(1)),
	})
}

func (s *Server) addMailTools(srv *mcp.Server) {
	s.add(srv, tiered("get_upcoming_travel", "structured_read", "Flights, hotels and trains: fields only.",
		readOnly(), object(nil, "after")), func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]any{"trips": []map[string]any{{
			"kind": "flight", "from": "SFO", "to": "JFK", "departs": "2026-12-03T08:15:00Z", "confirmation": "QX7R2P",
		}}}), nil
	})
	s.add(srv, tiered("order_status", "structured_read", "Order status from one merchant.",
		readOnly(), object([]string{"merchant"}, "merchant")), func(args map[string]any) (*mcp.CallToolResult, error) {
		merchant := str(args, "merchant")
		if merchant == "" {
			return nil, invalidParams("order_status requires merchant")
		}
		return jsonText(map[string]any{"orders": []map[string]any{{
			"merchant": merchant, "order": "112-4471", "status": "shipped", "eta": "2026-12-02",
		}}}), nil
	})
	s.add(srv, tiered("bills_due", "structured_read", "Bills due before a timestamp.",
		readOnly(), object(nil, "before")), func(map[string]any) (*mcp.CallToolResult, error) {
		return jsonText(map[string]any{"bills": []map[string]any{{
			"payee": "City Power", "amount_cents": 8412, "due": "2026-12-10",
		}}}), nil
	})
	s.add(srv, tiered("ask", "free_form_read", "One narrow question, one short answer.",
		&mcp.ToolAnnotations{ReadOnlyHint: true}, object([]string{"question"}, "question")),
		func(args map[string]any) (*mcp.CallToolResult, error) {
			if str(args, "question") == "" {
				return nil, invalidParams("ask requires question")
			}
			return jsonText(map[string]any{"answer": "Your next flight is SFO to JFK on December 3.", "sources": 2}), nil
		})
	s.add(srv, tiered("get_excerpt", "raw_read", "Raw text of one message: always phone approval.",
		&mcp.ToolAnnotations{ReadOnlyHint: true}, object([]string{"message_id"}, "message_id")),
		func(map[string]any) (*mcp.CallToolResult, error) {
			return s.approvalRequired("Reading raw mail"), nil
		})
	s.add(srv, tiered("create_draft", "compose", "Creates a draft that stays on the Mac.",
		compose(), object([]string{"to", "body"}, "to", "subject", "body")),
		func(map[string]any) (*mcp.CallToolResult, error) {
			return jsonText(map[string]any{"created": true, "draft_id": fmt.Sprintf("d_%d", s.seq.Add(1))}), nil
		})
	s.add(srv, tiered("draft_reply", "compose", "Creates a reply draft for a thread.",
		compose(), object([]string{"thread_id", "body"}, "thread_id", "body")),
		func(map[string]any) (*mcp.CallToolResult, error) {
			return jsonText(map[string]any{"created": true, "draft_id": fmt.Sprintf("d_%d", s.seq.Add(1))}), nil
		})
	s.add(srv, tiered("send_draft", "send", "Sends a draft: always phone approval.",
		send(), object([]string{"draft_id"}, "draft_id")),
		func(map[string]any) (*mcp.CallToolResult, error) {
			return s.approvalRequired("Sending mail"), nil
		})
}
