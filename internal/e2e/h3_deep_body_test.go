package e2e

// An http-request server answering JSON nested thousands deep: the body
// comes as its text (connectors/httprequest's maxBodyDepth), so an agent's
// MCP client, which refuses a message nested past 1000 levels, still gets
// the call's answer instead of failing to decode it.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestH3DeepJSONBodyReachesAnAgent(t *testing.T) {
	deep := strings.Repeat("[", 2000) + strings.Repeat("]", 2000)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, deep)
	}))
	t.Cleanup(up.Close)
	srv := testserver.Start(t, testserver.Options{})
	id := connectHTTPTool(t, srv.URL, srv.Key, up.URL)
	r := srv.Do("POST", callPath, map[string]any{"tool": id, "action": "get", "arguments": map[string]any{"path": "/"}})
	res, _ := r.JSON()["result"].(map[string]any)
	if r.Status != 200 || res["body"] != deep {
		t.Fatalf("REST: %d %.300s, want the body as its text", r.Status, r.Body)
	}
	a := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "goal": "g", "tools": []int64{id}, "status": "active"})
	if a.Status != 201 {
		t.Fatalf("agent: %d %s", a.Status, a.Body)
	}
	cs, err := mqSession(t, srv.URL+fmt.Sprintf("/api/v1/agents/%d/mcp", int64(a.JSON()["id"].(float64))), srv.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "http-request__get", Arguments: map[string]any{"path": "/"}})
	if err != nil || got.IsError || !strings.Contains(mqText(t, got), strings.Repeat("[", 100)) {
		t.Fatalf("MCP: %v %+v", err, got)
	}
}
