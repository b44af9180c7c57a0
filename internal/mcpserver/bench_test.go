package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
)

// BenchmarkToolsCallListed serves a tools/call of a listed name in
// process, on the fast path and on the SDK's, with the engine faked: what
// the endpoint itself costs a call, allocations included. unknown is a
// name of the listed tool that its connector does not list either: the
// SDK's unknown tool, after a re-list that finds nothing (relist.go);
// typed is an action listed with an output schema (typedResult);
// stateless is fast under protocol 2026-07-28, whose _meta every request
// carries (fastmeta.go).
//
//	go test -run '^$' -bench ToolsCallListed -benchmem ./internal/mcpserver
func BenchmarkToolsCallListed(b *testing.B) {
	f := &fakes{agentTools: map[int64][]int64{7: {11}}, names: map[int64]string{11: "My Mail!"},
		configured: map[int64]bool{11: true}, shared: true, actions: []connectors.Action{
			{Name: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`), Retryable: true},
			{Name: "count", InputSchema: json.RawMessage(`{"type":"object"}`), Retryable: true,
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}}}
	body := []byte(`{"call_id":"c_1","tool":11,"action":"read","is_error":false,"result":{"n":1},"duration_ms":1}`)
	eng := engineFunc(func(context.Context, calls.Request) (*calls.Response, error) {
		return &calls.Response{Status: 200, Body: body}, nil
	})
	gin.SetMode(gin.ReleaseMode)
	for _, path := range []string{"fast", "stateless", "sdk", "unknown", "typed"} {
		name, want := "My_Mail__read", `"quiver/call_id"`
		switch path {
		case "unknown":
			name, want = "My_Mail__never", `unknown tool`
		case "typed":
			name, want = "My_Mail__count", `"structuredContent":{"n":1}`
		}
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"q":"x"}}}`
		if path == "stateless" {
			msg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"q":"x"},` + newMeta + `}}`
		}
		b.Run(path, func(b *testing.B) {
			s := New(Options{Agents: f, Tools: f, Actions: listing{f}, Calls: eng, ListTTL: time.Hour})
			s.sdkOnly = path == "sdk"
			r := gin.New()
			s.Register(r.Group("/api/v1", asAccount1))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/api/v1/agents/7/mcp", strings.NewReader(msg))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if path == "stateless" {
					for k, v := range newHeaders {
						req.Header.Set(k, v)
					}
				}
				w := httptest.NewRecorder()
				r.ServeHTTP(w, req)
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
