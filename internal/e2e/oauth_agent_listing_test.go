package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestAgentListingMakesNoAuthorizationState: an agent's MCP tool list is
// built anew once QUIVER_CACHE_TTL has passed, and each build resolves
// every attached tool. For a tool at its OAuth step, resolving built the
// step's view, authorization URL and all, and stored an authorization
// state for it that no one would follow: a row per build, a build a second
// for an agent in use. Now only the link a person is shown (the tool's
// own answers) makes one.
func TestAgentListingMakesNoAuthorizationState(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	env["QUIVER_CACHE_TTL"] = "10ms"
	srv := testserver.Start(t, testserver.Options{Postgres: true, Env: env})
	gh, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if oaAuthURL(t, step) == "" {
		t.Fatal("the new tool's step has no authorization URL")
	}
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	other := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	_, endpoint := mqaAgent(t, srv, gh, other)
	db := pgOpen(t, srv.DatabaseURL)
	states := func() (n int) {
		if err := db.QueryRow(`SELECT count(*) FROM oauth_states WHERE tool_id = $1`, gh).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := states()
	for i := range 5 {
		names := mqToolNames(t, mqaSession(t, srv, endpoint))
		if _, ok := names["counter__read_count"]; !ok {
			t.Fatalf("listing %d: %v", i, mqaSorted(names))
		}
		time.Sleep(20 * time.Millisecond) // past the list's cache: the next is built anew
	}
	if n := states(); n != before {
		t.Fatalf("five listings of the agent stored %d authorization states for its tool at the OAuth step, want none", n-before)
	}
	// The tool's own answer still gives a person a link.
	if r := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", gh), nil); oaAuthURL(t, r.JSON()["next_configuration_step"].(map[string]any)) == "" {
		t.Fatalf("GET of the tool: no authorization URL: %s", r.Body)
	}
}
