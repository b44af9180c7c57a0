package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeCallBatchSameIDEachAnswered: a JSON-RPC batch (protocol
// 2025-03-26, which has batches) holding two tools/call requests with the
// same ID gets an answer for each member, as the agent endpoint promises
// ("in a batch each member is answered on its own"): the first runs, the
// second is -32600 with its ID and runs nothing. Before, the SDK ran the
// first and dropped the second unanswered.
func TestProbeCallBatchSameIDEachAnswered(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	_, endpoint := mqaAgent(t, srv, id)
	call := func(key string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"counter__increment","arguments":{"idempotency_key":%q}}}`, key)
	}
	batch := []byte("[" + call("probe-batch-a") + "," + call("probe-batch-b") + "]")
	r := srv.Do("POST", endpoint[len(srv.URL):], batch,
		"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-03-26")
	var answers []struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if r.Status != 200 || json.Unmarshal(r.Body, &answers) != nil {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	ran, refused := 0, 0
	for _, a := range answers {
		switch {
		case string(a.ID) != "7":
			t.Errorf("an answer with ID %s: %s", a.ID, r.Body)
		case a.Result != nil && !a.Result.IsError:
			ran++
		case a.Error != nil && a.Error.Code == -32600:
			refused++
		}
	}
	if len(answers) != 2 || ran != 1 || refused != 1 {
		t.Errorf("batch answered %s; want one result and one -32600, both with ID 7", r.Body)
	}
	if n := counter.Calls("increment"); n != 1 {
		t.Errorf("increment ran %d times, want 1", n)
	}
}
