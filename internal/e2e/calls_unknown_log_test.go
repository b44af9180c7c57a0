package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestUnknownOutcomeLoggedDespiteACrash: keyed calls that were dispatched
// and timed out (the tool may have sent the email) answer 504, and their
// replica dies a moment later: each is in the call log as outcome_unknown.
// Before, such an entry waited in memory for the next batch (up to 100 ms)
// and the kill lost it: the log showed none of the three calls.
func TestUnknownOutcomeLoggedDespiteACrash(t *testing.T) {
	env := procEnv(t, testdb.Postgres(t, "unknownlog"), "")
	env["QUIVER_CALL_TIMEOUT"] = "1s"
	key := createKey(t, env, "unknownlog")
	tool := startToolServer(t)
	a := startProc(t, env)
	id := connectHTTPTool(t, a.URL, key, tool.URL)
	const n = 3
	answers := make(chan *testserver.Response, n)
	for i := range n {
		go func() {
			answers <- testserver.Do(t, a.URL, key, "POST", callPath, callBody(id, "/hang", i), "Idempotency-Key", fmt.Sprintf("k-unknown-%d", i))
		}()
	}
	for range n {
		if r := <-answers; r.Status != 504 || r.JSON()["error"] != "tool_outcome_unknown" {
			t.Fatalf("a call to a tool that hangs: %d %s", r.Status, r.Body)
		}
	}
	a.kill()

	b := startProc(t, env)
	r := testserver.Do(t, b.URL, key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", id), nil)
	logged := map[string]string{}
	calls, _ := r.JSON()["calls"].([]any)
	for _, c := range calls {
		m := c.(map[string]any)
		if k, ok := m["idempotency_key"].(string); ok {
			logged[k], _ = m["outcome"].(string)
		}
	}
	for i := range n {
		if k := fmt.Sprintf("k-unknown-%d", i); logged[k] != "outcome_unknown" {
			t.Errorf("%s answered 504, then its replica died: logged as %q, want outcome_unknown (log: %s)", k, logged[k], r.Body)
		}
	}
	if got := tool.count("/hang"); got != n {
		t.Errorf("the tool ran %d times, want %d", got, n)
	}
}
