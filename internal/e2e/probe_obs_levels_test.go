package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestRequestLogLevels: a call whose tool's server failed (502 refused, 504
// lost after sending) is logged at WARN, not ERROR: it is the tool owner's
// to fix, and an outage of one tool would otherwise raise an ERROR on every
// call to it (Quiver's own failures, 500 and 503, stay ERROR).
func TestRequestLogLevels(t *testing.T) {
	e := setupCalls(t, testserver.Options{})
	wantError(t, e.call(callBody(e.id, "/drop", 1), "lv-drop"), 504, "tool_outcome_unknown")
	dead := connectHTTPTool(t, e.srv.URL, e.srv.Key, httpDeadURL(t))
	wantError(t, e.call(callBody(dead, "/x", 1), "lv-dead"), 502, "tool_unreachable")
	if r := e.call(callBody(e.id, "/ok", 1), "lv-ok"); r.Status != 200 {
		t.Fatalf("ok: %d %s", r.Status, r.Body)
	}

	levels := map[float64]string{}
	for _, line := range strings.Split(e.srv.LogText(), "\n") {
		var rec struct {
			Msg    string  `json:"msg"`
			Level  string  `json:"level"`
			Status float64 `json:"status"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request" {
			levels[rec.Status] = rec.Level
		}
	}
	for status, want := range map[float64]string{200: "INFO", 502: "WARN", 504: "WARN"} {
		if levels[status] != want {
			t.Errorf("the request line of a %v answer is at %q, want %s (lines by status: %v)", status, levels[status], want, levels)
		}
	}
}
