package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// oarConnected connects github-mcp, on the embedded database, through a new
// local provider to a stateless Counter (no stream to say its list changed)
// that accepts the provider's access tokens, whose list is re-read for a
// call missing an action once it is mqRelistEvery old. It lists the tool's
// actions once (a call), then waits until the list is older than that.
func oarConnected(t *testing.T) (*oaProvider, *mcptest.Server, *testserver.Server, int64) {
	t.Helper()
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Stateless: true, PageSize: 100, Authorize: p.valid})
	env["QUIVER_MCP_URL_GITHUB_MCP"] = counter.URL
	env["QUIVER_MCP_RELIST_INTERVAL"] = mqRelistEvery.String()
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("read_count: %d %s", r.Status, r.Body)
	}
	return p, counter, srv, id
}

// oarStale waits until the tool's cached list is older than the re-list
// interval.
func oarStale() { time.Sleep(mqRelistEvery + 100*time.Millisecond) }

// TestOAuthRefusedTokenWhileRelisting: a call naming an action a stateless
// server added re-reads the tool's list; when the server refuses our access
// token for it (the provider ended it early: its expiry is an hour off),
// the re-list gets the one shared refresh and one more try with the new
// token, as a call and a listing do. Before, the refusal was only logged
// and the call answered 404 not_found for an action the server has. A dead
// grant is 409 tool_not_configured, with the key left free.
func TestOAuthRefusedTokenWhileRelisting(t *testing.T) {
	t.Run("REST call", func(t *testing.T) {
		t.Parallel()
		p, counter, srv, id := oarConnected(t)
		oarStale()
		p.revokeAccess()
		counter.AddTool("fresh")
		before := p.refreshes.Load()
		if r := oaCall(t, srv, id, "fresh"); r.Status != 200 || r.JSON()["is_error"] != false {
			t.Fatalf("a call of the tool just added, its token refused: %d %s, want 200", r.Status, r.Body)
		}
		if n := p.refreshes.Load() - before; n != 1 {
			t.Errorf("refreshes = %d, want 1", n)
		}
		if acts := mqActions(t, srv, id); acts["fresh"] == nil {
			t.Error("GET .../actions/ does not list the added tool")
		}
		if n := p.refreshes.Load() - before; n != 1 {
			t.Errorf("refreshes after the listing = %d, want still 1", n)
		}
	})

	t.Run("dead grant", func(t *testing.T) {
		t.Parallel()
		p, counter, srv, id := oarConnected(t)
		oarStale()
		p.revokeGrant()
		counter.AddTool("fresh")
		const key = "oar-dead-1"
		r := oaCall(t, srv, id, "fresh", "Idempotency-Key", key)
		next, _ := r.JSON()["next_configuration_step"].(map[string]any)
		if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || next["type"] != "oauth" {
			t.Fatalf("a re-list whose refresh the provider refused: %d %s, want 409 tool_not_configured with the oauth step", r.Status, r.Body)
		}
		if k := srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil); k.Status != 404 {
			t.Errorf("key after the refusal: %d %s, want 404 (free)", k.Status, k.Body)
		}
		if n := counter.Calls("fresh"); n != 0 {
			t.Errorf("fresh ran %d times", n)
		}
	})

	// The server refuses the refreshed token too: the call answers what a
	// listed action's call gets, upstream_auth_failed with the key free,
	// not 404 for an action the server may well have.
	t.Run("refused again", func(t *testing.T) {
		t.Parallel()
		p, counter, srv, id := oarConnected(t)
		oarStale()
		p.refuseAll.Store(true)
		counter.AddTool("fresh")
		const key = "oar-refused-1"
		r := oaCall(t, srv, id, "fresh", "Idempotency-Key", key)
		if r.Status != 502 || r.JSON()["error"] != "upstream_auth_failed" {
			t.Fatalf("a re-list whose refreshed token was refused too: %d %s, want 502 upstream_auth_failed", r.Status, r.Body)
		}
		if k := srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil); k.Status != 404 {
			t.Errorf("key after the refusal: %d %s, want 404 (free)", k.Status, k.Body)
		}
		if listed := oaCall(t, srv, id, "read_count"); listed.Status != 502 || listed.JSON()["error"] != "upstream_auth_failed" {
			t.Errorf("a listed action's call: %d %s, want the same 502 upstream_auth_failed", listed.Status, listed.Body)
		}
		if n := counter.Calls("fresh"); n != 0 {
			t.Errorf("fresh ran %d times", n)
		}
	})

	t.Run("agent endpoint", func(t *testing.T) {
		t.Parallel()
		p, counter, cs := oarAgent(t)
		p.revokeAccess()
		counter.AddTool("fresh")
		before := p.refreshes.Load()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "github-mcp__fresh"})
		if err != nil || res.IsError {
			t.Fatalf("a call of the tool just added, its token refused: %v %+v, want it run", err, res)
		}
		if text := mqText(t, res); !strings.Contains(text, `"tool":"fresh"`) {
			t.Errorf("fresh answered %s, want its own answer", text)
		}
		if n := p.refreshes.Load() - before; n != 1 {
			t.Errorf("refreshes = %d, want 1", n)
		}
	})

	t.Run("agent endpoint, refused again", func(t *testing.T) {
		t.Parallel()
		p, counter, cs := oarAgent(t)
		p.refuseAll.Store(true)
		counter.AddTool("fresh")
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "github-mcp__fresh"})
		if err != nil {
			t.Fatalf("a re-list whose refreshed token was refused too: %v, want a tool error", err)
		}
		if env := mqEnvelope(t, res); env["error"] != "upstream_auth_failed" {
			t.Fatalf("a re-list whose refreshed token was refused too: %v, want upstream_auth_failed", env)
		}
		if n := counter.Calls("fresh"); n != 0 {
			t.Errorf("fresh ran %d times", n)
		}
	})

	t.Run("agent endpoint, dead grant", func(t *testing.T) {
		t.Parallel()
		p, counter, cs := oarAgent(t)
		p.revokeGrant()
		counter.AddTool("fresh")
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "github-mcp__fresh"})
		if err != nil {
			t.Fatalf("a re-list whose refresh the provider refused: %v, want a tool error", err)
		}
		if env := mqEnvelope(t, res); env["error"] != "tool_not_configured" {
			t.Fatalf("a re-list whose refresh the provider refused: %v, want tool_not_configured", env)
		}
		if n := counter.Calls("fresh"); n != 0 {
			t.Errorf("fresh ran %d times", n)
		}
	})
}

// oarAgent is oarConnected's tool attached to an agent, with a Go SDK
// session on the agent's endpoint whose tools/list has warmed the agent's
// list, once the tool's list is older than the re-list interval.
func oarAgent(t *testing.T) (*oaProvider, *mcptest.Server, *sdk.ClientSession) {
	t.Helper()
	p, counter, srv, id := oarConnected(t)
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "tools": []int64{id}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	cs := mqaSession(t, srv, fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, int64(r.JSON()["id"].(float64))))
	if names := mqToolNames(t, cs); names["github-mcp__read_count"] == nil {
		t.Fatalf("the agent lists %v", mqaSorted(names))
	}
	oarStale()
	return p, counter, cs
}
