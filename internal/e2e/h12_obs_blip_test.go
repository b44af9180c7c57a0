package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestH12ObsDatabaseLinesNameTheCall: the warn and error lines a call logs
// while its database is away (its outcome not stored, its unknown outcome
// not recorded) name its call ID, tool and action, as the line saying the
// outcome is unknown does: an operator reading one of them alone knows
// which tool's call it was.
func TestH12ObsDatabaseLinesNameTheCall(t *testing.T) {
	e := setupBlip(t, false)
	mark := len(e.a.LogText())
	body := callBody(e.id, "/slow/long?ms=400", map[string]any{"op": "h12"})
	ch := postAsync(e.a.URL, e.a.Key, body, "h12-blip")
	testserver.Eventually(t, 5*time.Second, "the call to reach the tool", func() bool { return e.tool.count("/slow") == 1 })
	e.px.setCut(true)
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatal("no answer while the database was down")
	}
	e.px.setCut(false)
	seen := map[string]bool{}
	for _, l := range obsLinesSince(t, e.a, mark) {
		if (l["level"] != "WARN" && l["level"] != "ERROR") || l["call_id"] == nil {
			continue
		}
		msg, _ := l["msg"].(string)
		seen[msg] = true
		if l["tool"] != float64(e.id) || l["action"] != "post" {
			t.Errorf("a %v line of call %v without its tool %d and action post: %v", l["level"], l["call_id"], e.id, l)
		}
	}
	if !seen["storing a call outcome failed; retrying while the call holds its lease"] {
		t.Errorf("no line said storing the outcome failed; lines with a call ID: %v\n%s", seen, grepLines(e.a.LogText()[mark:], "call_id"))
	}
	for _, s := range []string{e.a.Key, "h12"} {
		if strings.Contains(e.a.LogText(), `"`+s+`"`) {
			t.Errorf("the log names %q", s)
		}
	}
}
