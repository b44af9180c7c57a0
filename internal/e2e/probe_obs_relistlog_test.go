package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeObsRelistLogLine: the line logged when a call naming an action
// missing from an MCP tool's cached list cannot read the list again carries
// the request ID of the call that began the re-read. Before, it was logged
// without its context, at info: a line of a request without the request's
// ID.
func TestProbeObsRelistLogLine(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "info", "QUIVER_MCP_RELIST_INTERVAL": "100ms"}})
	var failList atomic.Bool
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if failList.Load() && bytes.Contains(body, []byte(`"tools/list"`)) {
				http.Error(w, "listing is down", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	mqWantStatus(t, mqCall(srv, id, "read_count", nil, ""), 200)
	failList.Store(true)
	const msg = "mcp tool list could not be re-read"
	var ids []string
	testserver.Eventually(t, 10*time.Second, "a failed re-list logged", func() bool {
		r := mqCall(srv, id, "not_listed", nil, "")
		ids = append(ids, r.Header.Get("X-Request-Id"))
		return strings.Contains(srv.LogText(), msg)
	})
	for _, l := range strings.Split(srv.LogText(), "\n") {
		if !strings.Contains(l, msg) {
			continue
		}
		ok := false
		for _, id := range ids {
			ok = ok || strings.Contains(l, `"request_id":"`+id+`"`)
		}
		if !ok {
			t.Errorf("the line does not carry the ID of a call that read the list again: %s", l)
		}
	}
}
