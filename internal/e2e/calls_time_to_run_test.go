package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestCallNotStartedWithoutTimeToFinish: a dispatched call runs to its end
// (its lease) whatever the request's own bound says, so a call whose
// getting ready used up most of that bound (here its tool's actions took
// 7.5 s to list, of a 19 s bound, with a 9 s lease) is not started: 503
// unavailable, nothing sent, the key free. Otherwise the request would
// outlive its bound, which a stop's drain counts on. The retry finds the
// listing cached and runs.
func TestCallNotStartedWithoutTimeToFinish(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{Postgres: true,
		Env: map[string]string{"QUIVER_CALL_TIMEOUT": "8s", "QUIVER_LEASE_GRACE": "1s"}}) // lease 9 s, bound 19 s
	var sends atomic.Int64
	var slowList atomic.Bool
	up := mcp.NewServer(&mcp.Implementation{Name: "slowlist", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "send", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sends.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"sent":true}`}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if slowList.Load() && bytes.Contains(body, []byte(`"tools/list"`)) {
				time.Sleep(7500 * time.Millisecond)
			}
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	id := mqConnect(t, srv, "slowlist", map[string]any{"url": hs.URL})
	slowList.Store(true)

	start := time.Now()
	r := mqCall(srv, id, "send", map[string]any{}, "k-late")
	m := mqWant(t, r, 503, "unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After on the 503")
	}
	t.Logf("answered in %v: %s", time.Since(start).Round(time.Millisecond), m["message"])
	if n := sends.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	if k := srv.Do("GET", "/api/v1/idempotency-keys/k-late", nil); k.Status != 404 {
		t.Errorf("key after the refusal: %d %s, want 404 (never reserved)", k.Status, k.Body)
	}
	if r := mqCall(srv, id, "send", map[string]any{}, "k-late"); r.Status != 200 || sends.Load() != 1 {
		t.Fatalf("the retry: %d %s, %d sends; want it run once, its actions listed by now", r.Status, r.Body, sends.Load())
	}
}
