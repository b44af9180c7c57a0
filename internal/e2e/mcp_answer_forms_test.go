package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAnswerForms: through the call endpoint, a non-retryable call to a
// server that writes its answer's ID back as a double (as servers keeping
// IDs as doubles do) is the tool's result, not an unknown outcome; its
// structured content keeps every digit; and a retry replays it without a
// second call.
func TestMCPAnswerForms(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	upstream := mcptest.StartHandWritten(t, &mcptest.HandWritten{Answer: func(id string) (string, string) {
		n, _ := strconv.ParseInt(id, 10, 64)
		return "application/json", `{"jsonrpc":"2.0","id":` + strconv.FormatFloat(float64(n), 'E', -1, 64) +
			`,"result":{"content":[{"type":"text","text":"prose"}],"structuredContent":{"n":12345678901234567890,"a":1}}}`
	}})
	id := mqConnect(t, srv, "hand", map[string]any{"url": upstream.URL})
	first := mqCall(srv, id, "act", nil, "forms-1")
	if first.Status != 200 || !strings.Contains(string(first.Body), `"is_error":false,"result":{"n":12345678901234567890,"a":1}`) {
		t.Fatalf("call: %d %s", first.Status, first.Body)
	}
	again := mqCall(srv, id, "act", nil, "forms-1")
	if again.Status != 200 || string(again.Body) != string(first.Body) || upstream.Calls() != 1 {
		t.Fatalf("retry: %d %s (the server had %d calls)", again.Status, again.Body, upstream.Calls())
	}
}
