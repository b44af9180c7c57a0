package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestH12ObsKeylessTimeout: a keyless call (a retryable get) that runs
// into QUIVER_CALL_TIMEOUT is one outcome_unknown call, observed once in
// the latency histogram's first phase, and no conflict; its retry, with no
// key to tie it to the first, is a call of its own.
func TestH12ObsKeylessTimeout(t *testing.T) {
	e := setupCalls(t, testserver.Options{Env: map[string]string{"QUIVER_CALL_TIMEOUT": "300ms"}})
	body := map[string]any{"tool": e.id, "action": "get", "arguments": map[string]any{"path": "/slow?ms=1500"}}
	unknown := map[string]float64{`quiver_calls_total{outcome="outcome_unknown"}`: 1, `quiver_call_duration_seconds_count{phase="first"}`: 1}
	for _, what := range []string{"keyless timeout", "its retry"} {
		obsDelta(t, e.srv, what, unknown, func() { wantError(t, e.srv.Do("POST", callPath, body), 504, "tool_outcome_unknown") })
	}
}
