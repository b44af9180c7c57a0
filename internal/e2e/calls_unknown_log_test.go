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
	tool := startToolServer(t)
	crashLog := callsThenCrash(t, tool.URL, "/hang", 504, "tool_outcome_unknown")
	for k, outcome := range crashLog.outcomes {
		if outcome != "outcome_unknown" {
			t.Errorf("%s answered 504, then its replica died: logged as %q, want outcome_unknown (log: %s)", k, outcome, crashLog.body)
		}
	}
	if got := tool.count("/hang"); got != len(crashLog.outcomes) {
		t.Errorf("the tool ran %d times, want %d", got, len(crashLog.outcomes))
	}
}

// TestRejectedCallLoggedDespiteACrash: keyed calls to a tool whose server
// refuses the connection answer 502 tool_unreachable (the key is released),
// and their replica dies a moment later: each is in the call log as
// rejected, written with the release. Before, the kill lost the entry as
// it lost an unknown outcome's.
func TestRejectedCallLoggedDespiteACrash(t *testing.T) {
	crashLog := callsThenCrash(t, httpDeadURL(t), "/x", 502, "tool_unreachable")
	for k, outcome := range crashLog.outcomes {
		if outcome != "rejected" {
			t.Errorf("%s answered 502, then its replica died: logged as %q, want rejected (log: %s)", k, outcome, crashLog.body)
		}
		if s := testserver.Do(t, crashLog.url, crashLog.key, "GET", "/api/v1/idempotency-keys/"+k, nil); s.Status != 404 {
			t.Errorf("%s after its release: %d %s", k, s.Status, s.Body)
		}
	}
}

// crashedLog is the call log after callsThenCrash: each key's outcome,
// as read from another replica (at url, with API key key).
type crashedLog struct {
	outcomes map[string]string
	body     []byte
	url, key string
}

// callsThenCrash makes three concurrent keyed calls of path on an
// http-request tool at toolURL, each of which must answer status and code,
// kills their replica at once, and reads the log from another one.
func callsThenCrash(t *testing.T, toolURL, path string, status int, code string) crashedLog {
	t.Helper()
	env := procEnv(t, testdb.Postgres(t, "crashlog"), "")
	env["QUIVER_CALL_TIMEOUT"] = "1s"
	key := createKey(t, env, "crashlog")
	a := startProc(t, env)
	id := connectHTTPTool(t, a.URL, key, toolURL)
	const n = 3
	answers := make(chan *testserver.Response, n)
	for i := range n {
		go func() {
			answers <- testserver.Do(t, a.URL, key, "POST", callPath, callBody(id, path, i), "Idempotency-Key", fmt.Sprintf("k-crash-%d", i))
		}()
	}
	for range n {
		if r := <-answers; r.Status != status || r.JSON()["error"] != code {
			t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
		}
	}
	a.kill()

	b := startProc(t, env)
	r := testserver.Do(t, b.URL, key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/calls/?tool=%d&limit=200", id), nil)
	out := crashedLog{outcomes: map[string]string{}, body: r.Body, url: b.URL, key: key}
	for i := range n {
		out.outcomes[fmt.Sprintf("k-crash-%d", i)] = ""
	}
	calls, _ := r.JSON()["calls"].([]any)
	for _, c := range calls {
		m := c.(map[string]any)
		if k, ok := m["idempotency_key"].(string); ok {
			out.outcomes[k], _ = m["outcome"].(string)
		}
	}
	return out
}
