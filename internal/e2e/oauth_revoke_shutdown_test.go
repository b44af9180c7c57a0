package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestShutdownWaitsForRevocations: a tool deleted just before a SIGTERM has
// both its tokens revoked at the provider before `quiver serve` exits, even
// when the provider is slow to answer the first. Before, the process ended
// once the requests in flight had drained, cutting off the revocation the
// delete had started: the tokens stayed live at the provider.
func TestShutdownWaitsForRevocations(t *testing.T) {
	t.Parallel()
	p := oaStartProvider(t)
	rv := orvStart(t, p, true)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{
		ResourceMetadata: rv.URL + "/.well-known/oauth-protected-resource", Authorize: p.valid})
	env := map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_EGRESS_ALLOW_PRIVATE": "true"}
	key := createKey(t, env, "revoke")
	q := startProc(t, env)

	r := testserver.Do(t, q.URL, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "custom-mcp"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", int64(r.JSON()["id"].(float64)))
	r = testserver.Do(t, q.URL, key, "POST", path+"provide-config/", map[string]any{"user_response": map[string]any{"url": counter.URL}})
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	resp, err := http.Get(q.URL + "/api/v1/oauth/callback?" + oaAuthorize(t, oaAuthURL(t, step)).Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	refresh, access := orvLive(t, p)

	rv.hang.Store(true)
	if r := testserver.Do(t, q.URL, key, "DELETE", path, nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	testserver.Eventually(t, 10*time.Second, "the refresh token's revocation to arrive", func() bool { return rv.arrived.Load() >= 1 })
	q.cmd.Process.Signal(syscall.SIGTERM)
	// The drain is over, and the revocation still held at the provider.
	testserver.Eventually(t, 10*time.Second, "the stop to wait for the revocation", func() bool {
		return strings.Contains(q.logText(), "waiting for token revocations")
	})
	rv.releaseHeld()
	select {
	case <-q.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("quiver did not exit after its revocations ended; logs:\n%s", q.logText())
	}
	if code := q.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d; logs:\n%s", code, q.logText())
	}
	got := rv.requests()
	if len(got) != 2 || got[0].token != refresh || got[1].token != access || rv.finished.Load() != 2 {
		t.Errorf("revocations before the exit: %d finished, %+v; want the refresh token's, then the access token's", rv.finished.Load(), got)
	}
	if p.valid(access) {
		t.Error("the access token is still live at the provider")
	}
}
