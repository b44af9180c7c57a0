package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAuditListCacheInvalidation: with a long QUIVER_CACHE_TTL, this
// replica's own changes show at once: detaching, deleting the agent,
// deleting, resetting and reconfiguring a tool.
func TestMCPAuditListCacheInvalidation(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_CACHE_TTL": "1m"}})
	upA := mqaStart(t, mqaReadOnly("a_read"))
	upB := mqaStart(t, mqaReadOnly("b_read"))
	upC := mqaStart(t, mqaReadOnly("c_read"))
	toolA := mqConnect(t, srv, "ta", map[string]any{"url": upA.URL})
	toolB := mqConnect(t, srv, "tb", map[string]any{"url": upB.URL})
	agent, endpoint := mqaAgent(t, srv, toolA, toolB)
	cs := mqaSession(t, srv, endpoint)
	ctx := context.Background()
	call := func(name string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	}
	names := func() []string { return mqaSorted(mqToolNames(t, cs)) }
	if got := names(); !slices.Equal(got, []string{"ta__a_read", "tb__b_read"}) {
		t.Fatalf("names: %v", got)
	}
	if res, err := call("tb__b_read"); err != nil || res.IsError {
		t.Fatalf("tb: %v %+v", err, res)
	}

	// Detach tb: the very next call must not run it.
	if r := srv.Do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agent), map[string]any{"tools": []int64{toolA}}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	if res, err := call("tb__b_read"); err == nil && !res.IsError {
		t.Fatal("a detached tool still ran")
	}
	if n := len(upB.ran()); n != 1 {
		t.Fatalf("tb ran %d times", n)
	}
	if got := names(); !slices.Equal(got, []string{"ta__a_read"}) {
		t.Fatalf("after detach: %v", got)
	}

	// Reset ta: it is no longer configured, so it is not listed.
	if r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", toolA), nil); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
	// Reconfigure it against another server: its new actions show.
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", toolA), map[string]any{"user_response": map[string]any{"url": upC.URL}})
	if r.Status != 200 || r.JSON()["is_configured"] != true {
		t.Fatalf("reconfigure: %d %s", r.Status, r.Body)
	}
	if got := names(); !slices.Equal(got, []string{"ta__c_read"}) {
		t.Fatalf("after reconfigure: %v", got)
	}
	// Delete it: gone from the list.
	if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", toolA), nil); r.Status != 204 {
		t.Fatalf("delete tool: %d %s", r.Status, r.Body)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after deleting the tool: %v", got)
	}

	// Delete the agent: its endpoint is 404 at once.
	if r := srv.Do("PATCH", fmt.Sprintf("/api/v1/agents/%d/", agent), map[string]any{"tools": []int64{toolB}}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	if res, err := call("tb__b_read"); err != nil || res.IsError {
		t.Fatalf("re-attached tb: %v %+v", err, res)
	}
	if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/%d/", agent), nil); r.Status != 204 {
		t.Fatalf("delete agent: %d %s", r.Status, r.Body)
	}
	if res, err := call("tb__b_read"); err == nil && !res.IsError {
		t.Fatal("a deleted agent's tool still ran")
	}
	if n := len(upB.ran()); n != 2 {
		t.Fatalf("tb ran %d times, want 2", n)
	}
	u, _ := url.Parse(endpoint)
	mqWant(t, srv.Do("POST", u.Path, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream"), 404, "not_found")
}

// TestMCPAuditListNotPublic: tools/list is not marked publicly cacheable.
func TestMCPAuditListNotPublic(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	up := mqaStart(t, mqaReadOnly("read"))
	tool := mqConnect(t, srv, "priv", map[string]any{"url": up.URL})
	_, endpoint := mqaAgent(t, srv, tool)
	c := mcp.NewClient(&mcp.Implementation{Name: "quiver-e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: mqKeyTransport{key: srv.Key, base: http.DefaultTransport}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CacheScope == "public" || res.CacheScope == "" {
		t.Fatalf("tools/list cacheScope = %q, ttlMs = %d", res.CacheScope, res.TTLMs)
	}
}
